"""Runtime benchmark (printed, not asserted): recovery time per failure and FT overhead.

    .venv/bin/python benchmarks/bench_runtime.py [--deadline 10] [--repeats 1]

* recovery time = the victim's injection -> the first WORK dispatched in the next generation,
  with the per-step breakdown the ranks logged;
* throughput (inputs analyzed per second) with the ULFM path and with ``--no-ulfm``, same
  seed, target and executor, measured in the same process run, reported as a ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def launch(state: Path, *args: str) -> dict:
    command = [sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state), "--json", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"launch failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def events(state: Path) -> list[dict]:
    rows = []
    for path in sorted((state / "logs").glob("rank-*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


def recovery_times(state: Path) -> list[dict]:
    rows = events(state)
    out = []
    for inject in (e for e in rows if e["event"] == "inject"):
        nxt = inject["generation"] + 1
        first = [e["t"] for e in rows if e["event"] == "first-work" and e["generation"] == nxt]
        done = [e for e in rows if e["event"] == "recovery-done" and e["generation"] == nxt]
        detect = [e["t"] for e in rows if e["event"] == "recovery-start" and e["generation"] == inject["generation"]]
        steps: dict[str, float] = {}
        for e in done:
            for k, v in e["steps"].items():
                steps[k] = max(steps.get(k, 0.0), v)
        out.append({
            "victim": inject["rank"],
            "generation": inject["generation"],
            "to_first_work_s": (min(first) - inject["t"]) if first else None,
            "detect_s": (min(detect) - inject["t"]) if detect else None,
            "steps_max_s": steps,
        })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deadline", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cost", type=float, default=0.02, help="simulate executor cost per input (s)")
    args = parser.parse_args()
    common = ["--executor", "simulate", "--executor-option", f"cost_s={args.cost}", "--deadline", str(args.deadline)]
    recoveries, ft, plain = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            base = Path(tmp) / str(r)
            plain.append(launch(base / "plain", *common, "--failure-schedule", "", "--no-ulfm")["wal_analyzed"])
            ft.append(launch(base / "ft", *common, "--failure-schedule", "")["wal_analyzed"])
            verdict = launch(base / "rec", *common, "--failure-schedule", "0:2,1:3")
            if not verdict["passed"]:
                raise SystemExit(f"reference run failed its oracle: {verdict['problems']}")
            recoveries += recovery_times(base / "rec")
    times = [r["to_first_work_s"] for r in recoveries if r["to_first_work_s"] is not None]
    print("recovery (failure -> first WORK of the next generation), 10 ranks, simulate:")
    for r in recoveries:
        steps = ", ".join(f"{k} {1000 * v:.1f} ms" for k, v in r["steps_max_s"].items())
        detect = f"{1000 * r['detect_s']:.1f} ms" if r["detect_s"] is not None else "n/a"
        print(f"  gen {r['generation']} victim {r['victim']}: {1000 * r['to_first_work_s']:.1f} ms "
              f"(detect {detect}; {steps})")
    if times:
        print(f"  median {1000 * statistics.median(times):.1f} ms, max {1000 * max(times):.1f} ms over {len(times)}")
    rate_ft = statistics.mean(ft) / args.deadline
    rate_plain = statistics.mean(plain) / args.deadline
    print(f"throughput: ULFM {rate_ft:.1f} inputs/s, --no-ulfm {rate_plain:.1f} inputs/s, "
          f"ratio {rate_ft / rate_plain:.3f}")


if __name__ == "__main__":
    main()
