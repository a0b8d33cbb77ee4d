"""Run real campaigns for tests: `symcc-ulfm launch` in a subprocess, then read the verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from symcc_ulfm.core.coverage import edge_of, is_branch_coverage
from symcc_ulfm.executors.simulate import SimulateExecutor
from symcc_ulfm.launch import json_child as launch_process
from symcc_ulfm.store.record import parse_record_file
from symcc_ulfm.store.runlog import read_events

FAST_SIMULATE = ["--executor", "simulate", "--executor-option", "cost_s=0.02"]
# a campaign that ends by a count, whatever the load: every worker of the generation the schedule
# leads to commits that many results; the deadline only bounds a run that goes wrong
BY_COUNT = ["--stop-after", "3", "--deadline", "240"]
# a finite simulate search: every child is one of 40 inputs, so a campaign ends by exhaustion
# (outcome "exhausted") with the counts of simulate_closure, whatever the load; its deadline is
# only a bound that a passing run never reaches
FINITE = {"space": 40}


@dataclass
class Launch:
    returncode: int
    verdict: dict
    stderr: str
    state: Path

    @property
    def outcome(self) -> str | None:
        """How the ranks ended the campaign (``outcome.json``'s status), None when they did not."""
        path = self.state / "outcome.json"
        return json.loads(path.read_text())["status"] if path.exists() else None

    def log_events(self, event: str | None = None) -> list[dict]:
        return [row for row in read_events(self.state / "logs") if event is None or row["event"] == event]


def launch(state: Path, *args: str, env: dict | None = None, timeout: float = 300) -> Launch:
    done = launch_process.run(state, args, timeout=timeout, env=env)
    return Launch(done.returncode, done.verdict, done.stderr, state)


def status_json(state: Path) -> dict:
    """``symcc-ulfm status STATE --json``, which must exit 0."""
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "status", str(state), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def simulate_closure(options: dict) -> dict:
    """What a campaign that exhausts a simulate search (``options``, ``stop_when_exhausted``) has
    analyzed, generated and published: the closure of the seeds under ``run``, which does not depend
    on the order in which the inputs are analyzed (``novel`` does, so it is not here)."""
    executor = SimulateExecutor(None, {**options, "cost_s": 0})
    seeds = executor.seeds()
    seen, queue, generated = set(seeds), list(seeds), 0
    while queue:
        children = set(executor.run(queue.pop()).candidates)
        generated += len(children)
        queue += sorted(children - seen)
        seen |= children
    return {"analyzed": len(seen), "generated": generated, "unique": len(seen - set(seeds))}


def wal_accounts(state: Path) -> tuple[dict[str, int], set[int]]:
    """What the WAL's done records account for, read here apart from ``status``: the executions by
    the kind each manifest names, and the edges of the objects they published."""
    by_kind: dict[str, int] = {}
    edges: set[int] = set()
    for path in (state / "wal" / "records").glob("*.json"):
        record = parse_record_file(path.read_bytes())
        if record["state"] != "done":
            continue
        manifest = record["manifest"]
        by_kind[manifest["kind"]] = by_kind.get(manifest["kind"], 0) + manifest["stats"].get("executions", 0)
        claimed = set(record["done"]["claimed"])
        edges.update(edge_of(c) for obj in manifest["objects"] if obj["sha256"] in claimed
                     for c in obj["coverage"] if not is_branch_coverage(c))
    return by_kind, edges
