"""The fault matrix: every failure scenario, several times, the oracle deciding (``make faults``).

    python -m symcc_ulfm.gates.faults [--repeats 3] [--only NAME ...] [--deadline 6] [--json OUT]

Each scenario is a real campaign under ``mpiexec --with-ft ulfm`` with a real process death
(from the failure schedule, or from outside: SIGSTOP past the lease timeout, SIGKILL in the
last second, the whole job killed and then resumed), or another fault no target causes: a
hostile worker (``runtime.adversary``), a rank that raises what nobody expects, ``launch`` itself
stopped by a signal, a second launch on the same state, the disk filling up (a tmpfs the
scenario mounts; root only). A run passes when the oracle passes, no object is lost or counted
twice, and the membership outcome is the expected one; a scenario whose first job must not
pass (``resume``) passes when that job failed as expected and ``--resume`` then passed. The
printed table is the evidence; the exit status is 0 only when every run passed.

A campaign ends by its budget by count (``STOP_AFTER`` results per worker, ``launch
--stop-after``) counted from the generation a scenario names, so every fault happens and every
worker works whatever the machine's load; an external fault is applied once the campaign has
committed its first result, into a generation the budget cannot end. Only a scenario about the
deadline itself (a death in its last second) runs to ``--deadline``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..launch import json_child as launch_process
from ..store.paths import StateDir
from ..store.runlog import Event, read_events, read_log

SIMULATE = ["--executor", "simulate", "--executor-option", "cost_s=0.02"]
STOP_AFTER = 3  # results per worker that end a scenario's campaign (core.master.termination)
SAFETY_DEADLINE_S = 120.0  # bounds a budget-ended campaign that went wrong
HYBRID = ("--worker-kinds", "simfuzz:1,simulate:2", "--keep", "novel", "--slice", "0.5")


@dataclass(frozen=True)
class Scenario:
    name: str
    args: tuple[str, ...]
    expect_missing: frozenset[int] | None = None  # union of all receipts' missing sets
    expect_promoted: tuple[int, ...] | None = None
    action: str | None = None  # "sigstop:R", "kill-last-second:R", "kill-job", "launch-signal:SIG", "second-launch", "disk-full"
    expect_epochs: int = 1
    adversary: str | None = None  # SYMCC_ULFM_TEST_ADVERSARY of the job (runtime.adversary)
    resume_after: int | None = None  # the first launch's expected exit status; then --resume must pass
    needs_root: bool = False  # mounts a tmpfs: skipped, and said so, when not root
    counted_from: int | None = 0  # the generation from which the budget ends the campaign; None: the deadline


SCENARIOS = (
    Scenario("worker-exit-86", ("--failure-schedule", "0:2"), frozenset({2}), (8,)),
    Scenario("worker-sigkill", ("--failure-schedule", "0:2!"), frozenset({2}), (8,)),
    Scenario("master-mid-commit", ("--failure-schedule", "0:4@commit"), frozenset({4}), (8,)),
    Scenario("snapshot-writer-killed", ("--failure-schedule", "0:0"), frozenset({0}), (8,)),
    Scenario("spare-killed-before-promotion", ("--failure-schedule", "0:9@idle,1:2"), frozenset({9, 2}), (8,)),
    Scenario("two-in-one-generation", ("--failure-schedule", "0:2,0:5"), frozenset({2, 5}), (8, 9)),
    Scenario("killed-during-recovery", ("--failure-schedule", "0:2,0:5@recovery"), frozenset({2, 5}), (8, 9)),
    Scenario("sigstop-past-lease-timeout", ("--failure-schedule", "", "--timeout", "lease_s=2"),
             frozenset({2}), (8,), action="sigstop:2", counted_from=1),
    Scenario("more-failures-than-spares",
             ("--ranks", "7", "--warm-spares", "1", "--workers-per-master", "2", "--failure-schedule", "0:1,1:2"),
             frozenset({1, 2}), (6,)),
    Scenario("failure-in-last-second", ("--failure-schedule", ""), frozenset({5}), (8,),
             action="kill-last-second:5", counted_from=None),
    Scenario("whole-job-restart", ("--failure-schedule", ""), frozenset(), (), action="kill-job", expect_epochs=2,
             counted_from=1),
    Scenario("half-the-ranks-sigkilled", ("--failure-schedule", "0:1!,0:2!,0:3!,0:5!,0:6!"),
             frozenset({1, 2, 3, 5, 6}), (8, 9)),
    Scenario("rank-raises-unexpectedly", ("--failure-schedule", ""), frozenset({1}), (8,), adversary="1:crash"),
    Scenario("hostile-staged-objects", ("--failure-schedule", ""), frozenset(), (), adversary="1:staged"),
    Scenario("message-flood", ("--failure-schedule", ""), frozenset(), (), adversary="1:flood"),
    # the first job, which the budget cannot end, is stopped by SIGTERM once the second launch was refused
    Scenario("second-launch-refused", ("--failure-schedule", ""), frozenset(), (), action="second-launch",
             expect_epochs=2, resume_after=128 + signal.SIGTERM, counted_from=1),
    Scenario("launch-sigterm-then-resume", ("--failure-schedule", ""), frozenset(), (),
             action="launch-signal:SIGTERM", expect_epochs=2, resume_after=128 + signal.SIGTERM, counted_from=1),
    Scenario("launch-sigkill-then-resume", ("--failure-schedule", ""), frozenset(), (),
             action="launch-signal:SIGKILL", expect_epochs=2, resume_after=-signal.SIGKILL, counted_from=1),
    # hybrid campaigns: a fuzzer kind (simfuzz, the stand-in) beside the analysis workers (core.kinds)
    Scenario("fuzzer-worker-killed", ("--failure-schedule", "0:1", *HYBRID), frozenset({1}), (8,)),
    Scenario("master-killed-publishing-slices", ("--failure-schedule", "0:4@commit", "--worker-kinds", "simfuzz:3",
                                                 "--keep", "novel", "--slice", "0.5"), frozenset({4}), (8,)),
    Scenario("hybrid-whole-job-restart", ("--failure-schedule", "", *HYBRID), frozenset(), (), action="kill-job",
             expect_epochs=2, counted_from=1),
    # which ranks meet ENOSPC first decides whether some are recovered before the job stops
    # (docs/bad-input.md: a store failure ends its rank, the others recover): any shape, then exit 7
    Scenario("disk-full-then-resume", ("--failure-schedule", ""), None, None, action="disk-full",
             expect_epochs=2, resume_after=7, needs_root=True, counted_from=1),
)
TMPFS_SIZE = "48m"


@dataclass
class Outcome:
    scenario: str
    passed: bool
    seconds: float
    verdict: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)


def _launch(state: Path, args: list[str], timeout: float = 600, env: dict | None = None,
            started: list | None = None) -> dict:
    """Run ``launch``; ``started`` receives its process (for the actions that signal it)."""
    process = launch_process.start(state, args, env=env)
    if started is not None:
        started.append(process)
    done = launch_process.finish(process, timeout)
    verdict = done.verdict or {"passed": False, "problems": [done.stderr[-2000:]]}
    verdict["exit"] = done.returncode
    verdict["stderr"] = done.stderr[-2000:]
    return verdict


def _wait_for(predicate: Callable[[], object], limit: float) -> object:
    end = time.time() + limit
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return None


def _pid_of(state: Path, rank: int) -> int | None:
    for row in read_log(StateDir(state).rank_log(rank)):
        if row["event"] == Event.STARTUP:
            return row["pid"]
    return None


def _started_at(state: Path) -> float | None:
    snap = StateDir(state).snapshot(0)
    if not snap.exists() or not read_events(StateDir(state).logs, Event.COMMIT):
        return None
    return json.loads(snap.read_text())["started_at"]


def _act(action: str, state: Path, deadline_s: float, launched: list, seen: dict) -> None:
    """External faults, applied once the campaign committed its first result; ``seen`` receives
    what they observed."""
    kind, _, rank_text = action.partition(":")
    started = _wait_for(lambda: _started_at(state), 120)
    if started is None:
        return
    if kind == "launch-signal":
        launched[0].send_signal(getattr(signal, rank_text))
    elif kind == "second-launch":
        seen["second"] = _launch(state, [*SIMULATE, "--failure-schedule", "", "--resume"])
        launched[0].send_signal(signal.SIGTERM)
    elif kind == "disk-full":
        seen["filler"] = _fill(state.parent)
    if kind == "sigstop":
        pid = _pid_of(state, int(rank_text))
        if pid:
            os.kill(pid, signal.SIGSTOP)
    elif kind == "kill-last-second":
        time.sleep(max(0.0, started + deadline_s - 1.0 - time.time()))
        pid = _pid_of(state, int(rank_text))
        if pid:
            os.kill(pid, signal.SIGKILL)
    elif kind == "kill-job":  # stopped first, so that no rank sees another die and recovers meanwhile
        for signal_name in ("-STOP", "-KILL"):
            subprocess.run(["pkill", signal_name, "-f", f"symcc_ulfm.mpi.rank {state}"], check=False)
        subprocess.run(["pkill", "-KILL", "-f", f"mpiexec.*{state}"], check=False)


def _fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` (a small tmpfs) to the last byte."""
    filler = directory / "filler"
    with open(filler, "wb") as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
    return filler


