"""When a write is durable: now (``fsync`` of the file and its directory) or at a group commit.

A :class:`Barrier` defers the durability of a group of writes: the writes given one skip their
own ``fsync``s, and :meth:`Barrier.sync` makes all of them durable at once with ``syncfs`` on
the state directory's file system (``os.sync`` where ``syncfs`` is missing). One ``syncfs``
costs about as much as two ``fsync``s and covers any number of files, including the workers'
staged candidates on the same file system.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from ..errors import StoreError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Barrier:
    """Deferred durability for a group of writes (group commit; see the module docstring)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.dirty = False
        self.syncs = 0
        try:
            self._fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise StoreError(f"cannot open {self.directory}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        if not self.dirty:
            return
        if _SYNCFS is None:
            os.sync()
        elif _SYNCFS(self._fd) != 0:
            err = ctypes.get_errno()
            raise StoreError(f"syncfs of {self.directory} failed: {os.strerror(err)}")
        self.dirty = False
        self.syncs += 1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _load_syncfs():
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _load_syncfs()


def settle(path: Path | str, barrier: Barrier | None) -> None:
    """Make the new directory entry ``path`` durable now (its directory), or at the barrier."""
    if barrier is None:
        fsync_dir(os.path.dirname(path) or ".")  # a bare name is in the working directory
    else:
        barrier.dirty = True
