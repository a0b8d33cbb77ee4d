"""Benchmark of the ``concolic`` executor on every built-in target (prints, asserts nothing).

    .venv/bin/python benchmarks/bench_concolic.py [--seconds 10] [--targets tlv,magic32]

Per target: time until an input reaching the deepest branch was first measured, target
executions per second, the share of wall time spent in z3, retention (novel / generated),
coverage edges, solver queries per second, and the findings. Each target gets a fresh executor,
contained as a campaign runs it (the built-in targets' bugs include a SIGSEGV), and explores for
the full budget (no early stop), so the rates describe a saturated search.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from symcc_ulfm.executors import create  # noqa: E402
from symcc_ulfm.targets import names, resolve_target  # noqa: E402
from symcc_ulfm.tools.explore import explore  # noqa: E402


def bench(name: str, seconds: float) -> dict:
    info = resolve_target(name)
    executor = create("concolic", name)
    measure_many = executor.measure_many
    start = time.monotonic()
    first: list[float] = []

    def measured(inputs, budget_s=None):
        results = measure_many(inputs, budget_s)
        if not first and any(m is not None and m.returned == info.deep for m in results):
            first.append(time.monotonic() - start)
        return results

    executor.measure_many = measured
    try:
        with tempfile.TemporaryDirectory() as out:
            stats = explore(executor, seconds, Path(out))
    finally:
        executor.close()
    stats["deepest_s"] = first[0] if first else None
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--targets", default=",".join(names()))
    args = parser.parse_args(argv)
    header = (f"{'target':<10} {'deepest_s':>9} {'exec/s':>8} {'solver%':>8} {'novel/gen':>11} "
              f"{'retention':>9} {'edges':>6} {'queries/s':>9} {'seconds':>7}  findings")
    print(header)
    print("-" * len(header))
    for name in args.targets.split(","):
        s = bench(name, args.seconds)
        deepest = f"{s['deepest_s']:.3f}" if s["deepest_s"] is not None else "-"
        share = 100.0 * s["solver_seconds"] / s["seconds"] if s["seconds"] else 0.0
        retention = s["novel"] / s["generated"] if s["generated"] else 0.0
        print(f"{name:<10} {deepest:>9} {s['executions_per_s']:>8.0f} {share:>7.1f}% "
              f"{s['novel']:>5}/{s['generated']:<5} {retention:>9.3f} {s['edges']:>6} "
              f"{s['solver_queries_per_s']:>9.0f} {s['seconds']:>7.2f}  "
              + (", ".join(f"{f['kind']} +{f['first_seen_s']:.1f} s" for f in s["findings"]) or "-"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