@contextlib.contextmanager
def _tmpfs(path: Path):
    """A tmpfs of ``TMPFS_SIZE`` mounted at ``path`` for the scenario (root only)."""
    path.mkdir(parents=True, mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def run_scenario(scenario: Scenario, workdir: Path, deadline_s: float) -> Outcome:
    if scenario.action == "disk-full":
        with _tmpfs(workdir / scenario.name) as mount:
            return _run_scenario(scenario, mount / "state", deadline_s)
    return _run_scenario(scenario, workdir / scenario.name, deadline_s)


def _run_scenario(scenario: Scenario, state: Path, deadline_s: float) -> Outcome:
    if scenario.counted_from is None:
        window = ["--deadline", str(deadline_s)]
    else:
        window = ["--stop-after", str(STOP_AFTER), "--stop-from", str(scenario.counted_from),
                  "--deadline", str(SAFETY_DEADLINE_S)]
    args = [*SIMULATE, *window, *scenario.args]
    env = {"SYMCC_ULFM_TEST_ADVERSARY": scenario.adversary} if scenario.adversary else None
    started = time.monotonic()
    actor, launched, seen = None, [], {}
    if scenario.action:
        actor = threading.Thread(target=_act, args=(scenario.action, state, deadline_s, launched, seen), daemon=True)
        actor.start()
    verdict = _launch(state, args, env=env, started=launched)
    if actor is not None:
        actor.join(timeout=60)
    reasons: list[str] = []
    if scenario.action == "kill-job":
        if verdict.get("passed"):
            reasons.append("the killed job was accepted by the oracle")
        verdict = _launch(state, [*args, "--resume"])
    if scenario.action == "second-launch" and seen.get("second", {}).get("exit") != 2:
        reasons.append(f"a second launch on the running campaign exited {seen.get('second', {}).get('exit')}, not 2")
    if scenario.resume_after is not None:
        if verdict["exit"] != scenario.resume_after:
            reasons.append(f"the first launch exited {verdict['exit']}, expected {scenario.resume_after}: "
                           f"{verdict['stderr'][-300:]}")
        if "filler" in seen:
            seen["filler"].unlink()
        verdict = _launch(state, [*args, "--resume"])
    if not verdict.get("passed"):
        reasons += verdict.get("problems", [])[:3] or ["oracle did not pass"]
        reasons.append(f"launch exit {verdict.get('exit')}; job exit {verdict.get('job_returncode')} after "
                       f"{verdict.get('job_seconds')} s; rank errors {verdict.get('rank_errors', [])[:3]}; "
                       f"notes {verdict.get('notes', [])[:3]}")
        with contextlib.suppress(OSError):
            reasons.append("job output: " + StateDir(state).job_output.read_text(errors="replace")[-1500:])
    if verdict.get("lost_objects", 1) != 0 or verdict.get("double_counted", 1) != 0:
        reasons.append(f"lost {verdict.get('lost_objects')} / double-counted {verdict.get('double_counted')}")
    missing = frozenset(m for r in verdict.get("receipts", []) for m in r["missing"])
    if scenario.expect_missing is not None and missing != scenario.expect_missing:
        reasons.append(f"missing {sorted(missing)}, expected {sorted(scenario.expect_missing)}")
    if scenario.expect_promoted is not None and tuple(verdict.get("promoted", ())) != scenario.expect_promoted:
        reasons.append(f"promoted {verdict.get('promoted')}, expected {list(scenario.expect_promoted)}")
    if verdict.get("epochs", 1) != scenario.expect_epochs:
        reasons.append(f"{verdict.get('epochs')} epochs, expected {scenario.expect_epochs}")
    ended = _outcome_status(state)
    if scenario.counted_from is not None and ended != "budget-reached":
        reasons.append(f"the campaign ended {ended!r}, not by its budget (budget-reached)")
    return Outcome(scenario.name, not reasons, time.monotonic() - started, verdict, reasons)


def _outcome_status(state: Path) -> str | None:
    path = StateDir(state).outcome
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text())["status"]
    return None


