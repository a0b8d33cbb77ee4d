"""Per-record exclusive locks (``flock``) with a bounded wait."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError


@contextlib.contextmanager
def exclusive(path: Path, mode: int, timeout_s: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created with ``mode``); waits at most ``timeout_s``."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
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
        deadline = time.monotonic() + timeout_s
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreError(f"lock {path} still held after {timeout_s:.1f} s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
