"""Dask distributed on the same work: throughput, resumption after a killed worker, duplicates.

A ``LocalCluster`` of ``workers`` worker processes (one thread each, nannies on) on this
machine. Each task is :func:`benchmarks.harness.analyze_input` on one input with the
executor built once per worker process (:func:`task`). The client keeps the frontier as the
campaign master does, approximately: a FIFO of inputs new by SHA-256, children submitted as
results come back, ``2 x workers`` tasks in flight, each future released once its result is
read. Nothing is durable.

With ``kill_at`` the worker process running the most tasks is SIGKILLed at that offset into
the window (its nanny restarts it; the scheduler re-runs its tasks). Every task appends
``<input sha256> <pid> <time>`` to a log with one ``write`` when it finishes, so a result
computed twice is counted even when the client only ever reads one of the two.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from .harness import ROOT, Frontier, Workload, descendants, resumption

_EXECUTORS: dict[str, Any] = {}


def _executor(spec: str):
    executor = _EXECUTORS.get(spec)
    if executor is None:
        data = json.loads(spec)
        executor = _EXECUTORS[spec] = Workload(data["name"], data["executor"], data.get("target"),
                                               data.get("options") or {}).create()
    return executor


def warm(spec: str) -> int:
    """Build this worker process's executor before the window starts (as campaign ranks do)."""
    _executor(spec)
    return os.getpid()


def task(spec: str, data: bytes, hint: dict | None, log: str) -> dict[str, Any]:
    from .harness import analyze_input

    out = analyze_input(_executor(spec), data, hint)
    name = hashlib.sha256(data).hexdigest()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{name} {os.getpid()} {time.time():.6f}\n".encode())
    finally:
        os.close(fd)
    return {"input": name, "pid": os.getpid(), **out}


def run_dask(workload: Workload, workers: int, window: float, out_dir: Path, kill_at: float | None = None) -> dict:
    from distributed import Client, LocalCluster, wait
    from distributed import TimeoutError as DaskTimeout

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "dask-executions.log"
    log.unlink(missing_ok=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    spec = json.dumps(workload.to_json(), sort_keys=True)
    boot = time.monotonic()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.CRITICAL)
    client = Client(cluster)
    notes: dict[str, Any] = {}
    try:
        client.wait_for_workers(workers, timeout=120)
        pids = client.run(warm, spec)
        startup = time.monotonic() - boot
        executor = workload.create()
        frontier = Frontier(executor.seeds())
        executor.close()
        inflight: dict[Any, bytes] = {}
        completions: list[float] = []
        received: collections.Counter[str] = collections.Counter()
        generated = 0
        started = time.time()
        end = started + window
        killed = None

        def fill() -> None:
            while len(inflight) < 2 * workers:
                item = frontier.pop()
                if item is None:
                    return
                future = client.submit(task, spec, item[0], item[1], str(log), pure=False)
                inflight[future] = item[0]

        fill()
        while time.time() < end:
            if kill_at is not None and killed is None and time.time() >= started + kill_at:
                killed = _kill_busiest(client, pids)
            try:
                done, _ = wait(list(inflight), timeout=max(0.01, min(0.25, end - time.time())),
                               return_when="FIRST_COMPLETED")
            except (DaskTimeout, TimeoutError):
                done = set()
            for future in done:
                inflight.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # a task that failed (e.g. too many worker deaths) is counted, not fatal
                    notes.setdefault("task_errors", []).append(f"{type(exc).__name__}: {exc}"[:200])
                    continue
                completions.append(time.time())
                received[result["input"]] += 1
                generated += result["generated"]
                for child, hint, _ in result["children"]:
                    frontier.offer(child, hint)
            fill()
        stopped = time.time()
        for future in inflight:
            future.cancel()
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=30)
        with contextlib.suppress(Exception):
            cluster.close(timeout=30)
        for child in descendants(os.getpid()):  # nothing of the cluster may outlive the benchmark
            with contextlib.suppress(Exception):
                line = " ".join(child.cmdline())
                if "spawn_main" in line and "resource_tracker" not in line:
                    child.kill()
    executions = collections.Counter(line.split()[0] for line in log.read_text().splitlines() if line.strip()) \
        if log.exists() else collections.Counter()
    in_window = [t for t in completions if started <= t <= started + window]
    result = {
        "workers": workers, "window_s": window, "startup_s": round(startup, 3), "started_at": started,
        "stopped_at": stopped, "analyzed": len(completions), "generated": generated,
        "rate": round(len(in_window) / window, 3),
        "results_received_twice": sum(1 for n in received.values() if n > 1),
        "results_produced_twice": sum(1 for n in executions.values() if n > 1),
        "executions_logged": sum(executions.values()), "notes": notes,
    }
    if killed is not None:
        result["kill"] = killed
        result["resumption"] = resumption(completions, killed["t"])
    return result


def _kill_busiest(client, pids: dict[str, int]) -> dict[str, Any]:
    """SIGKILL the worker process holding the most tasks (the scheduler's view)."""
    processing = client.processing()
    address = max(pids, key=lambda a: (len(processing.get(a, ())), a))
    pid = pids[address]
    t = time.time()
    os.kill(pid, signal.SIGKILL)
    return {"t": t, "pid": pid, "address": address, "tasks_on_it": len(processing.get(address, ()))}
