"""Rules the oracle and its helpers share: canonical JSON, SHA-256, the layout rule, and how a
file of the judged directory is read.

Written from DESIGN.md, independently of ``symcc_ulfm.core`` and ``symcc_ulfm.store`` (which
the oracle must not import). A file is opened without following a symbolic link or blocking on
a FIFO, and must be a regular file within a size bound before a byte is read; anything else is
:class:`~symcc_ulfm.errors.UnsafeFile` (exit 4, naming it). A JSON file that does not parse (or
nests without end) is a ``ValueError`` naming it, which the judge reports as a problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import UnsafeFile

MAX_JSON_BYTES = 64 << 20  # policy, membership, WAL records, claims, outcome, endpoint
MAX_OBJECT_BYTES = 64 << 20  # a corpus object (the runtime never publishes a larger one)
MAX_LOG_BYTES = 16 << 30  # a rank log is streamed, never held whole
MAX_LINE_BYTES = 16 << 20  # one log line
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 20


def _open_regular(path: Path, limit: int) -> tuple[int, int]:
    """An open descriptor of the regular file ``path`` and its size (at most ``limit``)."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnsafeFile(f"{path}: cannot be opened as a regular file ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(info.st_mode) else f"{info.st_size} bytes, over {limit}"
        raise UnsafeFile(f"{path}: {what}; refusing to read it")
    return fd, info.st_size


def read_file(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    fd, size = _open_regular(path, limit)
    try:
        chunks, total = [], 0
        while chunk := os.read(fd, min(_CHUNK, limit + 1 - total) or 1):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnsafeFile(f"{path}: grew past {limit} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_sha256(path: Path, limit: int = MAX_OBJECT_BYTES) -> str:
    fd, _ = _open_regular(path, limit)
    digest = hashlib.sha256()
    try:
        total = 0
        while chunk := os.read(fd, _CHUNK):
            total += len(chunk)
            if total > limit:
                raise UnsafeFile(f"{path}: grew past {limit} bytes while read")
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def lines(path: Path, limit: int = MAX_LOG_BYTES) -> Iterator[tuple[bytes, bool]]:
    """``(line, complete)`` of a line file, streamed; only a last line can lack its newline."""
    fd, _ = _open_regular(path, limit)
    with os.fdopen(fd, "rb") as handle:
        while line := handle.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                raise UnsafeFile(f"{path}: a line longer than {MAX_LINE_BYTES} bytes; refusing to read on")
            yield (line[:-1], True) if line.endswith(b"\n") else (line, False)


def parse_json(raw: bytes, name: str, kind: type = dict) -> Any:
    """``raw`` as JSON of type ``kind``; a ValueError naming ``name`` otherwise."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError(f"{name} is not valid JSON") from None
    if not isinstance(value, kind):
        raise ValueError(f"{name} is not a JSON {'object' if kind is dict else kind.__name__}")
    return value


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def expected_kinds(policy: dict) -> list[str]:
    """The kind of each worker slot of a group: ``worker_kinds`` (``afl:1,symcc:2``) expanded; []
    when every slot runs the executor."""
    out = []
    for part in filter(None, policy.get("worker_kinds", "").split(",")):
        name, count = part.split(":")
        out += [name] * int(count)
    return out


def lent_kind(policy: dict, slots: list[str]) -> str | None:
    """The kind whose slices an analysis worker runs while it has nothing to analyze: with
    ``idle`` ``fuzz`` (the default) the first slot kind other than the executor (every such kind
    is a fuzzer: a campaign has one analysis kind); None when the workers wait."""
    if policy.get("idle", "fuzz") != "fuzz":
        return None
    return next((kind for kind in slots if kind != policy["executor"]), None)


def kind_in(group: list[int], worker: int, slots: list[str], executor: str) -> str:
    """The kind of ``worker`` of ``group`` (master first): its position's slot kind, or the executor's."""
    return slots[(group.index(worker) - 1) % len(slots)] if slots else executor


def expected_groups(active: list[int], workers_per_master: int) -> list[list[int]]:
    """DESIGN.md §3: cut active endpoints into groups of 1 + W; a trailing lone endpoint joins the last group."""
    size = 1 + workers_per_master
    chunks = [list(active[i : i + size]) for i in range(0, len(active), size)]
    if len(chunks) > 1 and len(chunks[-1]) == 1:
        chunks[-2].extend(chunks.pop())
    return [c for c in chunks if len(c) > 1]
