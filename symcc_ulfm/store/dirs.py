"""Directories of the state: created with an exact mode, never through another user's link; removed.

Directories are created with ``mkdir`` and then ``chmod`` to exactly the mode asked for (never
the umask's), and their entry is made durable now or at a barrier (``store.durability``).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ..errors import StoreError, UnsafeFile
from .durability import Barrier, settle


def ensure_dir(path: Path, mode: int, barrier: Barrier | None = None) -> Path:
    """Create ``path`` (and parents) with exactly ``mode``; an existing directory is kept as it is.

    Inside a set-group-ID directory (a state directory shared by several Unix users through a
    group) the new directory keeps the set-group-ID bit, so everything below it stays in the
    shared group. A symbolic link where ``path`` belongs is refused (UnsafeFile), never followed.
    """
    path = Path(path)
    try:
        if not _is_dir(path):
            parent = path.parent
            if parent != path and not _parent_is_dir(parent):
                ensure_dir(parent, mode, barrier)
            try:
                os.mkdir(path, mode)
                os.chmod(path, mode | (os.stat(parent).st_mode & stat.S_ISGID), follow_symlinks=False)
                settle(path, barrier)
            except FileExistsError:
                if not _is_dir(path):
                    raise
        return path
    except OSError as exc:
        raise StoreError(f"cannot create directory {path}: {exc.strerror or exc}") from exc


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a directory; a symbolic link in its place is refused, never followed."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        raise UnsafeFile(f"{path} is a symbolic link where a directory belongs; refusing to follow it")
    return stat.S_ISDIR(mode)


def _parent_is_dir(path: Path) -> bool:
    """Whether the directory a new one is made in exists; a symbolic link there is followed only
    when this user or root made it (another user's link would aim our writes elsewhere)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode) and info.st_uid not in (os.geteuid(), 0):
        raise UnsafeFile(f"{path} is a symbolic link of uid {info.st_uid}; refusing to follow it")
    return path.is_dir()


def remove_dir(path: Path) -> None:
    """Remove a directory tree (never through a symbolic link: ``shutil.rmtree`` walks it by
    descriptors and refuses a link at the top); a missing one is fine."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot remove {path}: {exc.strerror or exc}") from exc


def clear_dir(path: Path, mode: int) -> Path:
    """An empty directory ``path`` with ``mode``: what was left in it before is removed."""
    remove_dir(path)
    return ensure_dir(path, mode)
