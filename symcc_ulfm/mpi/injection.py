"""Failure injection: a real process death at a deterministic point of the schedule.

The victim logs the injection (synced to disk, so the oracle can match it with a receipt) and
then dies by ``os._exit(86)``, or by SIGKILL for events ending in ``!``.
"""

from __future__ import annotations

import os
import signal

from ..core.schedule import INJECTED_EXIT_CODE, FailureEvent
from ..store.runlog import RankLog


class Injector:
    def __init__(self, schedule: tuple[FailureEvent, ...], stable: int, log: RankLog):
        self.mine = {(e.generation, e.phase): e for e in schedule if e.rank == stable}
        self.log = log

    def maybe(self, phase: str, generation: int) -> None:
        event = self.mine.get((generation, phase))
        if event is None:
            return
        how = "SIGKILL" if event.sigkill else f"exit {INJECTED_EXIT_CODE}"
        self.log.event("inject", phase=phase, spec=str(event), how=how)
        self.log.sync()
        if event.sigkill:
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(INJECTED_EXIT_CODE)
