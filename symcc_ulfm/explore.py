"""One-process exploration (``symcc-ulfm explore``): no MPI, any :class:`~.executors.base.Executor`.

A generational search loop over a priority queue, novel first: inputs that added the most
coverage ids come first (ties: older generation, then insertion order), unique inputs that
added nothing come after them (as in SAGE, a child that flips a branch without new coverage
may still be one step from it). Each popped input is expanded with ``executor.run``; every
candidate is deduplicated by SHA-256, measured with ``executor.coverage`` and *retained* when
it adds a coverage id (an edge or a new hit-count class). Seeds and retained inputs are written to ``out_dir`` under their SHA-256 hex name,
atomically (temporary file + rename), so the directory is a valid corpus at every instant.

Counters: ``generated`` counts every candidate returned by ``run``; ``unique`` and ``novel``
count the candidates examined before the deadline (new by content / also new by coverage);
``executions`` counts target executions: those reported by ``run`` plus one per coverage
measurement (seeds included).
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .executors.base import Executor, edge_of

MAX_QUEUE = 200_000


def write_input(out_dir: Path, data: bytes) -> Path:
    """Write ``data`` as ``out_dir/<sha256 hex>`` atomically; an existing file is left alone."""
    target = out_dir / hashlib.sha256(data).hexdigest()
    if target.exists():
        return target
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def explore(executor: Executor, seconds: float, out_dir: Path, seeds: list[bytes] | None = None, *,
            stop_when: Callable[[bytes], bool] | None = None) -> dict:
    """Search for ``seconds`` from ``seeds`` (default: the executor's); returns the counters.

    ``stop_when`` (optional) ends the search early once a retained input satisfies it (tests and
    benchmarks use a target's ``deepest`` predicate); ``stopped_early`` reports whether it did.
    """
    start = time.monotonic()
    deadline = start + float(seconds)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    order = itertools.count()
    queue: list[tuple[int, int, int, bytes]] = []
    seen: set[bytes] = set()
    covered: set[int] = set()
    totals = {"executions": 0, "generated": 0, "unique": 0, "novel": 0, "solver_queries": 0,
              "solver_seconds": 0.0, "runs": 0}
    done = False

    def measure(data: bytes) -> int:
        cov = executor.coverage(data)
        totals["executions"] += 1
        new = cov - covered
        covered.update(new)
        return len(new)

    for seed in executor.seeds() if seeds is None else seeds:
        seed = bytes(seed)
        digest = hashlib.sha256(seed).digest()
        if digest in seen:
            continue
        seen.add(digest)
        gain = measure(seed)
        write_input(out_dir, seed)
        heapq.heappush(queue, (-gain, 0, next(order), seed, None))
        done = done or (stop_when is not None and stop_when(seed))

    while queue and not done and time.monotonic() < deadline:
        _, generation, _, data, hint = heapq.heappop(queue)
        result = executor.run(data, hint)
        totals["runs"] += 1
        totals["executions"] += result.executions
        totals["solver_queries"] += result.solver_queries
        totals["solver_seconds"] += result.solver_seconds
        totals["generated"] += len(result.candidates)
        hints = result.hints or [None] * len(result.candidates)
        for candidate, child_hint in zip(result.candidates, hints, strict=True):
            if time.monotonic() >= deadline:
                break
            digest = hashlib.sha256(candidate).digest()
            if digest in seen:
                continue
            seen.add(digest)
            totals["unique"] += 1
            gain = measure(candidate)
            if gain:
                totals["novel"] += 1
                write_input(out_dir, candidate)
                if stop_when is not None and stop_when(candidate):
                    done = True
                    break
            elif len(queue) >= MAX_QUEUE:
                continue
            heapq.heappush(queue, (-gain, generation + 1, next(order), candidate, child_hint))

    elapsed = time.monotonic() - start
    rate = 1.0 / elapsed if elapsed > 0 else 0.0
    return {
        **totals,
        "edges": len({edge_of(c) for c in covered}),
        "coverage_ids": len(covered),
        "seconds": elapsed,
        "executions_per_s": totals["executions"] * rate,
        "solver_queries_per_s": totals["solver_queries"] * rate,
        "queue_left": len(queue),
        "stopped_early": done,
    }
