"""One-process exploration (``symcc-ulfm explore``): no MPI, any :class:`~.executors.base.Executor`.

A generational search loop over a priority queue, novel first: inputs that added the most
coverage ids come first (ties: older generation, then insertion order), unique inputs that
added nothing come after them (as in SAGE, a child that flips a branch without new coverage
may still be one step from it). Each popped input is expanded with ``executor.run``; every
candidate is deduplicated by SHA-256, measured with ``executor.measure_many`` and *retained*
when it adds a coverage id (an edge or a new hit-count class). Seeds, retained inputs and the
inputs of findings are written to ``out_dir`` under their SHA-256 hex name, atomically
(temporary file + rename), so the directory is a valid corpus at every instant; the findings
(unique by kind and signature, with their hits) are in ``findings.json`` there, and what ran
(executor, target, options, isolation, the seeds' SHA-256s) in ``explore.json``, written before
the search starts, so that ``findings``, ``replay``, ``minimize``, ``export`` and ``sarif`` read
the directory as they read a campaign's (``tools.sources``; names: ``store.paths.ExploreDir``).
Inputs of ``crash``, ``hang``, ``oom`` and ``protocol`` findings are not expanded.

The search ends when the queue is empty, after ``runs`` runs of the executor, after ``seconds``
(counted from when the seeds have been measured: a sandbox's start-up and the seeds are not part
of it; the children of the last run are measured within what is left of it), or once
``stop_returned`` was returned; ``stopped`` says which (``queue``, ``runs``, ``seconds``,
``returned``). Without ``seconds`` nothing in it reads a clock, and with a count-based executor
(the concolic executor's ``mutate_clock`` off) the same ``runs`` give the same search on any
machine, however loaded.

Counters: ``generated`` counts every candidate returned by ``run``; ``unique`` and ``novel``
count the candidates examined before the deadline (new by content / also new by coverage);
``executions`` counts target executions: those reported by ``run`` plus one per coverage
measurement (seeds included); ``inputs`` the distinct inputs this exploration wrote (seeds,
retained inputs, inputs of findings). ``useless_seeds`` counts the distinct seeds that, measured in
the order given, reach no coverage id the seeds before them did not (what AFL++'s dry run warns
"may be useless" about); ``seed_coverage_ids`` is what the seeds reach together.

One exploration at a time writes a directory: it holds ``.explore.lock`` there (``flock``,
released by the kernel when it ends) and a second one on the same directory is refused (exit 2)
naming the first.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import heapq
import itertools
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..core.coverage import edge_of
from ..core.finding import finding_id
from ..errors import ConfigError
from ..executors.base import Executor, Measurement
from ..executors.outcome import Outcome
from ..store.paths import ExploreDir

MAX_QUEUE = 200_000
DEFAULT_SECONDS = 20.0  # of the command, when it is given neither --seconds nor --runs
LOCK_NAME = ExploreDir(Path(".")).lock.name
EXPLORE_FORMAT = "symcc-ulfm-explore/1"  # explore.json (read by tools.sources)


@contextlib.contextmanager
def holding(out_dir: Path) -> Iterator[None]:
    """This process's exclusive hold of ``out_dir`` (module docstring)."""
    path = out_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise ConfigError("--out", f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            raise ConfigError("--out", f"{out_dir} is being written by {holder}; one explore per directory") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"symcc-ulfm explore, pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def write_input(out_dir: Path, data: bytes) -> Path:
    """Write ``data`` as ``out_dir/<sha256 hex>`` atomically; an existing file is left alone."""
    target = out_dir / hashlib.sha256(data).hexdigest()
    if not target.exists():
        write_file(target, data)
    return target


def write_file(target: Path, data: bytes) -> None:
    """Write ``target`` atomically (temporary file in the same directory + rename)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Findings:
    """Unique findings of one exploration: (kind, signature) -> first input and the inputs that hit it."""

    def __init__(self, out_dir: Path, started: float):
        self.out_dir = out_dir
        self.started = started
        self.rows: dict[tuple[str, str], dict] = {}

    def add(self, outcome: Outcome, data: bytes) -> str:
        """Record a finding of ``data`` (written to the directory); the input's SHA-256."""
        sha256 = write_input(self.out_dir, data).name
        row = self.rows.setdefault((outcome.kind, outcome.signature), {
            "id": finding_id(outcome.kind, outcome.signature), "kind": outcome.kind,
            "signature": outcome.signature, "detail": outcome.detail, "input_sha256": sha256,
            "first_seen_s": round(time.monotonic() - self.started, 3), "inputs": set()})
        row["inputs"].add(sha256)
        return sha256

    def to_json(self) -> list[dict]:
        return [{**{k: v for k, v in row.items() if k != "inputs"}, "hits": len(row["inputs"])}
                for row in self.rows.values()]

    def write(self) -> None:
        write_file(ExploreDir(self.out_dir).findings, (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode())


def explore(executor: Executor, seconds: float | None, out_dir: Path, seeds: list[bytes] | None = None, *,
            runs: int | None = None, stop_returned: str | None = None, ran: dict | None = None) -> dict:
    """Search from ``seeds`` (default: the executor's) for at most ``seconds`` and ``runs`` (None:
    no such bound; module docstring); returns the counters.

    ``stop_returned`` (optional) ends the search early once a measured input makes the target
    return that string (tests and benchmarks use a built-in target's ``deep`` marker);
    ``stopped_early`` reports whether it did, ``stopped`` why the search ended. ``ran``
    (``executor``, ``target``, ``executor_options``, ``isolation``: what ``executors.create`` was
    given) is written into ``explore.json`` with the seeds; without it no manifest is written (the
    directory is then a corpus only, as the engine's own tests use it).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with holding(out_dir):
        return _explore(executor, None if seconds is None else float(seconds), runs, out_dir, seeds,
                        stop_returned, ran)


def _explore(executor: Executor, seconds: float | None, runs: int | None, out_dir: Path,
             seeds: list[bytes] | None, stop_returned: str | None, ran: dict | None) -> dict:
    start = time.monotonic()
    order = itertools.count()
    queue: list[tuple[int, int, int, bytes, dict | None]] = []
    seen: set[bytes] = set()
    covered: set[int] = set()
    findings = Findings(out_dir, start)
    kept: set[str] = set()  # the SHA-256s of the inputs written to out_dir
    totals = {"executions": 0, "generated": 0, "unique": 0, "novel": 0, "solver_queries": 0,
              "solver_seconds": 0.0, "runs": 0}
    done = False

    def judge(data: bytes, measured: Measurement) -> int | None:
        """Count one measured input: its coverage gain, or None when it is not to be expanded."""
        nonlocal done
        totals["executions"] += 1
        new = measured.coverage - covered
        covered.update(new)
        done = done or (stop_returned is not None and measured.returned == stop_returned)
        if measured.outcome.is_finding:
            kept.add(findings.add(measured.outcome, data))
            if measured.outcome.terminal:
                return None
        return len(new)

    fresh = []
    for seed in executor.seeds() if seeds is None else seeds:
        digest = hashlib.sha256(seed).digest()
        if digest not in seen:
            seen.add(digest)
            fresh.append(bytes(seed))
    if ran is not None:
        manifest = {"format": EXPLORE_FORMAT, **ran, "seeds": [hashlib.sha256(s).hexdigest() for s in fresh]}
        write_file(ExploreDir(out_dir).manifest, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    useless = 0  # seeds that reach nothing the seeds before them did not (AFL++'s dry run: "may be useless")
    for seed, measured in zip(fresh, executor.measure_many(fresh), strict=True):
        kept.add(write_input(out_dir, seed).name)
        gain = judge(seed, measured)
        useless += gain == 0 and not measured.outcome.is_finding
        if gain is not None:
            heapq.heappush(queue, (-gain, 0, next(order), seed, None))
    seeds = {"seeds": len(fresh), "useless_seeds": useless, "seed_coverage_ids": len(covered)}

    deadline = None if seconds is None else time.monotonic() + seconds

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    while queue and not done and (runs is None or totals["runs"] < runs) and left() != 0.0:
        _, generation, _, data, hint = heapq.heappop(queue)
        result = executor.run(data, hint)
        totals["runs"] += 1
        totals["executions"] += result.executions
        totals["solver_queries"] += result.solver_queries
        totals["solver_seconds"] += result.solver_seconds
        totals["generated"] += len(result.candidates)
        for found in result.findings:
            kept.add(findings.add(found.outcome, found.data))
        hints = result.hints or [None] * len(result.candidates)
        fresh, fresh_hints = [], []
        for candidate, child_hint in zip(result.candidates, hints, strict=True):
            digest = hashlib.sha256(candidate).digest()
            if digest not in seen:
                seen.add(digest)
                fresh.append(candidate)
                fresh_hints.append(child_hint)
        measured = executor.measure_many(fresh, budget_s=left())
        for candidate, child_hint, m in zip(fresh, fresh_hints, measured, strict=True):
            if m is None:
                break
            totals["unique"] += 1
            gain = judge(candidate, m)
            if gain:
                totals["novel"] += 1
                kept.add(write_input(out_dir, candidate).name)
            if done:
                break
            if gain is not None and (gain or len(queue) < MAX_QUEUE):
                heapq.heappush(queue, (-gain, generation + 1, next(order), candidate, child_hint))

    stopped = ("returned" if done else "queue" if not queue
               else "runs" if runs is not None and totals["runs"] >= runs else "seconds")
    findings.write()
    elapsed = time.monotonic() - start
    rate = 1.0 / elapsed if elapsed > 0 else 0.0
    return {
        **totals,
        **seeds,
        "edges": len({edge_of(c) for c in covered}),
        "coverage_ids": len(covered),
        "seconds": elapsed,
        "executions_per_s": totals["executions"] * rate,
        "solver_queries_per_s": totals["solver_queries"] * rate,
        "queue_left": len(queue),
        "stopped_early": done,
        "stopped": stopped,
        "inputs": len(kept),
        "findings_unique": len(findings.rows),
        "findings": findings.to_json(),
    }
