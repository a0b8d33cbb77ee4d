"""Structured per-rank logs: one JSON object per line (time, generation, stable rank, event).

One process writes a rank's log at a time. A line is appended with one ``write``; a write cut
short (a full disk) is taken back (the file is truncated to where the line began) and raises
:class:`StoreError`, so the log never holds half a line followed by a whole one. A log whose
last line has no newline (a write the process did not live to finish or take back) gets that
fragment dropped when it is opened again, as a torn WAL append is; readers ignore such a tail.

Repetitive events a peer can provoke (a flood of rejected messages) go through
:meth:`RankLog.limited`: at most ``BURST`` lines per second per key, the rest counted and
reported with the next line logged for that key.

This module owns the format: the line (``t``, ``generation``, ``rank``, ``event``, fields),
the names of the events other modules read (:class:`Event`) and the reader (:class:`LogFollower`,
:func:`read_log`, :func:`read_events`) of the files ``logs/rank-<stable>.jsonl`` (named by
``store.paths``). The oracle keeps a reader of its own (``evidence.oracle.log_checks``), so that a
bug here cannot hide in the checker.
"""

from __future__ import annotations

import json
import os
import time
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .paths import RANK_LOG
from .reads import check_regular

BURST = 20  # lines per key and second that RankLog.limited writes
_WINDOW_S = 1.0
_TAIL_CHUNK = 64 << 10
_LOG_LIMIT = 1 << 62  # a log is never read whole: its size only bounds where a tail search begins
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
LOG_GLOB = RANK_LOG.format("*")


class Event(StrEnum):
    """Events that modules other than their writer read (a misspelt name fails at import)."""

    STARTUP = "startup"  # pid, host: a rank's process is up
    GENERATION_START = "generation-start"  # role, seconds (of the re-split): work of a generation may begin
    COMMIT = "commit"  # a work item's results are published (the master that committed them)
    INJECT = "inject"  # phase, spec, how: this rank dies now (an injected failure)
    CORPUS_READ_VERIFIED = "corpus-read-verified"  # sha256, length: a worker read an input back and checked it
    RECOVERY_START = "recovery-start"  # cause, error_class: this rank enters recovery
    RECOVERY_DONE = "recovery-done"  # missing, steps (seconds per step): the next generation is committed
    MASTER_READY = "master-ready"  # replayed, reclaimed, seconds: a master replayed the WAL and may lease
    FIRST_WORK = "first-work"  # worker: a master's first lease of a generation
    # hybrid campaigns only (worker kinds): when a worker took up an input another kind found
    LEASE_START = "lease-start"  # input_hash: an analysis worker begins a lease
    OFFERED = "offered"  # inputs (SHA-256s, at most 256), count, kind: a fuzzer (kind) of this worker was handed them
    FUZZER_STARTED = "fuzzer-started"  # kind, started, settings: a fuzzer process of this worker started (afl-fuzz)


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
    for path in Path(logs_dir).glob(LOG_GLOB):
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


class LogFollower:
    """Incremental reader of a directory of rank logs: complete lines only, each line once.

    A line not yet terminated (being written, or torn) waits for a later :meth:`poll`; a line
    that is not a JSON object is skipped. A log that is not a regular file raises StoreError.
    """

    def __init__(self, logs_dir: str | Path):
        self.logs = Path(logs_dir)
        self._offsets: dict[Path, int] = {}

    def poll(self) -> list[dict[str, Any]]:
        """The events written since the last call, log by log."""
        events: list[dict[str, Any]] = []
        for path in sorted(self.logs.glob(LOG_GLOB)) if self.logs.is_dir() else []:
            offset = self._offsets.get(path, 0)
            chunk = _read_from(path, offset)
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._offsets[path] = offset + len(complete)
            events += _parse(complete)
        return events


def read_log(path: Path) -> list[dict[str, Any]]:
    """The complete events of one rank log, in the order written (none when it does not exist)."""
    if not Path(path).exists():
        return []
    data = _read_from(Path(path), 0)
    return _parse(data[: data.rfind(b"\n") + 1])


def read_events(logs_dir: str | Path, event: Event | None = None) -> list[dict[str, Any]]:
    """Every complete event of every rank log in ``logs_dir`` (only ``event`` when given), by time."""
    rows = [row for row in LogFollower(logs_dir).poll() if event is None or row.get("event") == event]
    return sorted(rows, key=lambda row: (row.get("t", 0.0), row.get("rank", 0)))


def _read_from(path: Path, offset: int) -> bytes:
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise StoreError(f"cannot read log {path}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        check_regular(info, path, _LOG_LIMIT)
        size = info.st_size
        chunks = []
        while offset < size:
            chunk = os.pread(fd, min(size - offset, 1 << 20), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise StoreError(f"cannot read log {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _parse(complete: bytes) -> list[dict[str, Any]]:
    rows = []
    for line in complete.splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
