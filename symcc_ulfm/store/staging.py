"""Worker staging: candidates wait here, under the worker's own directory, until a master commits.

Staged paths travel in RESULT messages and manifests as ``staging/worker-<w>/<lease>/<sha>``;
:func:`read_staged` accepts nothing else (no ``..``, no absolute path, no symlink anywhere on
the way: every component is opened with ``O_NOFOLLOW`` relative to its parent).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from ..errors import IntegrityError, StoreError
from .atomic import Barrier, ensure_dir, write_new

_STAGED = re.compile(r"staging/worker-([0-9]+)/([A-Za-z0-9._:-]{1,128})/([0-9a-f]{64})")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def staged_name(worker: int, lease: str, sha256: str) -> str:
    return f"staging/worker-{worker}/{lease}/{sha256}"


def parse_staged(relpath: str) -> tuple[int, str, str]:
    """Validate a staged path from a message or manifest; returns (worker, lease, sha256)."""
    match = _STAGED.fullmatch(relpath) if isinstance(relpath, str) else None
    if not match or match[2] in (".", ".."):
        raise IntegrityError(f"staged path {relpath!r} is not staging/worker-<w>/<lease>/<sha256>")
    return int(match[1]), match[2], match[3]


class WorkerStaging:
    """The writing side: one worker's directory."""

    def __init__(self, state_root: Path, worker: int, file_mode: int, dir_mode: int, barrier: Barrier | None = None):
        self.state_root = Path(state_root)
        self.worker = worker
        self.file_mode = file_mode
        self.dir_mode = dir_mode
        self.barrier = barrier
        self.root = ensure_dir(self.state_root / "staging" / f"worker-{worker}", dir_mode)

    def stage(self, lease: str, data: bytes) -> tuple[str, str]:
        """Write one candidate; returns (sha256, staged relative path).

        With a barrier the write is not synced here: the master's barrier (``syncfs`` of the
        same file system) makes it durable before any manifest names it, and a worker on
        another host syncs its own barrier before it sends the RESULT.
        """
        sha256 = hashlib.sha256(data).hexdigest()
        directory = ensure_dir(self.root / lease, self.dir_mode, self.barrier)
        if not write_new(directory / sha256, data, self.file_mode, self.barrier):
            existing = read_staged(self.state_root, staged_name(self.worker, lease, sha256), sha256, len(data))
            if existing != data:
                raise IntegrityError(f"staged {sha256} exists with other content")
        return sha256, staged_name(self.worker, lease, sha256)


def read_staged(state_root: Path, relpath: str, sha256: str, length: int) -> bytes:
    """Read a staged candidate and check that it is exactly the object the manifest names."""
    _require_named(relpath, sha256)
    with open_staged(state_root, relpath) as fd:
        return staged_content(fd, relpath, sha256, length)


@contextlib.contextmanager
def open_staged(state_root: Path, relpath: str) -> Iterator[int]:
    """The staged file, opened read-only without following a symbolic link anywhere on the way."""
    parse_staged(relpath)
    parts = relpath.split("/")
    fd = os.open(state_root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _staged_error(relpath, exc) from exc
            os.close(fd)
            fd = nxt
        try:
            file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise _staged_error(relpath, exc) from exc
    finally:
        os.close(fd)
    try:
        yield file_fd
    finally:
        os.close(file_fd)


def staged_content(fd: int, relpath: str, sha256: str, length: int) -> bytes:
    """The bytes of the open staged file ``fd``, checked against the manifest's name and length."""
    _require_named(relpath, sha256)
    data = _read_limited(fd, length + 1)
    if len(data) != length:
        raise IntegrityError(f"staged {relpath} has {len(data)} bytes, manifest says {length}")
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise IntegrityError(f"staged {relpath} has SHA-256 {actual}, manifest says {sha256}")
    return data


def _require_named(relpath: str, sha256: str) -> None:
    if parse_staged(relpath)[2] != sha256:
        raise IntegrityError(f"staged path {relpath} does not name object {sha256}")


def _read_limited(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _staged_error(relpath: str, exc: OSError) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return IntegrityError(f"staged path {relpath} goes through a symbolic link or non-directory; refused")
    if exc.errno == errno.ENOENT:
        return IntegrityError(f"staged object {relpath} is missing")
    return StoreError(f"cannot read staged {relpath}: {exc.strerror or exc}")


def remove_lease_dir(state_root: Path, worker: int, lease: str, names: list[str] | None = None) -> None:
    """Delete one lease's staging directory after its record is done.

    ``names`` (the manifest's objects) are unlinked directly; anything else a worker left in
    the directory is removed with it.
    """
    parse_staged(staged_name(worker, lease, "0" * 64))
    path = Path(state_root) / "staging" / f"worker-{worker}" / lease
    if path.is_symlink() or path.parent.is_symlink():
        raise IntegrityError(f"staging directory {path} goes through a symbolic link; refused")
    try:
        for name in names or ():
            try:
                os.unlink(path / name)
            except FileNotFoundError:
                pass
        try:
            os.rmdir(path)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            shutil.rmtree(path)
    except OSError as exc:
        raise StoreError(f"cannot remove {path}: {exc.strerror or exc}") from exc
