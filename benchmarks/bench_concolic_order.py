"""Concolic work by seed vs by edge (``launch --concolic-order``): the built-in Python targets, count budgets.

For every built-in target and both orders, one campaign: one master and two ``concolic`` workers,
``--keep novel``, a budget by count (``--stop-after N``: N analyses per worker), ended earlier when
the search is exhausted. Each analysis measures exactly ``--mutations`` hybrid mutants
(``mutate_clock`` false), so the work a cell is asked to do does not depend on the machine's speed.
Per cell: the endpoint edges (launch's re-measurement of the final corpus), the analyses, the inputs
skipped (edge order: every edge of their paths analyzed), the ids of the record of tried branches in
the manifests, how the campaign ended, wall seconds and the CPU seconds of the campaign's processes
(``getrusage`` of the launch child and its descendants). ``--rounds`` runs every cell again, the
orders reversed from one round to the next; the table shows each round's figure (``a/b``).

    python -m benchmarks.bench_concolic_order --stop-after 40 --rounds 2 --out /tmp/bench-order

It prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

from symcc_ulfm.launch import json_child
from symcc_ulfm.store.corpus import Corpus
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.runlog import read_log
from symcc_ulfm.store.wal import WorkWAL
from symcc_ulfm.targets import names

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ORDERS = ("seed", "edge")
EXTRA_S = 180  # beyond the deadline: the job's start, the endpoint measurement and the oracle


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cell(target: str, order: str, stop_after: int, mutations: int, deadline: float, state: Path) -> dict:
    args = ["--target", target, "--executor", "concolic", "--concolic-order", order, "--keep", "novel",
            "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2", "--failure-schedule", "",
            "--deadline", f"{deadline:g}", "--stop-after", str(stop_after),
            "--executor-option", "mutate_clock=false", "--executor-option", f"mutations={mutations}"]
    cpu, started = _children_cpu(), time.monotonic()
    done = json_child.finish(json_child.start(state, args, cwd=ROOT, new_session=True), timeout=deadline + EXTRA_S)
    wall, cpu = time.monotonic() - started, _children_cpu() - cpu
    paths = StateDir(state)
    endpoint = json.loads(paths.endpoint.read_text()) if paths.endpoint.exists() else {}
    stops = [e for e in read_log(paths.rank_log(0)) if e.get("event") == "master-stop"]
    corpus = Corpus(paths.corpus, paths.modes.corpus, paths.modes.snapshot)
    manifests = [r["manifest"] for r in WorkWAL(paths.wal, paths.root, corpus, paths.modes.snapshot).records()
                 if r["state"] == "done"]
    return {"target": target, "order": order, "passed": bool(done.verdict.get("passed")),
            "status": json.loads(paths.outcome.read_text()).get("status") if paths.outcome.exists() else None,
            "edges": endpoint.get("edges"), "analyzed": done.verdict.get("wal_analyzed"),
            "skipped": stops[-1]["totals"].get("skipped", 0) if stops else None,
            "tried_ids": sum(len(m.get("tried", ())) for m in manifests), "objects": done.verdict.get("public_objects"),
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "exit": done.returncode}


def table(cells: list[dict], targets: list[str]) -> str:
    fields = ("edges", "analyzed", "skipped", "tried_ids", "objects", "cpu_s", "wall_s", "status")
    lines = ["| target | order | " + " | ".join(fields) + " |", "|" + " --- |" * (len(fields) + 2)]
    for target in targets:
        for order in ORDERS:
            rounds = [c for c in cells if (c["target"], c["order"]) == (target, order)]
            shown = ["/".join(str(c[f]) for c in rounds) for f in fields]
            lines.append(f"| {target} | {order} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(names()))
    parser.add_argument("--stop-after", type=int, default=40, metavar="N", help="analyses per worker")
    parser.add_argument("--mutations", type=int, default=64, help="hybrid mutants per analysis")
    parser.add_argument("--deadline", type=float, default=600.0, help="bounds a cell; the budget should end it")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="a new directory for the cells' state directories")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True)
    targets = args.targets.split(",")
    cells = []
    for rnd in range(args.rounds):
        for target in targets:
            for order in ORDERS if rnd % 2 == 0 else reversed(ORDERS):
                done = cell(target, order, args.stop_after, args.mutations, args.deadline,
                            args.out / f"round{rnd}" / f"{target}-{order}")
                cells.append(done)
                print(json.dumps(done), flush=True)
    print(f"\nload average at the end: {os.getloadavg()}")
    print(table(cells, targets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
