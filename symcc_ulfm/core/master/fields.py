"""The state of one master's generation, declared once (the base of :class:`.machine.MasterState`).

The master's transitions are split over :class:`.machine.MasterState` and its parts
:class:`.start.StartPhase` and :class:`.rounds.CommitRounds`; each reads and writes state that the
others change too. :class:`MasterFields` holds all of it, typed and commented in one place, with
what every transition uses to answer (``_emit``, ``_ask``, ``_log``) and, as abstract methods, the
transitions of the machine that its parts call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import TYPE_CHECKING

from . import events as ev
from .frontier import Frontier
from .steps import After, Step

if TYPE_CHECKING:
    from .machine import MasterConfig
    from .rounds import Outstanding, Round
    from .start import Recovery


class MasterFields(ABC):
    """What the master of one generation holds between two events."""

    def __init__(self, config: MasterConfig):
        self.config = config
        self.gen = config.generation
        self.frontier = Frontier(config.me, config.masters, config.generation, config.limit)
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
