"""Whether processes a test started (or its target did) are gone, from ``/proc``; waiting for an event."""

from __future__ import annotations

import time
from pathlib import Path


def dead(pid: int) -> bool:
    """Gone or a zombie (PID 1 in a container may not reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def wait_dead(*pids: int, seconds: float = 5.0) -> bool:
    """Whether every one of ``pids`` is dead within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while not all(dead(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return all(dead(pid) for pid in pids)


def wait_for(predicate, limit: float = 120.0, seen=None):
    """The first true value of ``predicate``; after ``limit`` s, fails with what ``seen()`` reports."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {limit:g} s" + (f"; {seen()}" if seen else ""))