def format_table(outcomes: list[Outcome]) -> str:
    by_name: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_name.setdefault(outcome.scenario, []).append(outcome)
    header = f"{'scenario':<32} {'runs':>4} {'passed':>6} {'lost':>5} {'dup':>4} {'generations':>11} {'median s':>8}"
    lines = [header, "-" * len(header)]
    for name, rows in by_name.items():
        lost = sum(r.verdict.get("lost_objects", 0) or 0 for r in rows)
        dup = sum(r.verdict.get("double_counted", 0) or 0 for r in rows)
        gens = sorted({r.verdict.get("final_generation") for r in rows}, key=str)
        lines.append(
            f"{name:<32} {len(rows):>4} {sum(r.passed for r in rows):>6} {lost:>5} {dup:>4} "
            f"{','.join(map(str, gens)):>11} {statistics.median(r.seconds for r in rows):>8.1f}"
        )
        lines += [f"    run {i + 1}: {reason}" for i, r in enumerate(rows) for reason in r.reasons]
    total = len(outcomes)
    lines.append(f"{sum(o.passed for o in outcomes)}/{total} runs passed; lost objects "
                 f"{sum(o.verdict.get('lost_objects', 0) or 0 for o in outcomes)}, double-counted "
                 f"{sum(o.verdict.get('double_counted', 0) or 0 for o in outcomes)}")
    return "\n".join(lines)


