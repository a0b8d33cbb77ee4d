"""Seal a run directory: ``SHA256SUMS.txt`` over every other file, in ``sha256sum -c`` format,
then remove its ``INCOMPLETE`` mark (``evidence.rundir``): the run is complete once sealed.

Lines are ``<sha256>  <relative path>``, sorted by path, paths relative to the run directory
with ``/`` separators. Sealing refuses what ``sha256sum -c`` could not check faithfully or
what would let a file escape the list: symlinks, special files, and names with characters
that sha256sum would escape (newline, backslash) or that are not printable. A ``security/``
directory (an ipyparallel profile's keys) is refused too: keys are never sealed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ..errors import EvidenceTampered
from .rundir import INCOMPLETE_NAME, SUMS_NAME

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _check_name(rel: str) -> None:
    if any(c in rel for c in "\n\r\\") or not rel.isprintable():
        raise EvidenceTampered(f"{rel!r}: a file name sha256sum would escape; cannot seal it")
    if "security" in rel.split("/"):
        raise EvidenceTampered(f"{rel}: looks like an ipyparallel profile's keys; they never belong in a run")


def sealed_files(run_dir: Path) -> list[str]:
    """Relative paths of every regular file of the run except the seal itself and the
    ``INCOMPLETE`` mark the seal removes, sorted."""
    files = []
    for dirpath, dirnames, filenames in os.walk(run_dir):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(run_dir).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise EvidenceTampered(f"{rel}: a symlink; a sealed run holds regular files only")
            if name in filenames:
                if not stat.S_ISREG(mode):
                    raise EvidenceTampered(f"{rel}: not a regular file")
                _check_name(rel)
                if rel not in (SUMS_NAME, INCOMPLETE_NAME):
                    files.append(rel)
    return sorted(files)


def seal(run_dir: str | Path) -> dict:
    """Write (or rewrite) ``SHA256SUMS.txt``, then remove ``INCOMPLETE``; returns ``{"files": N, "sums": path}``."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir} is not a directory")
    files = sealed_files(run_dir)
    text = "".join(f"{file_sha256(run_dir / rel)}  {rel}\n" for rel in files)
    sums = run_dir / SUMS_NAME
    tmp = sums.with_name(f".{SUMS_NAME}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, sums)
    (run_dir / INCOMPLETE_NAME).unlink(missing_ok=True)
    directory = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)  # the seal and the mark's removal are durable together
    finally:
        os.close(directory)
    return {"files": len(files), "sums": str(sums)}
