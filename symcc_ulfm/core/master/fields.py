"""The state of one master's generation, declared once (the base of :class:`.machine.MasterState`).

The master's transitions are split over :class:`.machine.MasterState` and its parts
:class:`.start.StartPhase` and :class:`.rounds.CommitRounds`; each reads and writes state that the
others change too. :class:`MasterFields` holds all of it, typed and commented in one place, with
what every transition uses to answer (``_emit``, ``_ask``, ``_log``) and, as abstract methods, the
transitions of the machine that its parts call. Beside it are the values that state is made of:
the :class:`MasterConfig`, a lease held (:class:`Outstanding`), the round of group commit
(:class:`Round`) and the start of the generation (:class:`Recovery`) in progress.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field

from ..envelope import Fence
from . import events as ev
from . import poison
from .frontier import Frontier
from .mix import Decision, KindYields
from .steps import After, Step


@dataclass(frozen=True)
class MasterConfig:
    me: int
    generation: int
    workers: tuple[int, ...]
    masters: tuple[int, ...]
    limit: int  # the largest message, bytes
    lease_s: float
    deadline: float
    grace_s: float  # how long a stopping master waits for outstanding results
    peers: dict[int, dict] = field(default_factory=dict)  # stable rank -> {"host", "pid"} (for fencing)
    poison_deaths: int = 2  # worker deaths that quarantine an input (core.master.poison)
    executor: str = "simulate"  # the campaign's (analysis) executor: the kind of a worker not in ``kinds``
    executor_sha: str = ""  # its identity digest: records of other identities are fuzzer slices
    kinds: dict[int, str] = field(default_factory=dict)  # worker -> its kind, where it is not the executor
    fuzzers: frozenset[str] = frozenset()  # kinds whose leases are time slices (core.slices)
    slice_s: float = 5.0
    keep: str = "all"  # "novel": only candidates that add coverage (or first hold a finding) enter the corpus
    idle_kind: str | None = None  # the fuzzer kind an analysis worker with nothing to analyze runs (None: it waits)
    mix: str = "fixed"  # "adaptive": analysis slots are lent to idle_kind by what each kind yields (core.master.mix)
    stop_after: int = 0  # results per worker in this generation that spend the budget (core.master.termination)
    order: str = "seed"  # what analysis workers get next: "seed" or "edge" order (core.master.frontier)

    def kind_of(self, worker: int) -> str:
        return self.kinds.get(worker, self.executor)

    def fuzzes(self, worker: int) -> bool:
        return self.kind_of(worker) in self.fuzzers

    def slice_kind(self, worker: int) -> str:
        """The kind of the slices ``worker`` runs: its own, or, for an analysis worker lent to
        fuzzing while it has nothing to analyze, ``idle_kind``."""
        return self.kind_of(worker) if self.fuzzes(worker) else self.idle_kind


@dataclass
class Outstanding:
    fence: Fence
    lease: dict
    priority: int
    slice: dict | None = None  # the descriptor, when the lease is a fuzzer's slice (core.slices)
    mix: dict | None = None  # the decision that lent an analysis worker this slice (core.master.mix)


@dataclass
class Round:
    """One round of group commit in progress."""

    dispatch: bool
    results: deque
    after: After  # what the stimulus that started it does next
    draining: bool = False  # a drain (publish what is pending, no new leases), not a round
    current: tuple | None = None
    staged: list[str] = field(default_factory=list)
    publishing: deque = field(default_factory=deque)
    published: list[tuple[str, list[str] | None | bool]] = field(default_factory=list)
    slots: deque = field(default_factory=deque)
    fuzzers: deque = field(default_factory=deque)  # fuzzer workers to give their next slice
    work_out: list[tuple[int, bytes]] = field(default_factory=list)
    finishing: deque = field(default_factory=deque)
    leasing: str = ""  # the input of the lease being taken
    leasing_slice: dict | None = None  # or the descriptor of the slice being leased
    lent: bool = False  # whether the idle analysis workers were added to ``fuzzers``


@dataclass
class Recovery:
    """The start of a generation in progress: replay, reclaim, quarantine, rebuild."""

    at: float
    records: tuple[dict, ...] = ()
    replays: deque | None = None  # committing records to replay; None until the first scan
    replayed: int = 0
    outgoing: list[tuple[int, bytes]] = field(default_factory=list)  # FRONTIER of the replays
    settled: set[str] = field(default_factory=set)
    lapsed: list[dict] = field(default_factory=list)
    died: dict[int, frozenset[int]] = field(default_factory=dict)  # generation -> ranks that died in it
    suspects: list[dict] = field(default_factory=list)  # lapsed records whose leases' workers died often enough
    condemned: deque = field(default_factory=deque)  # (record, strikes) to quarantine
    leased: list[tuple[dict, list[poison.Strike], dict]] = field(default_factory=list)  # (record, strikes, lease)
    quarantined: int = 0


class MasterFields(ABC):
    """What the master of one generation holds between two events."""

    def __init__(self, config: MasterConfig):
        self.config = config
        self.gen = config.generation
        self.frontier = Frontier(config.me, config.masters, config.generation, config.limit, config.order)
        self.queue = self.frontier.queue
        self.ready: set[int] = set()  # workers that sent READY
        self.outstanding: dict[int, deque[Outstanding]] = {w: deque() for w in config.workers}  # leases, in order
        self.progress_at: dict[int, float] = {}  # when each worker last made progress (for fencing)
        self.fenced: set[int] = set()
        self.waiting: list[tuple[int, dict, Outstanding]] = []  # accepted RESULTs for the next round
        self.pending: list[str] = []  # work whose manifests are durable, published in the next round
        self.unaccounted: list[dict] = []  # done records not yet durable, counted after the next barrier
        self.rejections: dict[str, int] = {}  # input -> its results rejected so far
        self.oldest = 0.0  # when the oldest waiting RESULT (or pending manifest) arrived
        self.task_s = 0.0  # how long a task takes (moving average of the workers' reports)
        self.dispatched = 0  # WORK messages sent
        self.rounds = 0
        self.syncs = 0  # the count of the last barrier
        self.stopping_since: float | None = None
        self.reason = "deadline"  # why it stops: the deadline, or what the masters decided (termination)
        self.results: dict[int, int] = {w: 0 for w in config.workers}  # committed in this generation, per worker
        self.failed = False
        self.stopped = False
        self._round: Round | None = None  # the round of group commit (or the drain) in progress
        self._draining_after = After.TICK  # what the drain in progress does when it is over
        self._slices = 0  # fuzzer slices leased by this master in this generation
        # the adaptive mix (core.master.mix): the kinds' yields, the last decision, the workers it lends
        self.yields = KindYields(config.executor, config.idle_kind) if config.mix == "adaptive" and config.idle_kind else None
        self.mix_decision: Decision | None = None
        self.mix_previous = 0  # the analysis slots lent by the last decision (restored from the WAL at the start)
        self.mix_lent: frozenset[int] = frozenset()
        self._awaiting: tuple[type, Step] | None = None  # the fact the machine waits for, and its step
        self._start: Recovery | None = None  # the start of the generation in progress
        self._seq = 0  # stimuli handled
        self._stimulus = ""  # the id of the stimulus being handled
        self._now = 0.0  # the time of the event being handled
        self._tick = 0.0  # the time of the tick being handled
        self._out: list[ev.Instruction] = []  # the instructions of the event being handled

    @property
    def committer(self) -> dict:
        return {"generation": self.gen, "master": self.config.me}

    # -- instructions out ---------------------------------------------------------------------------

    def _emit(self, instruction_type: type, *args, **fields) -> None:
        self._out.append(instruction_type(self._stimulus, *args, **fields))

    def _ask(self, instruction_type: type, step: Step, *args, **fields) -> None:
        """Emit an instruction that ends in a fact; ``step`` takes the fact."""
        self._emit(instruction_type, *args, **fields)
        self._awaiting = (instruction_type.FACT, step)

    def _log(self, event: str, **fields) -> None:
        self._emit(ev.Log, event, fields)

    def _log_limited(self, event: str, key: object, **fields) -> None:
        self._emit(ev.Log, event, fields, key)

    # -- transitions of the machine its parts go on with ---------------------------------------------

    @abstractmethod
    def _account(self, record: dict) -> list[tuple[int, bytes]]:
        """Count one durable done record; the FRONTIER messages it causes."""

    @abstractmethod
    def _account_all(self) -> None:
        """Count the done records the last barrier made durable."""

    @abstractmethod
    def _after(self, after: After) -> None:
        """Go on after a round or a drain."""

    @abstractmethod
    def _idle_fuzzers(self) -> list[int]:
        """Ready fuzzer workers without a slice."""

    @abstractmethod
    def _idle_analysts(self) -> list[int]:
        """Ready analysis workers that are lent to fuzzing."""
