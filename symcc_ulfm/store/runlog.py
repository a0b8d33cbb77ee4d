"""Structured per-rank logs: one JSON object per line (time, generation, stable rank, event).

One process writes a rank's log at a time. A line is appended with one ``write``; a write cut
short (a full disk) is taken back (the file is truncated to where the line began) and raises
:class:`StoreError`, so the log never holds half a line followed by a whole one. A log whose
last line has no newline (a write the process did not live to finish or take back) gets that
fragment dropped when it is opened again, as a torn WAL append is; readers ignore such a tail.

Repetitive events a peer can provoke (a flood of rejected messages) go through
:meth:`RankLog.limited`: at most ``BURST`` lines per second per key, the rest counted and
reported with the next line logged for that key.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import StoreError
from .atomic import check_regular

BURST = 20  # lines per key and second that RankLog.limited writes
_WINDOW_S = 1.0
_TAIL_CHUNK = 64 << 10
_LOG_LIMIT = 1 << 62  # a log is never read whole: its size only bounds where a tail search begins
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class RankLog:
    def __init__(self, path: Path, stable: int, mode: int):
        self.path = Path(path)
        self.stable = stable
        self.generation = 0
        self._limits: dict[tuple[str, object], list] = {}  # key -> [window start, lines, suppressed]
        try:
            self._fd = os.open(self.path, _OPEN_FLAGS, mode)
        except OSError as exc:
            raise StoreError(f"cannot open log {self.path}: {exc.strerror or exc}") from exc
        try:
            info = os.fstat(self._fd)
            check_regular(info, self.path, _LOG_LIMIT)
            if info.st_uid == os.geteuid():
                os.fchmod(self._fd, mode)
            self._size = _drop_torn_tail(self._fd, info.st_size)
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot open log {self.path}: {exc.strerror or exc}") from exc
        except BaseException:
            self.close()
            raise

    def event(self, event: str, **fields) -> None:
        """Append one line, whole or not at all (see the module docstring)."""
        record = {"t": time.time(), "generation": self.generation, "rank": self.stable, "event": event, **fields}
        line = (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
        try:
            written = os.write(self._fd, line)
        except OSError as exc:
            raise StoreError(f"cannot write log {self.path}: {exc.strerror or exc}") from exc
        if written != len(line):
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass  # the fragment stays a torn tail: readers ignore it, the next open drops it
            raise StoreError(f"cannot write log {self.path}: a short write ({written} of {len(line)} bytes); "
                             "is the file system full?")
        self._size += written

    def limited(self, event: str, key: object, **fields) -> None:
        """:meth:`event`, at most ``BURST`` times per second for one ``(event, key)``."""
        now = time.monotonic()
        state = self._limits.setdefault((event, key), [now, 0, 0])
        if now - state[0] >= _WINDOW_S:
            state[0], state[1] = now, 0
        if state[1] >= BURST:
            state[2] += 1
            return
        state[1] += 1
        if state[2]:
            fields["suppressed"], state[2] = state[2], 0
        self.event(event, **fields)

    def flush_limited(self) -> None:
        """Log how many lines :meth:`limited` held back since the last one of each key."""
        for (event, key), state in self._limits.items():
            if state[2]:
                self.event(event, key=key if isinstance(key, (int, str)) else None, suppressed=state[2],
                           reason="rate-limited: only the count is logged")
                state[2] = 0

    def sync(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(f"cannot sync log {self.path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _drop_torn_tail(fd: int, size: int) -> int:
    """Truncate an unterminated last line away; the size of what is left."""
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return size
    keep = _last_newline(fd, size) + 1
    os.ftruncate(fd, keep)
    return keep


def _last_newline(fd: int, end: int) -> int:
    """Offset of the last newline before ``end`` (-1: none), reading backwards in chunks."""
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found
        end = start
    return -1


def last_event_time(logs_dir: Path, before: float) -> float | None:
    """The time of the latest event before ``before`` in any rank log (a job's last logged activity).

    Each log is read backwards from its end, a chunk at a time, until a line older than
    ``before`` is found: the lines of the job that is starting come last and are few.
    """
    latest = None
    for path in Path(logs_dir).glob("rank-*.jsonl"):
        t = _last_before(path, before)
        if t is not None:
            latest = t if latest is None else max(latest, t)
    return latest


def _last_before(path: Path, before: float) -> float | None:
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read log {path}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        check_regular(info, path, _LOG_LIMIT)
        end, carry = info.st_size, b""
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            lines = (os.pread(fd, end - start, start) + carry).split(b"\n")
            carry = lines.pop(0) if start else b""  # a line that may begin in the previous chunk
            for line in reversed(lines):
                t = _time_of(line)
                if t is not None and t < before:
                    return t
            end = start
        t = _time_of(carry)
        return t if t is not None and t < before else None
    except OSError as exc:
        raise StoreError(f"cannot read log {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _time_of(line: bytes) -> float | None:
    try:
        t = json.loads(line)["t"]
    except (ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None
    return float(t) if type(t) in (int, float) else None
