"""Atomic, durable file writes with explicit modes.

A write goes to a temporary file in the destination directory, gets its mode with ``fchmod``
(never the umask), is ``fsync``ed, then renamed (replace) or hard-linked (create-only) into
place, and the directory is ``fsync``ed. Every failure raises :class:`StoreError`; a
create-only write that finds the name taken returns ``False`` so the caller can compare.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

from ..core.limits import MAX_OBJECT_BYTES
from ..errors import StoreError, UnsafeFile

MODE_HINT = (
    "files are written with the modes of SYMCC_ULFM_SNAPSHOT_FILE_MODE (state) and "
    "SYMCC_SHARED_CORPUS_FILE_MODE (corpus), default 0600/0644; when ranks run as different users on a "
    "shared state directory, set them (e.g. 0660 with a shared group) so that every rank can read them"
)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


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
                _settle(path, barrier)
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


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: Path | str, name: str, data: bytes, mode: int, sync: bool = True) -> str:
    temp = os.path.join(directory, f".tmp-{name}-{os.getpid()}-{secrets.token_hex(4)}")
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


class Barrier:
    """Deferred durability for a group of writes (group commit).

    Writes given a barrier skip their own ``fsync``s; :meth:`sync` then makes all of them
    durable at once with ``syncfs`` on the state directory's file system (``os.sync`` where
    ``syncfs`` is missing). One ``syncfs`` costs about as much as two ``fsync``s and covers
    any number of files, including the workers' staged candidates on the same file system.
    """

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
        _settle(path, barrier)
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
        _settle(path, barrier)
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
        _settle(path, barrier)
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
        _settle(path, barrier)
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


def _settle(path: Path | str, barrier: Barrier | None) -> None:
    """Make the new directory entry ``path`` durable now (its directory), or at the barrier."""
    if barrier is None:
        fsync_dir(os.path.dirname(path))
    else:
        barrier.dirty = True


def read_bytes(path: Path | str, limit: int = MAX_OBJECT_BYTES) -> bytes:
    """Read a regular file of at most ``limit`` bytes, refusing anything else before reading.

    The open neither follows a symbolic link at the final component nor blocks on a FIFO; a
    link, a FIFO, a device, a directory or a file over ``limit`` is :class:`UnsafeFile` (exit 4,
    naming it). A missing file raises ``FileNotFoundError`` (callers often expect that); every
    other failure raises :class:`StoreError`.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(f"{path} is a symbolic link; refusing to follow it") from exc
        if exc.errno == errno.EACCES:
            raise StoreError(f"cannot read {path}: permission denied; {MODE_HINT}") from exc
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        check_regular(info, path, limit)
        data = read_to_end(fd, info.st_size, limit + 1)
        if len(data) > limit:
            raise UnsafeFile(f"{path} grew past the limit of {limit} bytes while it was read")
        return data
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def check_regular(info: os.stat_result, path: Path | str, limit: int) -> None:
    """Refuse (:class:`UnsafeFile`) an open file that is not a regular file of at most ``limit`` bytes."""
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{path} is not a regular file ({_kind(info.st_mode)}); refusing to read it")
    if info.st_size > limit:
        raise UnsafeFile(f"{path} has {info.st_size} bytes, more than the limit of {limit}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a special file"


def read_to_end(fd: int, expected: int, limit: int | None = None) -> bytes:
    """The rest of the open regular file ``fd`` (at most ``limit`` bytes), read in requests one
    byte larger than ``expected``: a short read of a regular file is its end, so a file of the
    expected size takes one ``read`` instead of a second one that returns nothing."""
    chunks, total = [], 0
    while limit is None or total < limit:
        want = min(max(expected - total + 1, 4096), 1 << 20)
        if limit is not None:
            want = min(want, limit - total)
        chunk = os.read(fd, want)
        chunks.append(chunk)
        total += len(chunk)
        if len(chunk) < want:
            break
    return b"".join(chunks)


def _unlink_quietly(path: Path | str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
