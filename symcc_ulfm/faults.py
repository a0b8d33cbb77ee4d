"""The fault matrix: every failure scenario, several times, the oracle deciding (``make faults``).

    python -m symcc_ulfm.faults [--repeats 3] [--only NAME ...] [--deadline 6] [--json OUT]

Each scenario is a real campaign under ``mpiexec --with-ft ulfm`` with a real process death
(from the failure schedule, or from outside: SIGSTOP past the lease timeout, SIGKILL in the
last second, the whole job killed and then resumed). A run passes when the oracle passes,
no object is lost or counted twice, and the membership outcome is the expected one. The
printed table is the evidence; the exit status is 0 only when every run passed.
"""

from __future__ import annotations

import argparse
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

SIMULATE = ["--executor", "simulate", "--executor-option", "cost_s=0.02"]


@dataclass(frozen=True)
class Scenario:
    name: str
    args: tuple[str, ...]
    expect_missing: frozenset[int] | None = None  # union of all receipts' missing sets
    expect_promoted: tuple[int, ...] | None = None
    action: str | None = None  # "sigstop:R", "kill-last-second:R", "kill-job"
    expect_epochs: int = 1


SCENARIOS = (
    Scenario("worker-exit-86", ("--failure-schedule", "0:2"), frozenset({2}), (8,)),
    Scenario("worker-sigkill", ("--failure-schedule", "0:2!"), frozenset({2}), (8,)),
    Scenario("master-mid-commit", ("--failure-schedule", "0:4@commit"), frozenset({4}), (8,)),
    Scenario("snapshot-writer-killed", ("--failure-schedule", "0:0"), frozenset({0}), (8,)),
    Scenario("spare-killed-before-promotion", ("--failure-schedule", "0:9@idle,1:2"), frozenset({9, 2}), (8,)),
    Scenario("two-in-one-generation", ("--failure-schedule", "0:2,0:5"), frozenset({2, 5}), (8, 9)),
    Scenario("killed-during-recovery", ("--failure-schedule", "0:2,0:5@recovery"), frozenset({2, 5}), (8, 9)),
    Scenario("sigstop-past-lease-timeout", ("--failure-schedule", "", "--timeout", "lease_s=2"),
             frozenset({2}), (8,), action="sigstop:2"),
    Scenario("more-failures-than-spares",
             ("--ranks", "7", "--warm-spares", "1", "--workers-per-master", "2", "--failure-schedule", "0:1,1:2"),
             frozenset({1, 2}), (6,)),
    Scenario("failure-in-last-second", ("--failure-schedule", ""), frozenset({5}), (8,),
             action="kill-last-second:5"),
    Scenario("whole-job-restart", ("--failure-schedule", ""), frozenset(), (), action="kill-job", expect_epochs=2),
)


@dataclass
class Outcome:
    scenario: str
    passed: bool
    seconds: float
    verdict: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)


def _launch(state: Path, args: list[str], timeout: float = 600) -> dict:
    command = [sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state), "--json", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    verdict = json.loads(lines[-1]) if lines else {"passed": False, "problems": [done.stderr[-2000:]]}
    verdict["exit"] = done.returncode
    return verdict


def _events(state: Path) -> list[dict]:
    rows = []
    for path in sorted((state / "logs").glob("rank-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def _wait_for(predicate: Callable[[], object], limit: float) -> object:
    end = time.time() + limit
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return None


def _pid_of(state: Path, rank: int) -> int | None:
    log = state / "logs" / f"rank-{rank}.jsonl"
    if not log.exists():
        return None
    for row in map(json.loads, log.read_text().splitlines()):
        if row["event"] == "startup":
            return row["pid"]
    return None


def _started_at(state: Path) -> float | None:
    snap = state / "membership" / "generation-0-snapshot.json"
    if not snap.exists() or not any(e["event"] == "commit" for e in _events(state)):
        return None
    return json.loads(snap.read_text())["started_at"]


def _act(action: str, state: Path, deadline_s: float) -> None:
    """External faults, applied while the campaign runs."""
    kind, _, rank_text = action.partition(":")
    started = _wait_for(lambda: _started_at(state), 120)
    if started is None:
        return
    if kind == "sigstop":
        pid = _pid_of(state, int(rank_text))
        if pid:
            os.kill(pid, signal.SIGSTOP)
    elif kind == "kill-last-second":
        time.sleep(max(0.0, started + deadline_s - 1.0 - time.time()))
        pid = _pid_of(state, int(rank_text))
        if pid:
            os.kill(pid, signal.SIGKILL)
    elif kind == "kill-job":
        time.sleep(max(0.0, started + 0.4 * deadline_s - time.time()))
        subprocess.run(["pkill", "-KILL", "-f", f"symcc_ulfm.mpi.rank {state}"], check=False)
        subprocess.run(["pkill", "-KILL", "-f", f"mpiexec.*{state}"], check=False)


def run_scenario(scenario: Scenario, workdir: Path, deadline_s: float) -> Outcome:
    state = workdir / scenario.name
    args = [*SIMULATE, "--deadline", str(deadline_s), *scenario.args]
    started = time.monotonic()
    actor = None
    if scenario.action:
        actor = threading.Thread(target=_act, args=(scenario.action, state, deadline_s), daemon=True)
        actor.start()
    verdict = _launch(state, args)
    if actor is not None:
        actor.join(timeout=5)
    reasons: list[str] = []
    if scenario.action == "kill-job":
        if verdict.get("passed"):
            reasons.append("the killed job was accepted by the oracle")
        verdict = _launch(state, [*args, "--resume"])
    if not verdict.get("passed"):
        reasons += verdict.get("problems", [])[:3] or ["oracle did not pass"]
    if verdict.get("lost_objects", 1) != 0 or verdict.get("double_counted", 1) != 0:
        reasons.append(f"lost {verdict.get('lost_objects')} / double-counted {verdict.get('double_counted')}")
    missing = frozenset(m for r in verdict.get("receipts", []) for m in r["missing"])
    if scenario.expect_missing is not None and missing != scenario.expect_missing:
        reasons.append(f"missing {sorted(missing)}, expected {sorted(scenario.expect_missing)}")
    if scenario.expect_promoted is not None and tuple(verdict.get("promoted", ())) != scenario.expect_promoted:
        reasons.append(f"promoted {verdict.get('promoted')}, expected {list(scenario.expect_promoted)}")
    if verdict.get("epochs", 1) != scenario.expect_epochs:
        reasons.append(f"{verdict.get('epochs')} epochs, expected {scenario.expect_epochs}")
    return Outcome(scenario.name, not reasons, time.monotonic() - started, verdict, reasons)


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
    parser.add_argument("--deadline", type=float, default=6.0)
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
