"""What one rank knows during a campaign, apart from its communicators: identity, policy,
stores, membership, deadline, executor. The role loops (``runtime``) need no more;
``mpi.context.RankContext`` adds the communicators."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

from ..core.budget import epoch_deadline
from ..core.canonical import digest
from ..core.deadlines import Deadlines
from ..core.membership import Membership
from ..core.policy import Policy
from ..executors import Executor, create
from ..store.corpus import Corpus
from ..store.deadline_file import read_deadlines
from ..store.dirs import clear_dir, remove_dir
from ..store.identity import kind_sha256, require_same
from ..store.joblock import RanksLock
from ..store.paths import StateDir
from ..store.runlog import RankLog
from ..store.snapshots import SnapshotStore
from ..store.wal import WorkWAL
from .backoff import HOT_ROUNDS
from .injection import Injector


@dataclass
class RankState:
    stable: int
    policy: Policy
    state: StateDir
    log: RankLog
    injector: Injector  # the failure schedule's points of this rank
    membership: Membership | None = None
    peers: list[dict] = field(default_factory=list)  # per stable rank: host and pid (for fencing)
    opened_at: float = field(default_factory=time.time)  # before this process wrote any log line
    ranks_lock: RanksLock | None = None  # this rank's share of ranks.lock (store.joblock), held for its life
    hot_rounds: int = HOT_ROUNDS  # of every Backoff of this rank (backoff.hot_rounds_for)
    _executor: Executor | None = field(default=None, repr=False)
    _executor_kind: str | None = None  # the kind _executor runs
    _kind_shas: dict[str, str] = field(default_factory=dict)
    offered: set[str] = field(default_factory=set)  # corpus objects the executor (a fuzzer) was offered
    _executor_checked: bool = False

    @property
    def generation(self) -> int:
        return self.membership.generation if self.membership else 0

    @cached_property
    def deadlines(self) -> Deadlines:
        """The campaign's deadline in each epoch (``core.deadlines``), read once: ``launch`` writes
        an extension before the job starts."""
        return read_deadlines(self.state, self.policy)

    @property
    def deadline(self) -> float:
        """Wall time at which this epoch ends; never extended by recovery (``core.budget``)."""
        m = self.membership
        return epoch_deadline(m.epoch_started_at, m.consumed_s, self.deadlines.of_epoch(m.epoch))

    def remaining(self) -> float:
        return self.deadline - time.time()

    @cached_property
    def snapshots(self) -> SnapshotStore:
        return SnapshotStore(self.state.membership, self.state.modes.snapshot)

    @cached_property
    def corpus(self) -> Corpus:
        return Corpus(self.state.corpus, self.state.modes.corpus, self.state.modes.snapshot)

    @cached_property
    def wal(self) -> WorkWAL:
        return WorkWAL(self.state.wal, self.state.root, self.corpus, self.state.modes.snapshot,
                       self.policy.timeouts.recovery_step_s)

    @property
    def kind(self) -> str:
        """The kind of worker this rank is in the current generation (``core.kinds``)."""
        return self.membership.layout.kind_of(self.stable) or self.policy.executor

    @property
    def executor(self) -> Executor:
        """This rank's executor of its current kind (contained when it runs target code), kept across
        generations while the kind stays; a rank whose slot changes kind starts the other one afresh."""
        kind = self.kind
        if self._executor is not None and self._executor_kind != kind:
            self.close_executor()
        if self._executor is None:
            scratch = self.state.worker_scratch(self.stable)
            clear_dir(scratch, self.state.modes.snapshot_dir)
            self._executor = create(kind, self.policy.target, self.policy.executor_options, scratch,
                                    self.policy.isolation)
            self._executor_kind, self._executor_checked, self.offered = kind, False, set()
        return self._executor

    def clear_failed_scratch(self) -> None:
        """The lowest live rank removes what failed ranks' executions left in their scratch."""
        if self.stable == min(self.membership.live):
            for rank in self.membership.failed:
                remove_dir(self.state.worker_scratch(rank))

    def check_executor(self) -> None:
        """Before the first execution: the executor must be the one the campaign was prepared with."""
        if not self._executor_checked:
            require_same(self.state.executor, digest(self.executor.identity()), f"rank {self.stable}'s executor",
                         self._recorded_kind(self._executor_kind))
            self._executor_checked = True

    def close_executor(self) -> None:
        if self._executor is not None:
            self._executor.close()
            self._executor = None

    @property
    def executor_sha(self) -> str:
        """The campaign's executor identity digest (``executor.json``, written by launch)."""
        return self.executor_sha_of(self.policy.executor)

    def executor_sha_of(self, kind: str) -> str:
        """The identity digest the work of worker kind ``kind`` is hashed with."""
        if kind not in self._kind_shas:
            self._kind_shas[kind] = kind_sha256(self.state.executor, self._recorded_kind(kind))
        return self._kind_shas[kind]

    def _recorded_kind(self, kind: str | None) -> str | None:
        """How ``executor.json`` names a kind: the executor's own identity is the unnamed one."""
        return None if kind in (None, self.policy.executor) else kind

    def set_generation(self, membership: Membership) -> None:
        self.membership = membership
        self.log.generation = membership.generation
