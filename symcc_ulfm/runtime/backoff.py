"""How a polling loop waits between polls when nothing happened (every role loop polls)."""

from __future__ import annotations

import os
import time

MIN_SLEEP_S = 50e-6
MAX_SLEEP_S = 2e-3
LONG_SLEEP_S = 50e-3
LONG_IDLE_S = 1.0
HOT_ROUNDS = 200


class Backoff:
    """Wait between polls: yield for a short hot window after progress, then sleep longer each
    idle round, up to ``MAX_SLEEP_S``, and up to ``LONG_SLEEP_S`` once idle for ``LONG_IDLE_S``.

    Right after a RESULT or a WORK the answer usually comes within milliseconds, so the first
    idle rounds only ``sched_yield`` (when the host has a core per rank: oversubscribed, the
    yield loop would steal the workers' CPU); a rank with nothing to do for a second (a warm
    spare, a worker with no work) polls 20 times a second and uses almost no CPU.
    """

    def __init__(self, hot_rounds: int = HOT_ROUNDS):
        self.hot_rounds = hot_rounds
        self.reset()

    def idle(self) -> None:
        self.rounds += 1
        if self.rounds <= self.hot_rounds:
            os.sched_yield()
            return
        now = time.monotonic()
        if self.idle_since is None:
            self.idle_since = now
        cap = LONG_SLEEP_S if now - self.idle_since >= LONG_IDLE_S else MAX_SLEEP_S
        self.delay = min(self.delay * 2, cap)
        time.sleep(self.delay)

    def reset(self) -> None:
        self.rounds = 0
        self.delay = MIN_SLEEP_S / 2
        self.idle_since = None

def hot_rounds_for(local_ranks: int, cores: int) -> int:
    """A :class:`Backoff`'s hot rounds: hot polling only when every rank on this host can have a
    core of its own."""
    return HOT_ROUNDS if local_ranks <= cores else 0
