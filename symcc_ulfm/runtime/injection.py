"""Failure injection: a real process death at a deterministic point of the schedule.

The victim logs the injection (synced to disk, so the oracle can match it with a receipt) and
then dies by ``os._exit(86)``, or by SIGKILL for events ending in ``!``.

An event of generation G whose point the rank never reached in G (another failure ended G
first: ``0:2,0:5`` where rank 5 dies before rank 2 holds a lease) is *overdue*: the rank dies
as it enters the recovery that ends G, before the first shrink, so every event of G is in the
receipt of G+1 and the schedule means what it says.

The points are ``core.schedule.Phase``; a point that is not one of them raises instead of
never firing.
"""

from __future__ import annotations

import os
import signal

from ..core.schedule import INJECTED_EXIT_CODE, PHASES, FailureEvent, Phase
from ..store.runlog import Event, RankLog


class Injector:
    def __init__(self, schedule: tuple[FailureEvent, ...], stable: int, log: RankLog):
        self.mine = {(e.generation, e.phase): e for e in schedule if e.rank == stable}
        self.log = log

    def maybe(self, phase: Phase, generation: int, stimulus: str | None = None) -> None:
        """Die here if the schedule names this rank at ``phase`` of ``generation``; ``stimulus``
        (logged) is the master event that reached the point."""
        if phase not in PHASES:
            raise ValueError(f"{phase!r} is not an injection point; expected one of {', '.join(PHASES)}")
        event = self.mine.get((generation, phase))
        if event is not None:
            self._die(event, phase, stimulus=stimulus)

    def overdue(self, generation: int) -> None:
        """Recovery of ``generation`` begins: an event of it that did not fire fires now."""
        for (g, phase), event in sorted(self.mine.items()):
            if g == generation and phase != Phase.RECOVERY:
                self._die(event, phase, overdue=True)

    def _die(self, event: FailureEvent, phase: str, overdue: bool = False, stimulus: str | None = None) -> None:
        how = "SIGKILL" if event.sigkill else f"exit {INJECTED_EXIT_CODE}"
        extra = {**({"overdue": True} if overdue else {}), **({"stimulus": stimulus} if stimulus else {})}
        self.log.event(Event.INJECT, phase=phase, spec=str(event), how=how, **extra)
        self.log.sync()
        if event.sigkill:
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(INJECTED_EXIT_CODE)
