"""Atomic file writes with explicit modes: replace, create-only, and create-only links.

A write goes to a temporary file in the destination directory, gets its mode with ``fchmod``
(never the umask), is ``fsync``ed, then renamed (replace) or hard-linked (create-only) into
place, and the directory is ``fsync``ed; given a :class:`~.durability.Barrier`, the
``fsync``s wait for its group commit. Every failure raises :class:`StoreError`; a
create-only write that finds the name taken returns ``False`` so the caller can compare.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from ..errors import StoreError
from .durability import Barrier, settle
from .paths import TEMP_PREFIX


def _write_temp(directory: Path | str, name: str, data: bytes, mode: int, sync: bool = True) -> str:
    temp = os.path.join(directory, f"{TEMP_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(temp)
        raise
    os.close(fd)
    return temp


def write_replace(path: Path, data: bytes, mode: int, barrier: Barrier | None = None) -> None:
    """Atomically create or replace ``path`` with ``data`` (durable now, or at ``barrier.sync()``)."""
    path = Path(path)
    try:
        temp = _write_temp(path.parent, path.name, data, mode, barrier is None)
        try:
            os.rename(temp, path)
        except BaseException:
            _unlink_quietly(temp)
            raise
        settle(path, barrier)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_new(path: Path | str, data: bytes, mode: int, barrier: Barrier | None = None) -> bool:
    """Atomically create ``path`` only if absent: True when this call created it."""
    directory, name = os.path.split(path)
    try:
        temp = _write_temp(directory, name, data, mode, barrier is None)
        try:
            os.link(temp, path)
            created = True
        except FileExistsError:
            created = False
        finally:
            _unlink_quietly(temp)
        settle(path, barrier)
        return created
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror or exc}") from exc


def link_new(source: Path | str, path: Path | str, barrier: Barrier | None = None) -> bool:
    """Give the complete file ``source`` the second name ``path`` only if absent: True when this
    call made it. No new inode and no copy (``source`` must already be durable, or made durable
    by the same barrier); both names must be on one file system."""
    try:
        try:
            os.link(source, path, follow_symlinks=False)
            created = True
        except FileExistsError:
            created = False
        settle(path, barrier)
        return created
    except OSError as exc:
        raise StoreError(f"cannot link {path} to {source}: {exc.strerror or exc}") from exc


def link_open_file(fd: int, path: Path | str, barrier: Barrier | None = None) -> bool | None:
    """Give the open regular file ``fd`` the name ``path`` only if absent (True when this call
    made it), through ``/proc/self/fd``: exactly the inode the caller opened and checked, not
    whatever its old name points to now. None when this system cannot (no ``/proc``, another
    file system, not permitted): the caller writes a copy instead."""
    try:
        if barrier is None:
            os.fsync(fd)
        fds = _proc_fds()
        if fds is None:
            return None
        try:
            # linkat(fds, "<fd>", AT_SYMLINK_FOLLOW): a plain link() would link the magic link itself
            os.link(str(fd), path, src_dir_fd=fds, follow_symlinks=True)
            created = True
        except FileExistsError:
            created = False
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EXDEV, errno.EPERM, errno.EACCES, errno.ENOTSUP):
                return None
            raise
        settle(path, barrier)
        return created
    except OSError as exc:
        raise StoreError(f"cannot link {path}: {exc.strerror or exc}") from exc


_PROC_FDS: list[int] = []  # this process's open /proc/self/fd (a child of fork opens its own)


def _proc_fds() -> int | None:
    if not _PROC_FDS:
        try:
            _PROC_FDS.append(os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)))
        except OSError:
            return None
    return _PROC_FDS[0]


def _forget_proc_fds() -> None:
    """After fork the inherited descriptor still names the parent's descriptor table."""
    for fd in _PROC_FDS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _PROC_FDS.clear()


os.register_at_fork(after_in_child=_forget_proc_fds)


def _unlink_quietly(path: Path | str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
