"""What one rank knows during a campaign, apart from its communicators: identity, policy,
stores, membership, deadline, executor. The role loops (``runtime``) need no more;
``mpi.context.RankContext`` adds the communicators."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

from ..core.afl_diversity import position
from ..core.budget import epoch_deadline
from ..core.canonical import digest
from ..core.deadlines import Deadlines
from ..core.membership import Membership
from ..core.policy import Policy
from ..errors import PolicyError
from ..executors import (
    Target,
    at_position,
    create,
    is_fuzzer,
    keeps_running_between_slices,
    varies_by_position,
)
from ..store.corpus import Corpus
from ..store.deadline_file import read_deadlines
from ..store.dirs import clear_dir, ensure_dir, remove_dir
from ..store.identity import kind_sha256, require_same
from ..store.joblock import RanksLock
from ..store.paths import StateDir
from ..store.runlog import RankLog
from ..store.snapshots import SnapshotStore
from ..store.wal import WorkWAL
from .backoff import HOT_ROUNDS
from .injection import Injector


@dataclass
class HeldExecutor:
    """An executor or a fuzzer a rank runs: its kind, the options it was built with, the corpus
    objects it was offered (a fuzzer), and whether its identity was checked against the
    campaign's (before its first execution)."""

    kind: str
    executor: Target | None  # None while paused (``RankState.pause_lent``)
    options: dict | None = None
    offered: set[str] = field(default_factory=set)
    checked: bool = False


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
    _own: HeldExecutor | None = field(default=None, repr=False)  # the executor of its current kind
    _lent: HeldExecutor | None = field(default=None, repr=False)  # the fuzzer it runs while it has nothing to analyze
    _kind_shas: dict[str, str] = field(default_factory=dict)

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
    def lent_kind(self) -> str | None:
        """The fuzzer kind whose slices an analysis worker runs while it has nothing to analyze
        (``Policy.idle``): the first fuzzer kind of the worker slots; None: it waits."""
        if self.policy.idle != "fuzz":
            return None
        return next((kind for kind in self.policy.slots if is_fuzzer(kind)), None)

    def held(self, kind: str) -> HeldExecutor:
        """The executor that runs work of ``kind``. The rank's own is of its current kind (contained
        when it runs target code), kept across generations while the kind stays; a rank whose slot
        changes kind starts the other one afresh. A fuzzer whose settings vary by its position
        (:meth:`_options`) is started again on its directory when a generation moves it. For an analysis worker given a slice of
        ``lent_kind``, that fuzzer, started in ``lent-<kind>/`` of its scratch and kept there: after
        :meth:`pause_lent` it is started again on that directory (afl-fuzz resumes it and knows what
        it was offered), so it is offered only what is new. The rank's own executor writes in
        ``own/`` beside it: the targets it runs cannot write the lent fuzzer's directory."""
        own = self.kind
        options = self._options(own, lent=False)
        if self._own is not None and self._own.kind != own:
            self.close_executor()
        if self._own is not None and self._own.options != options:  # its position moved (a new generation):
            self._own.executor.close()  # started again with its new settings, on the same directory
            scratch = ensure_dir(self.state.worker_scratch(self.stable) / "own", self.state.modes.snapshot_dir)
            self._own.executor = create(own, self.policy.target, options, scratch, self.policy.isolation)
            self._own.options, self._own.checked = options, False
        if self._own is None:
            scratch = clear_dir(self.state.worker_scratch(self.stable) / "own", self.state.modes.snapshot_dir)
            self._own = HeldExecutor(own, create(own, self.policy.target, options, scratch, self.policy.isolation),
                                     options)
        if kind == own:
            return self._own
        if kind != self.lent_kind or is_fuzzer(own):
            raise PolicyError("idle", f"worker {self.stable} ({own}) was given work of {kind!r}: only an analysis "
                                      f"worker runs slices of another kind, the idle kind {self.lent_kind!r}")
        options = self._options(kind, lent=True)
        if self._lent is None:
            self._lent = HeldExecutor(kind, None, options)
        if self._lent.options != options and self._lent.executor is not None:  # its position moved (a new
            self._lent.executor.close()                                           # generation): started again
            self._lent.executor = None
        self._lent.options = options
        if self._lent.executor is None:  # lent for the first time, or again after a pause
            scratch = ensure_dir(self.state.worker_scratch(self.stable) / f"lent-{kind}", self.state.modes.snapshot_dir)
            self._lent.executor = create(kind, self.policy.target, options, scratch, self.policy.isolation)
            self._lent.checked = False
        return self._lent

    def _options(self, kind: str, lent: bool) -> dict:
        """The executor options of this worker's executor of ``kind`` (``lent``: the fuzzer it is
        lent to): the campaign's, with the instance's position among the campaign's fuzzers of
        ``kind`` in this generation for a kind whose settings vary by it (``core.afl_diversity``)."""
        if not varies_by_position(kind):
            return self.policy.executor_options
        lender = self.policy.executor if self.lent_kind == kind else None
        return at_position(kind, self.policy.executor_options,
                           position(self.membership.layout, self.stable, kind, lender, lent))

    def pause_lent(self) -> None:
        """Before this analysis worker analyzes again: stop the fuzzer it was lent to if that one
        runs on between slices (``afl``: its sandbox and afl-fuzz end, the directory stays and the
        next slice resumes it), so that the two never share the worker's core."""
        lent = self._lent
        if lent is not None and lent.executor is not None and keeps_running_between_slices(lent.kind):
            lent.executor.close()
            lent.executor = None

    def clear_failed_scratch(self) -> None:
        """The lowest live rank removes what failed ranks' executions left in their scratch."""
        if self.stable == min(self.membership.live):
            for rank in self.membership.failed:
                remove_dir(self.state.worker_scratch(rank))

    def check_executor(self, held: HeldExecutor) -> None:
        """Before its first execution: an executor must be the one the campaign was prepared with."""
        if not held.checked:
            require_same(self.state.executor, digest(held.executor.identity()), f"rank {self.stable}'s executor",
                         self._recorded_kind(held.kind))
            held.checked = True

    def close_executor(self) -> None:
        """Close every executor this rank runs (its own kind's and a lent fuzzer)."""
        for held in (self._lent, self._own):
            if held is not None and held.executor is not None:
                held.executor.close()
        self._own = self._lent = None

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
