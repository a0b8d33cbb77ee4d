"""Who runs a campaign on a state directory: one launch at a time, and whether ranks still live.

Two ``flock`` locks, both released by the kernel when their holder dies, so a crashed launch
or job never blocks a resume:

``launch.lock``
    held exclusively by ``launch`` (or a matrix cell) from before it reads the state until it
    has judged it: a second launch or resume is refused, naming the holder, which the lock
    file records (pid, host, start time).
``ranks.lock``
    held shared by every rank for as long as it may write the state. ``launch`` takes it
    exclusively, with a bound, before it starts a job (ranks of an earlier job must be gone)
    and after ``mpiexec`` returns (ranks can outlive it by a second and keep committing): the
    verdict is taken only once every rank of the job is gone.

The lock files are opened with ``O_NOFOLLOW`` and ``O_CLOEXEC``: the executor sandboxes that
ranks start never hold a rank's lock.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import time
from pathlib import Path

from ..errors import ConfigError, StoreError, UnsafeFile
from .paths import StateDir
from .reads import MODE_HINT

NOTE_WAIT_S = 0.5  # how long a refused launch waits for the holder's note (written right after its lock)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_POLL_S = 0.05


def open_state_file(path: Path, flags: int, mode: int, what: str) -> tuple[int, os.stat_result]:
    """Open (creating it with ``mode``) a file of the state directory, never through a link:
    the descriptor and its status. A link is a ConfigError, anything but a regular file an
    UnsafeFile; a file this user owns gets ``mode`` (``O_CREAT`` applies the umask)."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError("state_dir", f"{path} is a symbolic link; refusing to follow it") from None
        hint = f"; {MODE_HINT}" if exc.errno == errno.EACCES else ""
        raise StoreError(f"cannot open {what} {path}: {exc.strerror or exc}{hint}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafeFile(f"{path} is not a regular file")
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode:
        os.fchmod(fd, mode)
    return fd, info


def _open(path: Path, mode: int) -> int:
    return open_state_file(path, os.O_RDWR, mode, "lock")[0]


def _try(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot lock: {exc.strerror or exc}") from exc


def _holder(fd: int) -> str:
    """The note of the launch holding the lock; it writes it just after it took the lock, so an
    empty note is read again for up to :data:`NOTE_WAIT_S` before the holder is left unnamed."""
    deadline = time.monotonic() + NOTE_WAIT_S
    while True:
        note = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
        if note or time.monotonic() >= deadline:
            return note or "another process"
        time.sleep(0.01)


class OwnerLock:
    """``launch``'s exclusive hold of a state directory (see the module docstring)."""

    def __init__(self, root: Path, mode: int):
        self.path = StateDir(root).launch_lock
        self._fd = _open(self.path, mode)
        if not _try(self._fd, fcntl.LOCK_EX):
            holder = _holder(self._fd)
            os.close(self._fd)
            self._fd = -1
            raise ConfigError("state_dir", f"{Path(root)} is in use by {holder} ({self.path}); wait for it to "
                                           "end, or stop it (--resume continues the campaign afterwards)")
        note = f"symcc-ulfm launch, pid {os.getpid()} on {socket.gethostname()}, since {time.strftime('%FT%TZ', time.gmtime())}"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, note.encode() + b"\n", 0)

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the only descriptor of the open file releases the lock
            self._fd = -1


class RanksLock:
    """A rank's shared hold of ``ranks.lock``; waits at most ``timeout_s`` for a judging launch."""

    def __init__(self, root: Path, mode: int, timeout_s: float):
        self.path = StateDir(root).ranks_lock
        self._fd = _open(self.path, mode)
        deadline = time.monotonic() + timeout_s
        while not _try(self._fd, fcntl.LOCK_SH):
            if time.monotonic() >= deadline:
                os.close(self._fd)
                raise StoreError(f"{self.path} is held exclusively (a launch judging this state) after "
                                 f"{timeout_s:.0f} s; not starting a rank on it")
            time.sleep(_POLL_S)

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class RanksProbe:
    """Whether ranks hold ``ranks.lock`` now, asked without waiting (an open lock file, reused)."""

    def __init__(self, root: Path, mode: int):
        self._fd = _open(StateDir(root).ranks_lock, mode)

    def held(self) -> bool:
        if not _try(self._fd, fcntl.LOCK_EX):
            return True
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def ranks_gone(root: Path, mode: int, timeout_s: float) -> list[int]:
    """Wait at most ``timeout_s`` until no rank holds ``ranks.lock``; the pids still holding it
    ([] when every rank is gone, or their pids are not visible here)."""
    path = StateDir(root).ranks_lock
    fd = _open(path, mode)
    try:
        deadline = time.monotonic() + timeout_s
        while not _try(fd, fcntl.LOCK_EX):
            if time.monotonic() >= deadline:
                return holders(path) or [-1]
            time.sleep(_POLL_S)
        return []
    finally:
        os.close(fd)


def running(root: Path) -> str | None:
    """Who runs a campaign on ``root`` now, from ``/proc/locks`` (no lock taken, nothing written:
    the state may be a sealed run's): None when neither lock file is held."""
    state = StateDir(root)
    launch, ranks = holders(state.launch_lock), holders(state.ranks_lock)
    if not launch and not ranks:
        return None
    note = ""
    if launch:
        fd = os.open(state.launch_lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
        try:
            note = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
        finally:
            os.close(fd)
    who = note or (f"launch pid {launch[0]}" if launch else f"ranks (pids {', '.join(map(str, ranks[:8]))})")
    return f"{root} is in use by {who}: the campaign is running"


def holders(path: Path) -> list[int]:
    """Pids holding a ``flock`` on ``path`` (from ``/proc/locks``; [] where it cannot be read)."""
    try:
        info = os.stat(path, follow_symlinks=False)
        key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            rows = handle.read().splitlines()
    except OSError:
        return []
    pids = set()
    for row in rows:
        fields = row.split()
        # "1: FLOCK  ADVISORY  READ 1234 08:01:5678 0 EOF" (a blocked waiter is listed after "->")
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
            try:
                pids.add(int(fields[4]))
            except ValueError:
                continue
    return sorted(p for p in pids if p > 0)
