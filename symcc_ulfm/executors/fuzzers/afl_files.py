"""What the ``afl`` kind reads of the files afl-fuzz writes: its queue and crash entries, its
``fuzzer_stats`` and the last line of its ``plot_data``; each opened without following a link
(afl-fuzz's directory is written by the target's fuzzer, not by us)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...core.limits import MAX_OBJECT_BYTES

PLOT_TAIL = 4096  # bytes of afl-fuzz's plot_data read for its last line


def read_entry(path: Path) -> bytes | None:
    """An entry afl-fuzz wrote: a regular file, never through a link, at most MAX_OBJECT_BYTES."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not (0 < info.st_size <= MAX_OBJECT_BYTES) or (info.st_mode & 0o170000) != 0o100000:
            return None
        return os.read(fd, info.st_size)
    finally:
        os.close(fd)


def stats_of(path: Path) -> dict[str, str]:
    """The ``key : value`` lines of afl-fuzz's ``fuzzer_stats``; empty while there is none."""
    fields = {}
    with contextlib.suppress(OSError):
        for line in (read_entry(path) or b"").decode("ascii", "replace").splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
    return fields


def count(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and len(value) <= 18 else None


def execs_done(stats: dict[str, str]) -> int | None:
    """``execs_done`` of a ``fuzzer_stats`` read whole up to the line after it (afl-fuzz rewrites the
    file in place: a torn read could end inside the number)."""
    return count(stats.get("execs_done")) if "execs_per_sec" in stats else None


def plotted_execs(path: Path, since: float) -> int | None:
    """``total_execs`` of the last whole line of afl-fuzz's ``plot_data`` (its 12th column), when
    the file changed at or after ``since``; None otherwise. Read without following a link."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            if (info.st_mode & 0o170000) != 0o100000 or info.st_mtime < since:
                return None
            tail = os.pread(fd, PLOT_TAIL, max(0, info.st_size - PLOT_TAIL))
        finally:
            os.close(fd)
        lines = tail.decode("ascii", "replace").split("\n")[:-1]  # the part after the last newline is not whole
        columns = lines[-1].split(",") if lines else []
        if len(columns) == 13:
            return count(columns[11].strip())
    return None
