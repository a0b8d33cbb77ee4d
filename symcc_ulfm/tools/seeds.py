"""Seed inputs from a directory (``launch --seeds DIR``, ``explore --seeds DIR``).

A directory of files, one input each, as AFL++, libFuzzer and SymCC users keep them; an AFL
output directory is accepted too (its ``queue/`` is read, the ``.state`` bookkeeping is not).
Only regular files count: entries are opened without following symbolic links and without
blocking on a FIFO, dot-files and subdirectories are skipped, and every seed is bounded in size
(``MAX_SEED_BYTES``) before it is read. Duplicates (by content) are kept once, in name order.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ..errors import ConfigError

MAX_SEED_BYTES = 16 << 20
MAX_SEEDS = 100_000


def read_seed_dir(path: str | Path, field: str = "--seeds") -> list[bytes]:
    directory = Path(path)
    if (directory / "queue").is_dir() and not any(p.is_file() for p in directory.iterdir()):
        directory = directory / "queue"  # an AFL output directory
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(field, f"{path}: not a directory of seed files ({exc.strerror})") from None
    seeds, seen = [], set()
    try:
        names = sorted(n for n in os.listdir(dir_fd) if not n.startswith("."))
        if len(names) > MAX_SEEDS:
            raise ConfigError(field, f"{directory} holds {len(names)} entries, more than {MAX_SEEDS}")
        for name in names:
            data = _read_regular(dir_fd, name, directory, field)
            if data is not None and (digest := hashlib.sha256(data).digest()) not in seen:
                seen.add(digest)
                seeds.append(data)
    finally:
        os.close(dir_fd)
    if not seeds:
        raise ConfigError(field, f"{directory} holds no regular file to use as a seed")
    return seeds


def _read_regular(dir_fd: int, name: str, directory: Path, field: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None  # a symbolic link, or gone
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_SEED_BYTES:
            raise ConfigError(field, f"{directory / name} has {info.st_size} bytes, more than a seed may "
                                     f"({MAX_SEED_BYTES})")
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, MAX_SEED_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_SEED_BYTES:
                raise ConfigError(field, f"{directory / name} grew past {MAX_SEED_BYTES} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)
