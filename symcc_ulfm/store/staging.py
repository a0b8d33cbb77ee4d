"""Worker staging: candidates wait here, in the worker's own directory, until a master commits.

Staged paths travel in RESULT messages and manifests as ``staging/worker-<w>/<lease>@<sha>``;
:func:`parse_staged` accepts nothing else, and readers open every component with
``O_NOFOLLOW`` relative to its parent (no ``..``, no absolute path, no symlink anywhere on the
way).

The lease is part of the file name, not a directory of its own: a directory per lease would
cost an inode allocation and an inode free per commit, and on ext4 without a journal every
inode freed in the last half minute is skipped, one by one, by each later allocation
(``recently_deleted`` in ``fs/ext4/ialloc.c``), which slows every file creation of a busy
campaign. A staged file itself is never freed when its record commits: it becomes the corpus
object (a link).

A worker also notes in ``running-<g>`` which lease it is executing in generation g (one file per
generation, rewritten in place, never synced: it must outlive the worker's process, not the
machine), so that after its death a master can tell the lease it was running from those it only
held (:mod:`symcc_ulfm.core.master.poison`).

Both sides keep directory descriptors open (the worker its own directory, the committing master
the workers' directories), so a staged object costs a system call or two on a name inside an
open directory instead of a walk from the state root.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path

from ..core.limits import MAX_OBJECT_BYTES
from ..errors import IntegrityError, StoreError
from .dirs import ensure_dir
from .durability import Barrier
from .paths import StateDir
from .reads import check_regular, read_bytes, read_to_end

_STAGED = re.compile(r"staging/worker-([0-9]+)/([A-Za-z0-9._:-]{1,128})@([0-9a-f]{64})")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
_MARK_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | _CLOEXEC
KEEP_LIMIT = 256  # verified staged files a reader keeps open for their publication
RUNNING_WIDTH = 160  # bytes of a running marker: a lease token (at most 128) padded with spaces


def staged_name(worker: int, lease: str, sha256: str) -> str:
    return f"staging/worker-{worker}/{staged_file(lease, sha256)}"


def staged_file(lease: str, sha256: str) -> str:
    """The staged object's name inside its worker's directory."""
    return f"{lease}@{sha256}"


def running_file(generation: int) -> str:
    return f"running-{generation}"


def read_running(state_root: Path, worker: int, generation: int) -> str | None:
    """The lease worker ``worker`` was executing when it last wrote its marker of ``generation``."""
    path = StateDir(state_root).worker_staging(worker) / running_file(generation)
    try:
        token = read_bytes(path, limit=RUNNING_WIDTH).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    return token or None


def parse_staged(relpath: str) -> tuple[int, str, str]:
    """Validate a staged path from a message or manifest; returns (worker, lease, sha256)."""
    match = _STAGED.fullmatch(relpath) if isinstance(relpath, str) else None
    if not match:
        raise IntegrityError(f"staged path {relpath!r} is not staging/worker-<w>/<lease>@<sha256>")
    return int(match[1]), match[2], match[3]


class WorkerStaging:
    """The writing side: one worker's directory."""

    def __init__(self, state_root: Path, worker: int, file_mode: int, dir_mode: int, barrier: Barrier | None = None):
        self.state_root = Path(state_root)
        self.worker = worker
        self.file_mode = file_mode
        self.barrier = barrier
        self.root = ensure_dir(StateDir(self.state_root).worker_staging(worker), dir_mode)
        self._fd = [os.open(self.root, _DIR_FLAGS)]
        self._running: int | None = None
        weakref.finalize(self, _close_fds, self._fd)

    def close(self) -> None:
        _close_fds(self._fd)

    def mark_running(self, generation: int, lease: str | None) -> None:
        """Note the lease being executed now (None: none), before it starts and after it ends."""
        if self._running is None:
            try:
                self._running = os.open(running_file(generation), _MARK_FLAGS, self.file_mode, dir_fd=self._fd[0])
            except OSError as exc:
                raise StoreError(f"cannot open {self.root}/{running_file(generation)}: {exc.strerror or exc}") from exc
            self._fd.append(self._running)
        text = (lease or "").ljust(RUNNING_WIDTH).encode("ascii")
        try:
            os.pwrite(self._running, text[:RUNNING_WIDTH], 0)
        except OSError as exc:
            raise StoreError(f"cannot write the running marker of worker {self.worker}: {exc.strerror or exc}") from exc

    def stage(self, lease: str, data: bytes) -> tuple[str, str]:
        """Write one candidate; returns (sha256, staged relative path).

        The file is created under its final name (create-exclusive: nothing else ever has that
        name, a lease is run once, by one worker); a failed write removes it again. With a
        barrier the write is not synced here: the master's barrier (``syncfs`` of the same file
        system) makes it durable before any manifest names it, and a worker on another host
        syncs its own barrier before it sends the RESULT.
        """
        sha256 = hashlib.sha256(data).hexdigest()
        relpath = staged_name(self.worker, lease, sha256)
        parse_staged(relpath)
        name = staged_file(lease, sha256)
        directory = self._fd[0]
        try:
            fd = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=directory)
        except FileExistsError:
            read_staged(self.state_root, relpath, sha256, len(data))  # the same candidate twice: must be intact
            return sha256, relpath
        except OSError as exc:
            raise StoreError(f"cannot stage {relpath}: {exc.strerror or exc}") from exc
        try:
            os.fchmod(fd, self.file_mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.barrier is None:
                os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=directory)
            raise StoreError(f"cannot stage {relpath}: {exc.strerror or exc}") from exc
        finally:
            os.close(fd)
        if self.barrier is None:
            os.fsync(directory)
        else:
            self.barrier.dirty = True
        return sha256, relpath

    def discard(self, lease: str, sha256s: list[str]) -> None:
        """Remove candidates of ``lease`` that no RESULT will name (e.g. cut to fit a message)."""
        for sha256 in sha256s:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged_file(lease, sha256), dir_fd=self._fd[0])


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


