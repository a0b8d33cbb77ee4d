"""Shared machinery of the benchmarks: one unit of work, the physical limit, campaign runs, logs,
CPU accounting, rate timelines, profiles, sealing.

What is measured how (every figure of ``make bench`` comes from one of these):

* **one unit of work** (:func:`analyze_input`): ``executor.run(input, hint)`` and one
  ``executor.measure_many`` of the distinct children, exactly what a campaign worker does per
  input (``symcc_ulfm/runtime/worker_loop.py``). The sequential limit, the upstream-style baseline and
  the Dask comparison all run this function; the campaign runs the worker loop.
* **physical limit** = ``cores x`` the inputs/s of :func:`sequential_rate` (one process, no
  MPI, FIFO frontier from the executor's seeds, dedup by SHA-256). **Efficiency** = analyzed/s
  of a run divided by that limit.
* **campaign throughput** = ``commit`` events (durable work commits, from the masters' logs)
  whose time lies in the campaign window ``[started_at, started_at + deadline_s]`` of
  ``outcome.json``, divided by ``deadline_s``: start-up and the shutdown grace are excluded.
* **CPU share** of a process = (utime + stime from ``/proc/<pid>/stat``) per wall second,
  sampled at two instants inside the window.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from symcc_ulfm.launch import json_child as launch_process
from symcc_ulfm.store.runlog import Event, LogFollower, read_events

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")


def checkout() -> str:
    """The commit this checkout is at, with "+" when the code a benchmark runs (benchmarks/,
    symcc_ulfm/) differs from it; "?" outside git: what each window or cell records."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "benchmarks", "symcc_ulfm"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+" if changed else "")


def cores() -> int:
    """The cores this process may run on (what every run of the benchmark shares)."""
    return len(os.sched_getaffinity(0))


@dataclass(frozen=True)
class Workload:
    """An executor configuration: the same one is given to every system that is compared."""

    name: str
    executor: str
    target: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    isolation: str = "namespaces"  # contained, the sandbox's isolation (launch --isolation)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "executor": self.executor, "target": self.target, "options": dict(self.options),
                "isolation": self.isolation}

    def create(self, contained: bool = True):
        """The executor as a campaign runs it (contained when it runs target code), or in-process."""
        from symcc_ulfm.executors import create, engine

        if not contained:
            return engine(self.executor, self.target, self.options)
        return create(self.executor, self.target, self.options, isolation=self.isolation)

    def launch_args(self) -> list[str]:
        args = ["--executor", self.executor]
        if self.target:
            args += ["--target", self.target]
        for key, value in sorted(self.options.items()):
            args += ["--executor-option", f"{key}={json.dumps(value)}"]
        return args


# -- one unit of work, the sequential limit, efficiency ---------------------------------------


def analyze_input(executor, data: bytes, hint: dict | None) -> dict[str, Any]:
    """Run one input and measure every distinct child (what a campaign worker does per input)."""
    result = executor.run(data, hint)
    hints = result.hints or [None] * len(result.candidates)
    distinct: dict[bytes, tuple[bytes, dict | None]] = {}
    for child, child_hint in zip(result.candidates, hints, strict=True):
        distinct.setdefault(hashlib.sha256(child).digest(), (child, child_hint))
    measured = executor.measure_many([child for child, _ in distinct.values()])
    children = [(child, child_hint, sorted(m.coverage)) for (child, child_hint), m in zip(distinct.values(), measured,
                                                                                            strict=True)]
    return {"generated": len(result.candidates), "children": children}


class Frontier:
    """FIFO of inputs not seen before (by SHA-256), with the hint each child travels with."""

    def __init__(self, seeds: list[bytes]):
        self.queue: collections.deque[tuple[bytes, dict | None]] = collections.deque()
        self.seen: set[bytes] = set()
        for seed in seeds:
            self.offer(seed, None)

    def offer(self, data: bytes, hint: dict | None) -> bool:
        digest = hashlib.sha256(data).digest()
        if digest in self.seen:
            return False
        self.seen.add(digest)
        self.queue.append((data, hint))
        return True

    def pop(self) -> tuple[bytes, dict | None] | None:
        return self.queue.popleft() if self.queue else None

    def __len__(self) -> int:
        return len(self.queue)


