"""What a master takes from a worker's RESULT, and what it only records.

A worker's word is not a count: the figures the oracle adds up are derived from what the
master verified. A manifest's ``generated`` is the number of distinct candidates the RESULT
staged and the master checked (its objects); ``unique`` and ``novel`` come from the corpus
claims and the master's coverage. The worker's own statistics (``stats``: its count of
candidates returned, executions, solver queries, seconds, the CPU seconds of its processes
(``cpu_seconds``, ``runtime.worker_loop``), and ``map_size``, the size of the coverage map its
kind measures with where it has one) are recorded as reported, for profiles,
plots and ``status``, after :func:`check_stats` has refused anything implausible: an unknown
key, a negative, fractional or absurd count, a time longer than a lease may run.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import ProtocolError

COUNTS = ("generated", "executions", "solver_queries", "sandbox_deaths", "truncated", "map_size")
TIMES = ("seconds", "run_seconds", "solver_seconds", "cpu_seconds")
MAX_COUNT = 10**7  # of anything one lease can do


def check_stats(stats: dict[str, Any], lease_s: float) -> None:
    """Refuse (ProtocolError) statistics no worker of this campaign can have measured for one lease."""
    unknown = sorted(set(stats) - set(COUNTS) - set(TIMES))
    if unknown:
        raise ProtocolError(f"RESULT stats: unknown keys {unknown[:4]}")
    for key, value in stats.items():
        if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
            raise ProtocolError(f"RESULT stats: {key}={value!r} is not a finite, non-negative number")
        if key in COUNTS and (value != int(value) or value > MAX_COUNT):
            raise ProtocolError(f"RESULT stats: {key}={value!r} is not a plausible count (0..{MAX_COUNT})")
        if key in TIMES and value > 2 * lease_s:
            raise ProtocolError(f"RESULT stats: {key}={value:g} s is longer than a lease may run ({2 * lease_s:g} s)")


def distinct_objects(objects: list[dict]) -> list[dict]:
    """A RESULT's objects, each SHA-256 once (the first entry), in their order: what it generated."""
    seen: dict[str, dict] = {}
    for obj in objects:
        seen.setdefault(obj["sha256"], obj)
    return list(seen.values())
