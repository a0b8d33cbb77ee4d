"""Running a target under ``sys.settrace``: edge coverage, a deadline and a recursion bound.

Only frames whose code comes from the target's files are traced (the global trace function
returns ``None`` for every other frame, so the engine and the standard library run at full
speed). A location is the stable hash of (file basename, qualified name, line); an edge is
AFL's ``cur ^ (prev >> 1)`` over consecutive locations, counted per run. The end of a run adds
one pseudo-location for its outcome (normal return, exception type, timeout) so that a new way
of failing is new coverage too.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

from ....core.coverage import coverage_id
from ..expressions.path import ExecTimeout, stable_id

_EDGE_MASK = (1 << 32) - 1
_CHECK_EVERY = 1024
_locations: dict[int, tuple[int, object]] = {}


def location(code, line: int) -> int:
    key = id(code) * 1_048_576 + line
    hit = _locations.get(key)
    if hit is None:
        text = f"{os.path.basename(code.co_filename)}:{code.co_qualname}:{line}"
        hit = _locations[key] = (stable_id(text, 32), code)
    return hit[0]


@dataclass
class Outcome:
    """How one traced call ended (the executor classifies it, see :func:`.run_outcome.classify`)."""

    kind: str  # "return", "exception" or "timeout"
    error: str | None = None
    value: object = None
    exc: BaseException | None = None

    @property
    def label(self) -> str:
        return self.kind if self.error is None else f"{self.kind}:{self.error}"


class Tracer:
    """One run's trace function; ``counts`` maps edge ids to hit counts when ``collect``."""

    def __init__(self, files: frozenset[str], deadline: float, collect: bool):
        self.files = files
        self.deadline = deadline
        self.collect = collect
        self.counts: dict[int, int] = {}
        self.prev = 0
        self.events = 0

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename not in self.files:
            return None
        return self._local if self.collect else self._clock

    def _tick(self) -> None:
        self.events += 1
        if self.events % _CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise ExecTimeout("target run exceeded its deadline")

    def _clock(self, frame, event, arg):
        if event == "line":
            self._tick()
        return self._clock

    def _local(self, frame, event, arg):
        if event == "line":
            self._tick()
            cur = location(frame.f_code, frame.f_lineno)
            edge = (cur ^ self.prev) & _EDGE_MASK
            self.counts[edge] = self.counts.get(edge, 0) + 1
            self.prev = cur >> 1
        return self._local

    def finish(self, outcome: Outcome) -> frozenset[int]:
        cur = stable_id(f"outcome:{outcome.label}", 32)
        edge = (cur ^ self.prev) & _EDGE_MASK
        self.counts[edge] = self.counts.get(edge, 0) + 1
        return frozenset(coverage_id(e, c) for e, c in self.counts.items())


def _depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def execute(function, argument, tracer: Tracer | None, max_frames: int) -> Outcome:
    """Call ``function(argument)`` under ``tracer`` (None: whatever trace function is set, such as
    coverage.py's, stays); target exceptions become outcomes, never propagate.

    The recursion limit is lowered to ``max_frames`` above the current depth for the call, so
    runaway recursion raises RecursionError (an ordinary outcome) without hurting the caller.
    """
    old_trace, old_limit = sys.gettrace(), sys.getrecursionlimit()
    sys.setrecursionlimit(_depth() + max_frames)
    if tracer is not None:
        sys.settrace(tracer)
    try:
        value = function(argument)
        return Outcome("return", None, value)
    except ExecTimeout as exc:
        return Outcome("timeout", None, None, exc)
    except KeyboardInterrupt as exc:
        # the sandbox child ignores SIGINT (its parent handles interrupts): there, it is the target's
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            raise
        return Outcome("exception", type(exc).__name__, None, exc)
    except BaseException as exc:  # a target may raise anything, SystemExit included
        return Outcome("exception", type(exc).__name__, None, exc)
    finally:
        if tracer is not None:
            sys.settrace(old_trace)
        sys.setrecursionlimit(old_limit)