def sequential_rate(workload: Workload, seconds: float, contained: bool = True, progress=None,
                    max_inputs: int | None = None) -> dict[str, Any]:
    """Inputs analyzed per second by one process running the executor alone (no MPI, no store);
    ``contained=False``: the target runs in this process, as before containment existed.
    ``progress(analyzed, seconds)`` is called after every input. ``max_inputs``: stop after that
    many inputs, ``seconds`` then being only a bound."""
    executor = workload.create(contained)
    try:
        frontier = Frontier(executor.seeds())
        analyzed = generated = 0
        started = time.perf_counter()
        end = started + seconds
        while time.perf_counter() < end and (max_inputs is None or analyzed < max_inputs):
            item = frontier.pop()
            if item is None:
                break
            out = analyze_input(executor, *item)
            analyzed += 1
            generated += out["generated"]
            for child, hint, _ in out["children"]:
                frontier.offer(child, hint)
            if progress is not None:
                progress(analyzed, time.perf_counter() - started)
        elapsed = time.perf_counter() - started
    finally:
        executor.close()
    return {"analyzed": analyzed, "generated": generated, "seconds": round(elapsed, 4),
            "rate": analyzed / elapsed if elapsed > 0 else 0.0, "frontier_left": len(frontier)}


def sequential_rate_apart(workload: Workload, seconds: float, contained: bool) -> dict[str, Any]:
    """:func:`sequential_rate` in a process of its own: a target that kills the process running it
    (in-process, nothing contains it) ends that process, and the rate up to its death is kept."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from benchmarks import harness as h; "
            "w = h.Workload(**json.loads(sys.argv[2])); "
            "r = h.sequential_rate(w, float(sys.argv[3]), sys.argv[4] == '1', "
            "lambda n, t: print(json.dumps({'analyzed': n, 'seconds': t}), flush=True)); "
            "print(json.dumps({**r, 'final': True}), flush=True)")
    done = subprocess.run([PYTHON, "-c", code, str(ROOT), json.dumps(workload.to_json()), str(seconds),
                           "1" if contained else "0"], capture_output=True, text=True, timeout=seconds + 300)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    last = rows[-1] if rows else {"analyzed": 0, "seconds": 0.0}
    if last.get("final"):
        return last
    died = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    rate = last["analyzed"] / last["seconds"] if last["seconds"] else None
    return {"analyzed": last["analyzed"], "seconds": round(last["seconds"], 4), "rate": rate, "died": died}


def execution_cost(workload: Workload, data: bytes, seconds: float, contained: bool) -> dict[str, Any]:
    """Wall time of one concrete execution (``measure``) of ``data``, repeated for ``seconds``."""
    executor = workload.create(contained)
    try:
        executor.measure(data)  # start-up (the sandbox child, imports) is not an execution
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            executor.measure(data)
            count += 1
        elapsed = time.perf_counter() - started
    finally:
        executor.close()
    return {"executions": count, "us_per_execution": 1e6 * elapsed / count}


def mutation_cost(workload: Workload, data: bytes, runs: int, contained: bool) -> dict[str, Any] | None:
    """Wall time per mutant of the hybrid phase inside ``runs`` runs of ``data`` (the concolic
    executor's notes); None when its runs execute no mutants."""
    executor = workload.create(contained)
    try:
        executor.run(data)  # start-up is not part of it
        mutants, seconds = 0, 0.0
        for _ in range(runs):
            notes = executor.run(data).notes
            mutants += notes.get("mutations", 0)
            seconds += notes.get("mutation_seconds", 0.0)
    finally:
        executor.close()
    return {"mutants": mutants, "us_per_mutant": 1e6 * seconds / mutants} if mutants else None


def efficiency(rate: float, sequential: float, ncores: int) -> float | None:
    """``rate / (cores x sequential)``: the share of the machine's physical limit that a run reached."""
    if not sequential or ncores <= 0:
        return None
    return rate / (ncores * sequential)


def window_rate(times: list[float], start: float, seconds: float) -> float:
    """Events per second whose time lies in ``[start, start + seconds]``."""
    return sum(1 for t in times if start <= t <= start + seconds) / seconds


# -- rate timelines: resumption after a killed worker -------------------------------------------


def resumption(times: list[float], t_kill: float, pre_s: float = 3.0, probe_s: float = 0.5,
               fraction: float = 0.9, horizon_s: float = 10.0, step_s: float = 0.01) -> dict[str, Any]:
    """How a completion timeline recovers after a kill at ``t_kill`` (same definition for every system).

    ``pre_rate``: completions/s in the ``pre_s`` before the kill; ``resume_s``: the first delay d
    (in ``step_s`` steps) such that ``[t_kill + d, t_kill + d + probe_s)`` runs at >= ``fraction``
    of ``pre_rate``; ``max_gap_s``: the longest gap between consecutive completions around the
    kill (from the last completion before it to ``horizon_s`` after); ``first_after_s``: the
    first completion after the kill. ``resume_s`` may read up to ``(1 - fraction) x probe_s`` early
    (a probe window that starts inside the stall can already hold enough completions).
    """
    times = sorted(times)
    before = [t for t in times if t_kill - pre_s <= t < t_kill]
    pre_rate = len(before) / pre_s
    after = [t for t in times if t_kill <= t <= t_kill + horizon_s + probe_s]
    need = fraction * pre_rate * probe_s
    resume = None
    if pre_rate > 0:
        steps = int(horizon_s / step_s)
        j = 0
        for k in range(steps + 1):
            lo = t_kill + k * step_s
            while j < len(after) and after[j] < lo:
                j += 1
            count = 0
            i = j
            while i < len(after) and after[i] < lo + probe_s:
                count += 1
                i += 1
            if count >= need:
                resume = k * step_s
                break
    around = ([before[-1]] if before else [t_kill]) + [t for t in after if t <= t_kill + horizon_s]
    gaps = [b - a for a, b in zip(around, around[1:], strict=False)]
    return {
        "pre_rate": round(pre_rate, 2),
        "resume_s": None if resume is None else round(resume, 3),
        "max_gap_s": round(max(gaps), 4) if gaps else None,
        "first_after_s": round(after[0] - t_kill, 4) if after else None,
        "definition": f"resume_s: first delay d with completions in [kill+d, kill+d+{probe_s}s) >= {fraction} x "
                      f"the rate of the {pre_s}s before the kill",
    }


# -- processes ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (seconds), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class CpuSampler:
    """CPU time of a set of processes between two instants."""

    def __init__(self):
        self.marks: list[tuple[float, dict[str, float | None]]] = []

    def sample(self, pids: dict[str, int]) -> None:
        self.marks.append((time.monotonic(), {name: cpu_seconds(pid) for name, pid in pids.items()}))

    def shares(self) -> dict[str, float] | None:
        """CPU seconds per wall second of each process between the first and the last sample."""
        if len(self.marks) < 2:
            return None
        (t0, a), (t1, b) = self.marks[0], self.marks[-1]
        wall = t1 - t0
        out = {}
        for name in a:
            if a[name] is not None and b.get(name) is not None and wall > 0:
                out[name] = round((b[name] - a[name]) / wall, 4)
        out["_wall_s"] = round(wall, 3)
        return out


def kill_group(process: subprocess.Popen) -> None:
    """End a job started with ``start_new_session=True`` (and everything in its session)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def descendants(pid: int) -> list[Any]:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


# -- campaigns ---------------------------------------------------------------------------------


class Live:
    """A campaign while it runs: its logs read incrementally, its rank pids, timed actions."""

    def __init__(self, state: Path, process: subprocess.Popen):
        self.state = Path(state)
        self.process = process
        self.tail = LogFollower(self.state / "logs")
        self.pids: dict[int, int] = {}
        self.roles: dict[int, str] = {}
        self.t0: float | None = None  # first generation-start of generation 0 (wall time)
        self.notes: dict[str, Any] = {}

    def poll(self) -> None:
        for event in self.tail.poll():
            kind = event.get("event")
            if kind == Event.STARTUP:
                self.pids[event["rank"]] = event["pid"]
            elif kind == Event.GENERATION_START:
                if event["generation"] == 0:
                    self.t0 = event["t"] if self.t0 is None else min(self.t0, event["t"])
                self.roles[event["rank"]] = event["role"]

    def job_pids(self) -> dict[str, int]:
        """Rank processes (``rank-<stable>``) and the mpiexec/prterun processes of the job."""
        out = {f"rank-{r}": p for r, p in sorted(self.pids.items())}
        for child in descendants(self.process.pid):
            with contextlib.suppress(Exception):
                if child.name() in ("prterun", "prted", "mpiexec"):
                    out[child.name()] = child.pid
        return out


Action = tuple[float, Callable[[Live], None]]


def run_campaign(state: Path, workload: Workload, *, ranks: int, spares: int, per_master: int, deadline: float,
                 schedule: str = "", ulfm: bool = True, timeouts: dict[str, float] | None = None,
                 actions: list[Action] | None = None, seed: int = 0) -> dict[str, Any]:
    """``symcc-ulfm launch --json`` in a subprocess; ``actions`` run at offsets from generation 0's start.

    Returns the oracle's verdict (``launch --json``) plus ``live`` notes, the campaign window
    and the committed throughput inside it. Campaigns run to their deadline even when their
    search is exhausted earlier, so that every window is the same length.
    """
    state = Path(state)
    args = ["--ranks", str(ranks), "--warm-spares", str(spares), "--workers-per-master", str(per_master),
            "--deadline", str(deadline), "--failure-schedule", schedule, "--seed", str(seed), "--run-to-deadline",
            *workload.launch_args()]
    if not ulfm:
        args.append("--no-ulfm")
    for key, value in sorted((timeouts or {}).items()):
        args += ["--timeout", f"{key}={value}"]
    state.parent.mkdir(parents=True, exist_ok=True)
    out_path, err_path = state.parent / f"{state.name}.stdout", state.parent / f"{state.name}.stderr"
    pending = sorted(actions or [], key=lambda a: a[0])
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        process = launch_process.start(state, args, cwd=ROOT, stdout=out, stderr=err, new_session=True)
        live = Live(state, process)
        limit = time.monotonic() + deadline + 300
        try:
            while process.poll() is None:
                if time.monotonic() > limit:
                    kill_group(process)
                    raise RuntimeError(f"campaign {state} overran its bound; killed")
                if state.exists() and (state / "logs").is_dir():
                    live.poll()
                while pending and live.t0 is not None and time.time() >= live.t0 + pending[0][0]:
                    pending.pop(0)[1](live)
                time.sleep(0.02)
        except BaseException:
            kill_group(process)
            raise
    verdict = launch_process.verdict_of(out_path.read_text(errors="replace"))
    if not verdict:
        raise RuntimeError(f"launch gave no verdict (exit {process.returncode}): "
                           f"{err_path.read_text(errors='replace')[-2000:]}")
    verdict.pop("command", None)
    events = read_events(state / "logs")
    outcome = json.loads((state / "outcome.json").read_text()) if (state / "outcome.json").exists() else None
    commits = [e["t"] for e in events if e.get("event") == Event.COMMIT]
    result = {"verdict": {k: verdict.get(k) for k in (
        "passed", "problems", "notes", "final_generation", "receipts", "promoted", "masters", "workers",
        "wal_analyzed", "wal_generated", "wal_unique", "wal_novel", "double_counted", "public_objects",
        "job_returncode", "job_seconds", "result_sha256")}, "notes": live.notes}
    if outcome is not None:
        start, window = float(outcome["started_at"]), float(outcome["deadline_s"])
        result.update(window_start=start, window_s=window, commits_in_window=round(window_rate(commits, start, window)
                                                                                   * window),
                      rate=round(window_rate(commits, start, window), 3))
    result["commit_times"] = commits
    result["events"] = events
    return result


def strip(result: dict[str, Any]) -> dict[str, Any]:
    """A campaign result without the bulky per-event lists (what goes into results.json)."""
    return {k: v for k, v in result.items() if k not in ("events", "commit_times")}


def wal_records(state: Path) -> list[dict]:
    """The WAL records of a campaign's state directory (a corrupted one is left out: the oracle reports it)."""
    from symcc_ulfm.errors import WalCorruption
    from symcc_ulfm.store.record import parse_record_file

    records = []
    for path in (Path(state) / "wal" / "records").glob("*.json"):
        with contextlib.suppress(WalCorruption, OSError):
            records.append(parse_record_file(path.read_bytes()))
    return records


def busy_share(state: Path, workers: int, window: float) -> float | None:
    """Worker-side seconds spent in ``_execute`` (WAL done manifests' ``stats.seconds``) per worker-second."""
    if not (Path(state) / "wal" / "records").is_dir() or workers <= 0:
        return None
    total = sum(float(r["manifest"]["stats"].get("seconds", 0.0)) for r in wal_records(state) if r["state"] == "done")
    return round(total / (workers * window), 4)


def reexecuted(state: Path) -> int:
    """WAL records leased more than once (work that may have run twice; it is published once)."""
    return sum(bool(record["history"]) for record in wal_records(state))


def recovery_breakdown(events: list[dict[str, Any]],
                       failures: list[tuple[float, int, int]] | None = None) -> list[dict[str, Any]]:
    """Per failure (wall time, generation, victim): failure -> first WORK of the next generation, by phase.

    ``failures`` default to the logged ``inject`` events. Phases (maximum over the ranks, seconds):
    ``detect`` (failure -> first ``recovery-start``), ``shrink``, ``discovery`` (allgather of
    stable ids + Agree), ``prepare`` (durable plan), ``attest`` (second shrink + attestation
    allgather + Agree), ``receipt`` (receipt commit + Agree), ``resplit`` (``generation-start``
    seconds of the new generation: Split + Agree), ``replay`` (``master-ready`` seconds: WAL
    replay, lease reclaim, frontier rebuild), ``dispatch`` (first ``master-ready`` -> first
    ``first-work``: the master loop's set-up, READYs, the first lease round and its syncfs);
    ``other`` is what the phases do not cover (phases are maxima over ranks, so they can overlap).
    """
    if failures is None:
        failures = [(e["t"], e["generation"], e["rank"]) for e in events if e.get("event") == Event.INJECT]
    by_kind: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for e in events:
        by_kind[e.get("event", "")].append(e)
    out = []
    for t_fail, generation, victim in failures:
        nxt = generation + 1
        first = [e["t"] for e in by_kind[Event.FIRST_WORK] if e["generation"] == nxt]
        start = [e["t"] for e in by_kind[Event.RECOVERY_START] if e["generation"] == generation and e["t"] >= t_fail - 1]
        phases: dict[str, float] = {}
        for e in by_kind[Event.RECOVERY_DONE]:
            if e["generation"] == nxt:
                for name, value in e["steps"].items():
                    phases[name] = max(phases.get(name, 0.0), value)
        resplit = [e["seconds"] for e in by_kind[Event.GENERATION_START] if e["generation"] == nxt]
        replay = [e["seconds"] for e in by_kind[Event.MASTER_READY] if e["generation"] == nxt]
        ready = [e["t"] for e in by_kind[Event.MASTER_READY] if e["generation"] == nxt]
        row = {"victim": victim, "generation": generation,
               "to_first_work_s": round(min(first) - t_fail, 4) if first else None,
               "detect_s": round(min(start) - t_fail, 4) if start else None,
               "phases_s": {k: round(v, 4) for k, v in phases.items()},
               "resplit_s": round(max(resplit), 4) if resplit else None,
               "replay_s": round(max(replay), 4) if replay else None,
               "dispatch_s": round(min(first) - min(ready), 4) if first and ready else None}
        if row["to_first_work_s"] is not None:
            covered = (row["detect_s"] or 0) + sum(phases.values()) + sum(
                row[k] or 0 for k in ("resplit_s", "replay_s", "dispatch_s"))
            row["other_s"] = round(row["to_first_work_s"] - covered, 4)
        out.append(row)
    return out


# -- statistics, profiles, sealing ---------------------------------------------------------------


def median_max(values: list[float | None]) -> dict[str, Any]:
    xs = [v for v in values if v is not None]
    return {"n": len(xs), "median": round(statistics.median(xs), 4) if xs else None,
            "max": round(max(xs), 4) if xs else None}


def pyspy() -> str | None:
    local = Path(PYTHON).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


def start_pyspy(pid: int, seconds: float, out: Path, rate: int = 100) -> subprocess.Popen | None:
    """``py-spy record`` of one process into a raw (collapsed stacks) file, idle frames included."""
    binary = pyspy()
    if binary is None:
        return None
    return subprocess.Popen([binary, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", str(rate),
                             "--format", "raw", "--output", str(out), "--nonblocking", "--idle"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


_FRAME = re.compile(r" \((?:[^():]*/)?([^/():]+):\d+\)")


def summarize_stacks(raw: str, top: int = 25) -> dict[str, Any]:
    """Inclusive and self shares of each function in py-spy's collapsed stacks (``a;b;c N`` lines)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [_FRAME.sub(r" (\1)", f) for f in stack.split(";")]
        for name in set(frames):
            inclusive[name] += n
        own[frames[-1]] += n
    share = (lambda n: round(n / total, 4)) if total else (lambda n: 0.0)
    return {"samples": total,
            "inclusive": [[name, share(n)] for name, n in inclusive.most_common(top)],
            "self": [[name, share(n)] for name, n in own.most_common(top)]}


def format_profile(title: str, summary: dict[str, Any], top: int = 18) -> str:
    lines = [f"== {title}: {summary['samples']} samples (py-spy, idle frames included)", "-- self"]
    lines += [f"{100 * s:6.1f}%  {name}" for name, s in summary["self"][:top]]
    lines.append("-- inclusive")
    lines += [f"{100 * s:6.1f}%  {name}" for name, s in summary["inclusive"][:top + 12]]
    return "\n".join(lines) + "\n"


def seal_run(run_dir: Path) -> dict[str, Any]:
    """Seal with ``symcc_ulfm.evidence.seal`` and check with ``sha256sum -c`` when it is installed."""
    from symcc_ulfm.evidence.seal import seal

    sealed = seal(run_dir)
    check = None
    if shutil.which("sha256sum"):
        done = subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS.txt"], cwd=run_dir,
                              capture_output=True, text=True, check=False)
        check = done.returncode == 0
    return {**sealed, "sha256sum_ok": check}


def leftovers() -> list[str]:
    """Processes of this benchmark still alive (mpiexec/prterun jobs, Dask workers) among our descendants."""
    found = []
    for child in descendants(os.getpid()):
        with contextlib.suppress(Exception):
            line = " ".join(child.cmdline())
            if "resource_tracker" not in line:  # multiprocessing's helper, ends with this process
                found.append(f"{child.pid} {line[:120]}")
    return found
