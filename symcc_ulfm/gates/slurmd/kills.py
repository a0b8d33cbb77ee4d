"""Failures from outside a running campaign: a rank killed with SIGKILL, a node's daemon lost.

A rank is found among the processes of its node's network namespace (``ip netns pids``) as the
child of PRRTE's ``prted`` whose environment names its MPI world rank (= its stable rank in the
campaign's first job). Its own process tree is left to the rank: the sandbox children die with
it (``executors.sandbox``).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from ...errors import CheckFailed
from ..netns.topology import namespace_pids

RANK_VARS = (b"PMIX_RANK", b"OMPI_COMM_WORLD_RANK")


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _parent_name(pid: int) -> str:
    stat = _read(f"/proc/{pid}/stat")
    try:
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return ""
    return _read(f"/proc/{ppid}/comm").decode(errors="replace").strip()


def rank_pid(namespace: str, rank: int) -> int | None:
    """The pid of MPI rank ``rank`` among ``prted``'s children in ``namespace`` (None if none)."""
    for pid in namespace_pids(namespace):
        environ = dict(item.partition(b"=")[::2] for item in _read(f"/proc/{pid}/environ").split(b"\0") if item)
        if any(environ.get(var) == str(rank).encode() for var in RANK_VARS) and _parent_name(pid) == "prted":
            return pid
    return None


def kill_rank(namespace: str, rank: int) -> int:
    """SIGKILL rank ``rank`` in ``namespace`` (as ``kill -9`` from outside); its pid."""
    pid = rank_pid(namespace, rank)
    if pid is None:
        raise CheckFailed(f"rank {rank} is not running in {namespace}: nothing to kill")
    os.kill(pid, signal.SIGKILL)
    return pid


def wait_for(ready: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.1) -> float:
    """Wait until ``ready()``; the wall time it became true. Raises after ``timeout_s``."""
    limit = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > limit:
            raise CheckFailed(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(poll_s)
    return time.time()


def mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None
