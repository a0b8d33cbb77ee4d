"""What ``launch`` shows and records while its job runs: called by the supervising loop
(``launch.job``) between its looks at the job, never from a thread of its own.

Every ``every_s`` it reads the campaign's status from the durable files (``tools.status``),
rewrites ``stats/fuzzer_stats`` and ``stats/plot_data`` (``tools.stats_files``), and, when a terminal is watching
(``line`` set: stderr is a tty and ``--json`` was not given), redraws one status line in place.
A status that cannot be read or written does not stop the job: it is reported once as a note
and not tried again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from ..errors import SymccUlfmError
from ..store.paths import StateDir
from ..tools.stats_files import StatsWriter
from ..tools.status import Tracker
from ..tools.status_views import render_line

EVERY_S = 2.0


class LaunchProgress:
    def __init__(self, state: StateDir, command_line: str, line: bool, stream: TextIO = sys.stderr,
                 every_s: float = EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.line, self.stream, self.every_s, self.clock = line, stream, every_s, clock
        self.tracker = Tracker(state.root, state.modes)
        self.writer = StatsWriter(self.tracker, command_line)
        self.error: str | None = None
        self._last: float | None = None
        self._drawn = False

    def __call__(self) -> None:
        now = self.clock()
        if self.error is None and (self._last is None or now - self._last >= self.every_s):
            self._last = now
            self._update(final=False)

    def finish(self) -> None:
        """After the job: the last status (recorded, and the line ended)."""
        if self.error is None:
            self._update(final=True)
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def _update(self, final: bool) -> None:
        try:
            snapshot = self.tracker.poll(job_running=not final)
            self.writer.write(snapshot, final=final)
        except (SymccUlfmError, OSError, ValueError, KeyError) as exc:
            self.error = f"live status stopped: {exc}"
            return
        if self.line:
            self.stream.write("\r\x1b[K" + render_line(snapshot))
            self.stream.flush()
            self._drawn = True
