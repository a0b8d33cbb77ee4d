"""A rank's heartbeat: the time it was last alive, rewritten in place about twice a second.

When a whole job is lost, the next job charges the deadline budget with what the lost job
used: from its epoch's start to its last sign of life. Log lines alone are no such sign (an
idle campaign logs nothing for seconds), so every rank also keeps ``logs/heartbeat-<stable>``:
one fixed-width line holding a wall time, rewritten in place (no new inode, no rename) by a
daemon thread every ``INTERVAL_S``. Like a worker's running marker it must outlive the process,
not the machine, so it is never synced. The heartbeat of a job starts only after the job has
opened its epoch, so a new job never overwrites a beat before it has been read.

A beat that cannot be written stops the heartbeat (the rank's own log and store writes report
a failing disk); the budget charged after a loss is then bounded by the log, as before.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ..errors import StoreError
from .paths import HEARTBEAT, numbered
from .reads import check_regular
from .runlog import last_event_time

INTERVAL_S = 0.5
WIDTH = 32
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class Heartbeat:
    def __init__(self, path: Path, mode: int, interval_s: float = INTERVAL_S):
        self.path = Path(path)
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self._fd = os.open(self.path, _WRITE_FLAGS, mode)
            check_regular(os.fstat(self._fd), self.path, WIDTH)
        except OSError as exc:
            raise StoreError(f"cannot open heartbeat {self.path}: {exc.strerror or exc}") from exc
        self.beat()

    def beat(self) -> None:
        os.pwrite(self._fd, f"{time.time():.6f}".ljust(WIDTH - 1).encode() + b"\n", 0)

    def start(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {self.path.name}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
            except OSError:
                return

    def stop(self) -> None:
        """Stop beating (the last beat stays in the file) and close it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval_s)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def last_sign_of_life(logs_dir: Path, before: float) -> float | None:
    """The latest time before ``before`` at which a rank was seen alive: its last log line or
    heartbeat, whichever is later (what a resume charges a lost job up to)."""
    signs = [t for t in (last_event_time(logs_dir, before), last_heartbeat(logs_dir, before)) if t is not None]
    return max(signs, default=None)


def last_heartbeat(logs_dir: Path, before: float) -> float | None:
    """The latest beat before ``before`` of any rank (a special or oversized file raises UnsafeFile)."""
    latest = None
    for path in numbered(Path(logs_dir), HEARTBEAT).values():
        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError as exc:
            raise StoreError(f"cannot read heartbeat {path}: {exc.strerror or exc}") from exc
        try:
            check_regular(os.fstat(fd), path, WIDTH)
            text = os.read(fd, WIDTH)
        finally:
            os.close(fd)
        try:
            t = float(text.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            continue  # a beat cut short: the log bounds the budget instead
        if t < before:
            latest = t if latest is None else max(latest, t)
    return latest