@dataclass
class Staged:
    """A staged file verified against its manifest entry, still open: ``data`` is its content."""

    relpath: str
    sha256: str
    fd: int
    data: bytes
    info: os.stat_result | None = None  # its fstat when it was handed over for publication


class StagedReader:
    """The committing side: staged objects opened without following a symbolic link, verified,
    and kept open from verification to publication.

    The master verifies a RESULT's objects before it writes their manifest and publishes them a
    round later; :meth:`take` hands the kept file over only if it still has a name and still
    holds exactly the verified bytes (one ``fstat`` and one ``pread``), and otherwise opens and
    verifies the staged name again, so a staged file changed, replaced or removed after its
    manifest was written is still refused. Workers' directories are opened once.
    """

    def __init__(self, state_root: Path, keep_limit: int = KEEP_LIMIT):
        self.state_root = Path(state_root)
        self.keep_limit = keep_limit
        self._dirs: dict[object, int] = {}
        self._kept: dict[str, Staged] = {}
        weakref.finalize(self, _close_all, self._dirs, self._kept)

    def close(self) -> None:
        _close_all(self._dirs, self._kept)

    def read(self, relpath: str, sha256: str, length: int) -> bytes:
        """The staged candidate's bytes, checked to be exactly the object the manifest names."""
        staged = self.verify(relpath, sha256, length)
        os.close(staged.fd)
        return staged.data

    def verify(self, relpath: str, sha256: str, length: int) -> Staged:
        """Open and check one staged object; the caller owns the returned descriptor."""
        worker, lease, name = parse_staged(relpath)
        if name != sha256:
            raise IntegrityError(f"staged path {relpath} does not name object {sha256}")
        if not 0 <= length <= MAX_OBJECT_BYTES:
            raise IntegrityError(f"staged {relpath}: a length of {length} bytes is outside 0..{MAX_OBJECT_BYTES}")
        fd = _open_at(self.worker_dir(worker, relpath), staged_file(lease, name), _FILE_FLAGS, relpath)
        try:
            # the type and size first: a directory, a FIFO or a sparse giant is refused unread
            info = os.fstat(fd)
            check_regular(info, relpath, MAX_OBJECT_BYTES)
            if info.st_size != length:
                raise IntegrityError(f"staged {relpath} has {info.st_size} bytes, manifest says {length}")
            data = read_to_end(fd, length, limit=length + 1)
            if len(data) != length:
                raise IntegrityError(f"staged {relpath} has {len(data)} bytes, manifest says {length}")
            actual = hashlib.sha256(data).hexdigest()
            if actual != sha256:
                raise IntegrityError(f"staged {relpath} has SHA-256 {actual}, manifest says {sha256}")
        except OSError as exc:
            os.close(fd)
            raise IntegrityError(f"cannot read staged {relpath}: {exc.strerror or exc}") from exc
        except BaseException:
            os.close(fd)
            raise
        return Staged(relpath, sha256, fd, data)

    def verify_all(self, objects: list[tuple[str, str, int]]) -> list[Staged]:
        """:meth:`verify` of ``(relpath, sha256, length)`` objects, all or none."""
        out: list[Staged] = []
        try:
            for relpath, sha256, length in objects:
                out.append(self.verify(relpath, sha256, length))
        except BaseException:
            for staged in out:
                os.close(staged.fd)
            raise
        return out

    def keep(self, staged: list[Staged]) -> None:
        """Keep verified files open for :meth:`take` (closed instead beyond ``keep_limit``)."""
        for item in staged:
            old = self._kept.pop(item.relpath, None)
            if old is not None:
                os.close(old.fd)
            if len(self._kept) < self.keep_limit:
                self._kept[item.relpath] = item
            else:
                os.close(item.fd)

    def take(self, relpath: str, sha256: str, length: int) -> Staged:
        """The staged object to publish, verified (see the class docstring); the caller closes it."""
        kept = self._kept.pop(relpath, None)
        if kept is not None:
            try:
                kept.info = os.fstat(kept.fd)
                unchanged = (kept.sha256 == sha256 and len(kept.data) == length and kept.info.st_nlink > 0
                             and os.pread(kept.fd, length + 1, 0) == kept.data)
            except OSError:
                unchanged = False
            if unchanged:
                return kept
            os.close(kept.fd)
        return self.verify(relpath, sha256, length)

    def worker_dir(self, worker: int, relpath: str) -> int:
        """``staging/worker-<w>``, opened (once) without following a symbolic link."""
        fd = self._dirs.get(worker)
        if fd is None:
            staging = self._dirs.get("staging")
            if staging is None:
                root = _open_at(None, str(self.state_root), _DIR_FLAGS, relpath)
                try:
                    staging = self._dirs["staging"] = _open_at(root, "staging", _DIR_FLAGS, relpath)
                finally:
                    os.close(root)
            fd = self._dirs[worker] = _open_at(staging, f"worker-{worker}", _DIR_FLAGS, relpath)
        return fd

    def remove_lease(self, worker: int, lease: str, names: list[str]) -> None:
        """Delete the staged objects ``names`` of one lease after its record is done (those
        already gone are fine; a missing worker directory has nothing left to remove)."""
        relpath = staged_name(worker, lease, "0" * 64)
        parse_staged(relpath)
        try:
            directory = self.worker_dir(worker, relpath)
        except IntegrityError as exc:
            if isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.ENOENT:
                return
            raise
        for name in names:
            try:
                os.unlink(staged_file(lease, name), dir_fd=directory)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StoreError(f"cannot remove {staged_name(worker, lease, name)}: {exc.strerror or exc}") from exc


def _close_all(dirs: dict[object, int], kept: dict[str, Staged]) -> None:
    _close_fds([*dirs.values(), *(staged.fd for staged in kept.values())])
    dirs.clear()
    kept.clear()


def _open_at(directory: int | None, name: str, flags: int, relpath: str) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        raise _staged_error(relpath, exc) from exc


def read_staged(state_root: Path, relpath: str, sha256: str, length: int) -> bytes:
    """Read a staged candidate and check that it is exactly the object the manifest names."""
    reader = StagedReader(state_root)
    try:
        return reader.read(relpath, sha256, length)
    finally:
        reader.close()


def _staged_error(relpath: str, exc: OSError) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return IntegrityError(f"staged path {relpath} goes through a symbolic link or non-directory; refused")
    if exc.errno == errno.ENOENT:
        return IntegrityError(f"staged object {relpath} is missing")
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EISDIR, errno.ETXTBSY):
        return IntegrityError(f"staged object {relpath} is not a regular file; refused")
    return StoreError(f"cannot read staged {relpath}: {exc.strerror or exc}")
