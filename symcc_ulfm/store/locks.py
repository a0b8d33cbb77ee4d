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


class LockFile:
    """An open lock file: the whole file or its bytes are the locks.

    The file stays open, so taking a lock costs one ``fcntl`` instead of an open, a stat and a
    close. All acquisitions through one LockFile share its open file description: they do not
    exclude each other, so a process takes a given lock through one LockFile at a time (the
    WAL's record batches run one after another); separate LockFiles, in this process or
    another, exclude each other.
    """

    def __init__(self, path: Path, mode: int):
        self.path = Path(path)
        try:
            self.fd = os.open(self.path, _OPEN_FLAGS, mode)
        except OSError as exc:
            raise StoreError(f"cannot open lock {self.path}: {exc.strerror or exc}") from exc
        try:
            # O_CREAT applies the umask; give a lock file we own the contract's mode, so that ranks
            # sharing a group-readable state directory (0660) can all open it.
            info = os.fstat(self.fd)
            if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode:
                os.fchmod(self.fd, mode)
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot set the mode of lock {self.path}: {exc.strerror or exc}") from exc

    @contextlib.contextmanager
    def hold(self, timeout_s: float, byte: int | None = None) -> Iterator[None]:
        """Hold the whole file's lock, or byte ``byte``'s only; waits at most ``timeout_s``."""
        if byte is not None and not 0 <= byte < BYTE_KEYS:
            raise StoreError(f"lock byte {byte} is outside 0..2^62")
        what = str(self.path) if byte is None else f"{self.path} (byte {byte})"
        deadline = time.monotonic() + timeout_s
        delay = 0.0005
        while True:
            try:
                _lock(self.fd, byte, True)
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
            _lock(self.fd, byte, False)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@contextlib.contextmanager
def exclusive(path: Path, mode: int, timeout_s: float, byte: int | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created with ``mode``), or on its byte ``byte`` only;
    waits at most ``timeout_s``."""
    lock = LockFile(path, mode)
    try:
        with lock.hold(timeout_s, byte):
            yield
    finally:
        lock.close()
