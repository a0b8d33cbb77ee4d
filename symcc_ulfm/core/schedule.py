"""Failure schedules: ``G:R[@PHASE][!]``, comma separated (DESIGN.md §7).

``0:2,1:3`` kills stable rank 2 in generation 0 and stable rank 3 in generation 1. PHASE is
where the victim dies:

``work``     (default) a worker holding a lease, before it sends RESULT; a master right after
             it has dispatched work
``commit``   a master between writing a manifest (``committing``) and marking it ``done``
``recovery`` in the discovery of the recovery that leads to generation G+1, once its allgather
             completed and before its agreement
``idle``     a warm spare waiting for promotion

A trailing ``!`` kills with SIGKILL instead of ``os._exit(86)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from ..errors import ScheduleError


class Phase(StrEnum):
    """The injection points: where in its generation a scheduled victim dies (see the module docstring)."""

    WORK = "work"
    COMMIT = "commit"
    RECOVERY = "recovery"
    IDLE = "idle"


PHASES = tuple(Phase)
INJECTED_EXIT_CODE = 86
_EVENT = re.compile(r"(?P<generation>[0-9]{1,9}):(?P<rank>[0-9]{1,9})(?:@(?P<phase>[a-z]+))?(?P<kill>!)?")
_FORM = "comma-separated G:R[@work|commit|recovery|idle][!], e.g. 0:2,1:3 or 0:4@commit!"


@dataclass(frozen=True, order=True)
class FailureEvent:
    generation: int
    rank: int
    phase: str = Phase.WORK
    sigkill: bool = False

    def __str__(self) -> str:
        phase = "" if self.phase == Phase.WORK else f"@{self.phase}"
        return f"{self.generation}:{self.rank}{phase}{'!' if self.sigkill else ''}"

    def to_json(self) -> dict:
        return {"generation": self.generation, "rank": self.rank, "phase": self.phase, "sigkill": self.sigkill}

    @classmethod
    def from_json(cls, value: dict) -> FailureEvent:
        if not isinstance(value, dict) or set(value) != {"generation", "rank", "phase", "sigkill"}:
            raise ScheduleError("failure_schedule", f"malformed event {value!r}")
        event = cls(value["generation"], value["rank"], value["phase"], value["sigkill"])
        if (
            type(event.generation) is not int
            or type(event.rank) is not int
            or event.generation < 0
            or event.rank < 0
            or event.phase not in PHASES
            or type(event.sigkill) is not bool
        ):
            raise ScheduleError("failure_schedule", f"malformed event {value!r}")
        return event


def parse_schedule(text: str) -> tuple[FailureEvent, ...]:
    """Parse a schedule string; ``""`` means no injected failures."""
    if not isinstance(text, str):
        raise ScheduleError("failure_schedule", f"expected a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        return ()
    events = []
    for part in stripped.split(","):
        item = part.strip()
        match = _EVENT.fullmatch(item)
        if not match:
            shown = item if len(item) <= 40 else f"{item[:40]}... ({len(item)} characters)"
            raise ScheduleError("failure_schedule", f"{shown!r} is not an event (numbers have at most 9 digits); "
                                                    f"expected {_FORM}")
        phase = match["phase"] or Phase.WORK
        if phase not in PHASES:
            raise ScheduleError(
                "failure_schedule", f"{item!r}: unknown phase {phase!r}; expected one of {', '.join(PHASES)}"
            )
        events.append(FailureEvent(int(match["generation"]), int(match["rank"]), str(phase), bool(match["kill"])))
    if len(set((e.generation, e.rank) for e in events)) != len(events):
        raise ScheduleError("failure_schedule", f"{text!r} names the same rank twice in one generation")
    return tuple(sorted(events))


def format_schedule(events: tuple[FailureEvent, ...]) -> str:
    return ",".join(str(e) for e in events)