def run_matrix(names: list[str] | None, repeats: int, deadline_s: float, workdir: Path) -> list[Outcome]:
    chosen = [s for s in SCENARIOS if not names or s.name in names]
    if os.geteuid() != 0:
        print(f"skipped (they need root): {[s.name for s in chosen if s.needs_root]}", file=sys.stderr)
        chosen = [s for s in chosen if not s.needs_root]
    unknown = sorted(set(names or ()) - {s.name for s in SCENARIOS})
    if unknown:
        raise SystemExit(f"unknown scenario(s) {unknown}; known: {[s.name for s in SCENARIOS]}")
    outcomes = []
    for repeat in range(repeats):
        for scenario in chosen:
            outcomes.append(run_scenario(scenario, workdir / f"repeat-{repeat}", deadline_s))
            print(f"{scenario.name} run {repeat + 1}: {'pass' if outcomes[-1].passed else 'FAIL'} "
                  f"({outcomes[-1].seconds:.1f} s)", file=sys.stderr, flush=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="scenario names (default: all)")
    parser.add_argument("--deadline", type=float, default=6.0,
                        help="the window of the scenarios about the deadline itself (the others end by a budget)")
    parser.add_argument("--workdir", help="keep the state directories here (default: a temporary directory)")
    parser.add_argument("--json", help="also write the outcomes as JSON to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="symcc-faults-") as tmp:
        outcomes = run_matrix(args.only, args.repeats, args.deadline, Path(args.workdir or tmp))
    print(format_table(outcomes))
    if args.json:
        Path(args.json).write_text(json.dumps([o.__dict__ for o in outcomes], indent=1, default=str))
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
