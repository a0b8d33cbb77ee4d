"""What a durable commit asks of the file system, and what that costs on this machine.

A commit creates new inodes: on the master one, the WAL record, created when the work is
leased (its ``committing`` and ``done`` states are appended lines, the record locks are bytes
of one lock file, each object's claim is a hard link to the record, and the corpus object is
the worker's staged file, hard-linked after it is verified); on the worker one staged file per
object, in the worker's own directory. Nothing is freed per commit (a directory per lease was:
on ext4 without a journal every inode freed in the last half minute is skipped, one by one, by
each later allocation). Renames, links and unlinks only touch directory entries; what creating
an inode costs is measured here, on the state directory's file system and on tmpfs, in the
same run as the campaigns.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

OPS = ("create", "rename", "link", "unlink", "mkdir", "syncfs")


def probe(directory: Path, n: int = 200) -> dict[str, Any]:
    """Per-operation wall and CPU microseconds (means over ``n``) in a fresh directory under ``directory``."""
    root = Path(tempfile.mkdtemp(prefix=".fs-cost-", dir=directory))
    libc = ctypes.CDLL(None, use_errno=True)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    payload = b"x" * 256

    def create(i: int) -> None:
        fd = os.open(root / f"c{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchmod(fd, 0o600)
        os.write(fd, payload)
        os.close(fd)

    steps = {
        "create": create,
        "rename": lambda i: os.rename(root / f"c{i}", root / f"r{i}"),
        "link": lambda i: os.link(root / f"r{i}", root / f"l{i}"),
        "unlink": lambda i: os.unlink(root / f"l{i}"),
        "mkdir": lambda i: os.mkdir(root / f"d{i}"),
        "syncfs": lambda i: libc.syncfs(dir_fd),
    }
    out: dict[str, Any] = {"directory": str(directory), "n": n}
    try:
        for op in OPS:
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(n):
                steps[op](i)
            out[op] = {"wall_us": round(1e6 * (time.perf_counter() - wall) / n, 1),
                       "cpu_us": round(1e6 * (time.process_time() - cpu) / n, 1)}
    finally:
        os.close(dir_fd)
        shutil.rmtree(root, ignore_errors=True)
    return out


def inodes_per_commit(objects_per_commit: float) -> dict[str, float]:
    """New inodes one commit creates (see the module docstring), by side."""
    return {"master": 1.0, "worker": round(objects_per_commit, 2)}


def tmpfs() -> Path | None:
    """A RAM file system for diagnostics (same code without durable media), when there is one."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None
