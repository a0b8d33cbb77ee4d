"""Exclusive locks with a bounded wait: a whole lock file (``flock``), or one byte of it.

A byte lock is an open-file-description lock (``F_OFD_SETLK``) on one byte of a shared lock
file: many records share one file instead of a lock file (an inode) each, and, like ``flock``,
it belongs to the open file, so two acquisitions conflict even within one process and a dead
process releases it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError

_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
BYTE_KEYS = 1 << 62  # byte offsets a key may take (off_t is signed 64-bit)


def _lock(fd: int, byte: int | None, lock: bool) -> None:
    if byte is None:
        fcntl.flock(fd, (fcntl.LOCK_EX | fcntl.LOCK_NB) if lock else fcntl.LOCK_UN)
    else:
        # struct flock: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padding
        kind = fcntl.F_WRLCK if lock else fcntl.F_UNLCK
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, byte, 1, 0))


@contextlib.contextmanager
def exclusive(path: Path, mode: int, timeout_s: float, byte: int | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created with ``mode``), or on its byte ``byte`` only;
    waits at most ``timeout_s``."""
    if byte is not None and not 0 <= byte < BYTE_KEYS:
        raise StoreError(f"lock byte {byte} is outside 0..2^62")
    try:
        fd = os.open(path, _OPEN_FLAGS, mode)
    except OSError as exc:
        raise StoreError(f"cannot open lock {path}: {exc.strerror or exc}") from exc
    try:
        # O_CREAT applies the umask; give a lock file we own the contract's mode, so that ranks
        # sharing a group-readable state directory (0660) can all open it.
        info = os.fstat(fd)
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode:
            try:
                os.fchmod(fd, mode)
            except OSError as exc:
                raise StoreError(f"cannot set the mode of lock {path}: {exc.strerror or exc}") from exc
        what = str(path) if byte is None else f"{path} (byte {byte})"
        deadline = time.monotonic() + timeout_s
        delay = 0.0005
        while True:
            try:
                _lock(fd, byte, True)
                break
            except (BlockingIOError, PermissionError):  # EAGAIN/EACCES: held elsewhere
                if time.monotonic() >= deadline:
                    raise StoreError(f"lock {what} still held after {timeout_s:.1f} s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)
            except OSError as exc:
                raise StoreError(f"cannot lock {what}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            _lock(fd, byte, False)
    finally:
        os.close(fd)
