"""Appending one line to a line file (the WAL's records), durable now or at a barrier."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreError
from .durability import Barrier


def append_line(path: Path | str, line: bytes, barrier: Barrier | None = None, whole: int | None = None) -> None:
    """Append one newline-terminated ``line`` to the existing line file ``path`` (durable now,
    or at ``barrier.sync()``); no new inode, no rename.

    A crash can leave the last line torn (no final newline); readers ignore such a tail, and
    this drops it before appending, so that a torn line never gets a newline of its own. The
    caller serialises appends to one file (the record lock); ``whole`` is a size at which the
    caller read the file ending with a newline, so a file of that size is not read again.
    """
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        raise StoreError(f"append to {path}: not exactly one newline-terminated line")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        try:
            size = os.fstat(fd).st_size
            if size and size != whole and os.pread(fd, 1, size - 1) != b"\n":
                os.ftruncate(fd, os.pread(fd, size, 0).rfind(b"\n") + 1)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            if barrier is None:
                os.fsync(fd)
            else:
                barrier.dirty = True
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(f"cannot append to {path}: {exc.strerror or exc}") from exc
