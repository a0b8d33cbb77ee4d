"""The files a binary kind runs, pinned when the kind is built (the ``symcc`` and ``native``
executors): each one's SHA-256 goes into the kind's identity, and every run first checks that
none was replaced since (:class:`~symcc_ulfm.errors.ProvenanceChanged`), so a run is always of
the files its identity names."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from ...errors import PolicyError, ProvenanceChanged, TargetError


class Pinned:
    """Files pinned by :meth:`pin`, checked by :meth:`check` (device, inode, size, mtime)."""

    def __init__(self) -> None:
        self._stamps: dict[str, tuple[int, ...]] = {}

    def pin(self, field: str, path: Any, executable: bool = True) -> tuple[str, str, bytes]:
        """Absolute path, SHA-256 and bytes of a regular file that must not change from now on."""
        if not isinstance(path, str) or not path:
            raise PolicyError(field, f"{path!r}: expected the path of an executable file")
        resolved = os.path.abspath(path)
        if not os.path.isfile(resolved):
            raise TargetError(field, f"{path}: no such file")
        if executable and not os.access(resolved, os.X_OK):
            raise TargetError(field, f"{path}: not executable")
        with open(resolved, "rb") as handle:
            data = handle.read()
            self._stamps[resolved] = _stamp(handle.fileno())
        return resolved, hashlib.sha256(data).hexdigest(), data

    def check(self) -> None:
        """Refuse to run files replaced since the identity was taken (their SHA-256 is in it)."""
        for path, stamp in self._stamps.items():
            try:
                current = _stamp(path)
            except OSError:
                current = None
            if current != stamp:
                raise ProvenanceChanged(f"{path}: changed since its SHA-256 was taken into the work identity")


def _stamp(path_or_fd: str | int) -> tuple[int, ...]:
    info = os.stat(path_or_fd)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
