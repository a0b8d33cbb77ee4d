"""Upstream-style baseline: a master/worker loop written the way SymCC's MPI driver works.

    mpiexec -n N python benchmarks/upstream_baseline.py --workload JSON --window S --out FILE [--completions N]

The structure of SymCC's ``util/mpi_concolic_execution.py`` (written here from its description,
on the same executor as the campaign): rank 0 is the only master; every loop it dispatches one
input per pending READY (``comm.iprobe`` + lowercase ``recv``/``send``: pickled objects), drains
the RESULTs (each one the *whole* result, candidate bytes included, pickled), dedups by
SHA-256 into a FIFO queue held in memory and a temporary directory (no fsync, no durability),
then ``time.sleep(0.05)``. Workers send READY and wait in a blocking ``recv`` (Open MPI's
blocking receive polls while idle). No fault tolerance: a dead worker's input is never
reclaimed. Upstream stops dispatching when less than ``timeout + 5`` seconds are left
(``--margin``; 0 here unless asked, which favours the baseline). ``--completions N`` ends the loop
after N results instead (the window is then only a bound): a count that does not depend on load.

Per input each worker runs :func:`benchmarks.harness.analyze_input` (the executor plus one
coverage run per distinct child), the same work as a campaign worker. Rank 0 writes the
completion times and counters as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import ROOT, Workload, analyze_input, kill_group  # noqa: E402

TAG_WORK, TAG_RESULT, TAG_STOP, TAG_READY = 1, 2, 3, 4
LOOP_SLEEP_S = 0.05


def master(comm, workload: Workload, window: float, margin: float, out: Path, limit: int | None = None) -> None:
    from mpi4py import MPI

    executor = workload.create()
    work_dir = Path(tempfile.mkdtemp(prefix="upstream-baseline-"))
    analyzed: set[str] = set()
    queued: set[str] = set()
    pending: list[tuple[str, dict | None]] = []
    for seed in executor.seeds():
        name = hashlib.sha256(seed).hexdigest()
        if name not in queued:
            (work_dir / name).write_bytes(seed)
            queued.add(name)
            pending.append((str(work_dir / name), None))
    executor.close()
    comm.Barrier()  # every worker has built its executor: the window starts now
    active: dict[int, int] = {}  # inputs sent to a worker and not answered yet
    completions: list[float] = []
    generated = unique = 0
    started = time.time()
    end = started + window
    status = MPI.Status()
    loops = 0

    def wanted() -> bool:
        return limit is None or len(completions) < limit

    while time.time() < end and wanted():
        loops += 1
        while pending and end - time.time() > margin and comm.iprobe(source=MPI.ANY_SOURCE, tag=TAG_READY):
            comm.recv(source=MPI.ANY_SOURCE, tag=TAG_READY, status=status)
            worker = status.Get_source()
            item = pending.pop(0)
            comm.send(item, dest=worker, tag=TAG_WORK)
            active[worker] = active.get(worker, 0) + 1
        while wanted() and comm.iprobe(source=MPI.ANY_SOURCE, tag=TAG_RESULT):
            result = comm.recv(source=MPI.ANY_SOURCE, tag=TAG_RESULT, status=status)
            _settle(active, status.Get_source())
            completions.append(time.time())
            # the RESULT names its input: a READY can be matched before the RESULT sent ahead of it
            # (another tag), so "the worker's current input" may already be the next one
            analyzed.add(Path(result["input"]).name)
            with_suppress_unlink(result["input"])
            for child, hint, _coverage in result["children"]:
                generated += 1
                name = hashlib.sha256(child).hexdigest()
                if name in analyzed or name in queued:
                    continue
                (work_dir / name).write_bytes(child)
                queued.add(name)
                pending.append((str(work_dir / name), hint))
                unique += 1
        if wanted():
            time.sleep(LOOP_SLEEP_S)
    stop_at = time.time()
    for rank in range(1, comm.Get_size()):
        while comm.iprobe(source=rank, tag=TAG_READY):
            comm.recv(source=rank, tag=TAG_READY)
        comm.send(None, dest=rank, tag=TAG_STOP)
    # a worker still holding an input finishes it, sends RESULT (and a READY nobody reads), then reads STOP
    drain_until = time.time() + 30.0
    while active and time.time() < drain_until:
        if comm.iprobe(source=MPI.ANY_SOURCE, tag=TAG_RESULT, status=status):
            comm.recv(source=status.Get_source(), tag=TAG_RESULT)
            _settle(active, status.Get_source())
        else:
            time.sleep(0.001)
    shutil.rmtree(work_dir, ignore_errors=True)
    out.write_text(json.dumps({
        "started_at": started, "window_s": window, "stopped_at": stop_at, "margin_s": margin,
        "completions_limit": limit, "workers": comm.Get_size() - 1, "loops": loops, "completions": completions, "analyzed": len(completions),
        "generated": generated, "unique": unique, "pending_left": len(pending),
    }))


def _settle(active: dict[int, int], worker: int) -> None:
    active[worker] = active.get(worker, 1) - 1
    if active[worker] <= 0:
        del active[worker]


def with_suppress_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def worker(comm, workload: Workload) -> None:
    from mpi4py import MPI

    executor = workload.create()
    status = MPI.Status()
    comm.Barrier()
    try:
        while True:
            comm.send(comm.Get_rank(), dest=0, tag=TAG_READY)
            message = comm.recv(source=0, tag=MPI.ANY_TAG, status=status)
            if status.Get_tag() == TAG_STOP:
                break
            path, hint = message
            data = Path(path).read_bytes()
            comm.send({"input": path, **analyze_input(executor, data, hint)}, dest=0, tag=TAG_RESULT)
    finally:
        executor.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", required=True, help="JSON: {name, executor, target, options}")
    parser.add_argument("--window", type=float, required=True)
    parser.add_argument("--margin", type=float, default=0.0, help="stop dispatching this many seconds early")
    parser.add_argument("--out", required=True)
    parser.add_argument("--completions", type=int, default=None, help="stop after this many results (the window "
                        "is then only a bound)")
    args = parser.parse_args(argv)
    from mpi4py import MPI

    spec = json.loads(args.workload)
    workload = Workload(spec["name"], spec["executor"], spec.get("target"), spec.get("options") or {})
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 0:
        Path(args.out).with_suffix(".started").touch()  # a rank ran: the job is never started again
        master(comm, workload, args.window, args.margin, Path(args.out), args.completions)
    else:
        worker(comm, workload)
    return 0


def run_baseline(workload: Workload, workers: int, window: float, out: Path, margin: float = 0.0,
                 completions: int | None = None) -> dict:
    """Run the baseline with 1 + ``workers`` ranks under the campaign's mpiexec flags (no ULFM);
    ``completions``: stop after that many results (``--completions``)."""
    from symcc_ulfm.core.modes import modes_from_env
    from symcc_ulfm.launch.job import START_ATTEMPTS, START_RETRY_S
    from symcc_ulfm.launch.mpiexec import find_mpiexec, job_environment, mpi_flags

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [find_mpiexec(), *mpi_flags(False), "-n", str(workers + 1), sys.executable, str(Path(__file__).resolve()),
               "--workload", json.dumps(workload.to_json()), "--window", str(window), "--margin", str(margin),
               "--out", str(out), *(["--completions", str(completions)] if completions is not None else [])]
    env = job_environment(modes_from_env(os.environ))
    log, started = out.with_suffix(".log"), out.with_suffix(".started")
    for attempt in range(1, START_ATTEMPTS + 1):  # mpiexec failing before any rank ran changed nothing
        with open(log, "wb") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                       start_new_session=True)
            try:
                returncode = process.wait(timeout=window + 120)
            except subprocess.TimeoutExpired:
                kill_group(process)
                raise RuntimeError(f"upstream-style baseline overran {window + 120:.0f} s; killed") from None
            except BaseException:
                kill_group(process)
                raise
        if returncode == 0 or out.exists() or started.exists() or attempt == START_ATTEMPTS:
            break
        time.sleep(START_RETRY_S)
    if not out.exists():
        raise RuntimeError(f"baseline wrote no result (exit {returncode}): {log.read_text(errors='replace')[-2000:]}")
    result = json.loads(out.read_text())
    result["returncode"] = returncode
    start, seconds = result["started_at"], result["window_s"]
    result["rate"] = round(sum(1 for t in result["completions"] if start <= t <= start + seconds) / seconds, 3)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
