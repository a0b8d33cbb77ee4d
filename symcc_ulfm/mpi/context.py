"""What one rank knows during a campaign (``runtime.rank_state.RankState``) and its communicators."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mpi4py import MPI

from ..core.modes import FileModes
from ..core.policy import Policy
from ..errors import ProtocolError
from ..runtime.injection import Injector
from ..runtime.rank_state import RankState
from ..store.paths import StateDir
from ..store.runlog import RankLog
from .ft import PlainOps, UlfmOps
from .requests import TAG_REVOKE, Inbox


@dataclass
class RankContext(RankState):
    ops: UlfmOps | PlainOps | None = None
    global_comm: MPI.Comm | None = None
    group_comm: MPI.Comm | None = None
    master_comm: MPI.Comm | None = None
    final_comm: MPI.Comm | None = None
    revocation: Inbox | None = None
    world_group: MPI.Group | None = None  # the initial world's group: stable rank = rank in it

    @classmethod
    def open(cls, state_root: Path, modes: FileModes, policy: Policy, stable: int, comm: MPI.Comm, ops) -> RankContext:
        state = StateDir(state_root, modes)
        log = RankLog(state.rank_log(stable), stable, modes.snapshot)
        return cls(stable, policy, state, log, Injector(policy.failure_schedule, stable, log), ops=ops,
                   global_comm=comm)

    def global_rank(self, stable: int) -> int:
        """The transport rank of ``stable`` in the current global communicator (after shrinks)."""
        return MPI.Group.Translate_ranks(self.world_group, [stable], self.global_comm.Get_group())[0]

    def post_revocation_sentinel(self) -> None:
        """One pending receive on the global communicator that only a failure or Revoke completes."""
        self.revocation = Inbox(self.global_comm, MPI.ANY_SOURCE, TAG_REVOKE, 16).post()

    def check_revocation(self) -> None:
        """Raise FailureDetected when the revocation sentinel completes with an error."""
        try:
            forged = self.revocation.test("revocation sentinel")
        except ProtocolError as exc:
            forged, reason = b"", str(exc)
        else:
            reason = "a message on the revocation-sentinel tag"
        if forged is not None:
            self.log.limited("message-rejected", None, reason=reason)
