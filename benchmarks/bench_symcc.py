"""Real SymCC on the C targets: the one-process loop, our campaign and upstream's driver (prints, asserts nothing).

    SYMCC_CC=/path/to/symcc [UPSTREAM_DRIVER=/path/to/util/pure_concolic_execution.sh] \\
        .venv/bin/python benchmarks/bench_symcc.py [--seconds 40] [--rounds 2] [--workers 3,7] [--variants map,afl]
    SYMCC_CC=/path/to/symcc .venv/bin/python benchmarks/bench_symcc.py --exec-cost 40

Every target of ``benchmarks/c_targets/`` is built three ways (SymCC, plain gcc for replay,
afl-cc for edges). Each round runs every system once per target for ``--seconds``, the order
reversed from one round to the next (ABC CBA ...). Per system: analyzed inputs/s and test
cases SymCC wrote per second (both over the whole window), the corpus it ended with (seeds
included), its distinct behaviours (distinct (stdout, exit status) pairs of the plain build
over the corpus) and its AFL edges (``afl-showmap -C`` over the corpus). Everything a run
left is kept in ``--out`` (default ``runs/symcc-<time>/``): ``results.json``, ``table.txt``,
the corpora, the campaigns' state and the upstream driver's log.

``--exec-cost N`` instead measures what one SymCC execution of ``hdr_opcode`` on its seed costs:
N direct ``Popen`` runs (as the loop does them) against N ``run()`` calls of the symcc executor
as a campaign worker hosts it (in its sandbox child), alternating in blocks of 5, wall time and
CPU time (the runs' and, for the executor, the sandbox child's and this process's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.c_bench import (  # noqa: E402
    RUN_TIMEOUT_S,
    afl_edges,
    behaviours,
    build_single,
    children_cpu,
    corpus_inputs,
    self_cpu,
    sha256,
    stop_group,
    symcc_env,
    symcc_run,
    without_symcc_vars,
)

# One valid, unremarkable message per target, zero-padded: SymCC never changes an input's length.
SEEDS = {
    "hdr_opcode": "53510101a501",  # version 1, body = ping
    "tlv_records": "5456010405000000",  # one INT record, 5
    "crash_dispatch": "43460002efbe0000",  # nop
}
SEED_LENGTH = 48


@dataclass
class Measurement:
    target: str
    system: str
    round: int
    seconds: float
    analyzed: int
    generated: int | None  # files SymCC wrote; None where the driver does not say
    cpu_s: float
    corpus: int = 0
    behaviours: int = 0
    crashes: int = 0
    edges: int = 0
    notes: dict = field(default_factory=dict)


def build(symcc_cc: str, name: str, out: Path) -> dict[str, Path]:
    """The SymCC, plain gcc and afl-cc builds of one target."""
    return build_single(symcc_cc, name, out, ("symcc", "plain", "afl"))


def write_seed(name: str, out: Path) -> Path:
    seed_dir = out / "seeds" / name
    seed_dir.mkdir(parents=True)
    seed = bytes.fromhex(SEEDS[name]).ljust(SEED_LENGTH, b"\0")
    (seed_dir / "seed0").write_bytes(seed)
    return seed_dir


def run_loop(name: str, binary: Path, seed_dir: Path, seconds: float, run_dir: Path, rnd: int,
             shared_map: bool) -> Measurement:
    """Pop an input, run SymCC on it, queue every test case not seen before (by SHA-256), repeat.

    With ``shared_map`` every run gets the same ``SYMCC_AFL_COVERAGE_MAP`` file, where QSYM keeps
    the branches it has already tried to flip, so later runs skip them (upstream's drivers and the
    symcc executor give it none, so each run starts from nothing).
    """
    env = symcc_env(run_dir)
    if shared_map:
        env["SYMCC_AFL_COVERAGE_MAP"] = str(run_dir / "coverage.map")
    corpus = run_dir / "corpus"
    corpus.mkdir(parents=True)
    queue = deque(path.read_bytes() for path in sorted(seed_dir.iterdir()))
    seen = {sha256(data) for data in queue}
    analyzed = generated = 0
    cpu0 = children_cpu() + self_cpu()
    start = time.monotonic()
    deadline = start + seconds
    while queue and (remaining := deadline - time.monotonic()) > 0:
        outputs = symcc_run(binary, queue.popleft(), run_dir, min(RUN_TIMEOUT_S, remaining), env)
        if outputs is None:
            continue
        analyzed += 1
        generated += len(outputs)
        for data in outputs:
            digest = sha256(data)
            if digest not in seen:
                seen.add(digest)
                queue.append(data)
                (corpus / digest).write_bytes(data)
    notes = {"queue_left": len(queue), "exhausted_after_s": None if queue else round(time.monotonic() - start, 3)}
    system = "loop-map" if shared_map else "loop"
    return Measurement(name, system, rnd, seconds, analyzed, generated, children_cpu() + self_cpu() - cpu0,
                       notes=notes)


def run_campaign(name: str, binaries: dict[str, Path], seed_dir: Path, seconds: float, run_dir: Path, rnd: int,
                 workers: int, variant: str) -> Measurement:
    """``variant``: "" (content dedup, as the loops), "map" (a QSYM coverage map per worker) or
    "afl" (the AFL twin's coverage, measured in batches)."""
    sys.path.insert(0, str(ROOT))
    from symcc_ulfm.launch import json_child as launch_process

    state = run_dir / "state"
    options = [f"seeds={seed_dir}"]
    if variant == "map":
        options.append('env={"SYMCC_AFL_COVERAGE_MAP": "qsym.map"}')
    elif variant == "afl":
        options.append(f"afl_binary={binaries['afl']}")
    args = [
        "--executor", "symcc", "--target", str(binaries["symcc"]),
        *(arg for option in options for arg in ("--executor-option", option)),
        "--failure-schedule", "", "--deadline", str(seconds),
        "--ranks", str(workers + 1), "--warm-spares", "0", "--workers-per-master", str(workers),
    ]
    cpu0 = children_cpu()
    proc = launch_process.run(state, args, cwd=ROOT)
    cpu = children_cpu() - cpu0
    (run_dir / "launch.stdout").write_text(proc.stdout)
    (run_dir / "launch.stderr").write_text(proc.stderr)
    report = proc.verdict
    notes = {"returncode": proc.returncode, "command": launch_process.command(state, args),
             "passed": report.get("passed"),
             "problems": report.get("problems"), "wal_unique": report.get("wal_unique")}
    system = f"campaign-{workers}w" + (f"-{variant}" if variant else "")
    return Measurement(name, system, rnd, seconds, report.get("wal_analyzed", 0),
                       report.get("wal_generated"), cpu, notes=notes)


def run_upstream(name: str, binary: Path, seed_dir: Path, seconds: float, run_dir: Path, rnd: int,
                 driver: str) -> Measurement:
    """Upstream's pure concolic driver for ``seconds``, then its process group is stopped."""
    out = run_dir / "corpus"
    log = run_dir / "driver.log"
    tmp = run_dir / "tmp"
    tmp.mkdir(parents=True)
    env = {**without_symcc_vars(), "TMPDIR": str(tmp)}  # the driver sets its SYMCC_* itself
    command = [driver, "-i", str(seed_dir), "-o", str(out), str(binary)]
    cpu0 = children_cpu()
    with open(log, "wb") as handle:
        proc = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=run_dir,
                                start_new_session=True)
        time.sleep(seconds)
        stop_group(proc)
    lines = log.read_text(errors="replace").splitlines()
    started = [i for i, line in enumerate(lines) if line.startswith("Running on ")]
    # A run counts when the driver went on to something else after it (the last one was cut short).
    analyzed = sum(1 for i in started if i + 1 < len(lines))
    notes = {"command": command, "generations": sum(line.startswith("Generation ") for line in lines)}
    return Measurement(name, "upstream", rnd, seconds, analyzed, None, children_cpu() - cpu0, notes=notes)


def score(m: Measurement, binaries: dict[str, Path], seed_dir: Path, run_dir: Path) -> None:
    corpus_dir = run_dir / "state" / "corpus" / "objects" if m.system.startswith("campaign") else run_dir / "corpus"
    inputs = corpus_inputs(seed_dir, corpus_dir)
    m.corpus = len(inputs)
    seen = behaviours(binaries["plain"], inputs)
    m.behaviours = len(seen)
    m.crashes = sum(1 for _out, status in seen if status == "timeout" or status < 0)
    m.notes["behaviours"] = sorted(f"{out}:{status}" for out, status in seen)
    m.edges = afl_edges(binaries["afl"], inputs, run_dir)


def plan(workers: list[int], variants: list[str], driver: str | None) -> list[str]:
    systems = ["loop", "loop-map"] + [f"campaign-{w}w" + (f"-{v}" if v else "") for v in ["", *variants]
                                      for w in workers]
    return systems + (["upstream"] if driver else [])


def measure(system: str, name: str, binaries: dict[str, Path], seed_dir: Path, args: argparse.Namespace,
            run_dir: Path, rnd: int) -> Measurement:
    if system.startswith("loop"):
        return run_loop(name, binaries["symcc"], seed_dir, args.seconds, run_dir, rnd, system == "loop-map")
    if system == "upstream":
        return run_upstream(name, binaries["symcc"], seed_dir, args.seconds, run_dir, rnd, args.driver)
    layout, _, variant = system.removeprefix("campaign-").partition("-")
    return run_campaign(name, binaries, seed_dir, args.seconds, run_dir, rnd, int(layout.removesuffix("w")), variant)


def table(results: list[Measurement], header: str) -> str:
    lines = [header, "", f"{'target':<15} {'system':<13} {'analyzed/s':>10} {'written/s':>9} {'cpu ms/in':>9} "
             f"{'corpus':>13} {'behaviours':>10} {'crashes':>7} {'AFL edges':>9}"]
    keys = dict.fromkeys((m.target, m.system) for m in results)
    for target, system in keys:
        rows = [m for m in results if (m.target, m.system) == (target, system)]
        rate = sum(m.analyzed / m.seconds for m in rows) / len(rows)
        written = [m.generated / m.seconds for m in rows if m.generated is not None]
        written_s = f"{sum(written) / len(written):.1f}" if written else "-"
        analyzed = sum(m.analyzed for m in rows)
        cpu = f"{1000 * sum(m.cpu_s for m in rows) / analyzed:.0f}" if analyzed else "-"

        def each(attr: str, rows: list[Measurement] = rows) -> str:
            return "/".join(str(getattr(m, attr)) for m in rows)

        lines.append(f"{target:<15} {system:<13} {rate:>10.1f} {written_s:>9} {cpu:>9} {each('corpus'):>13} "
                     f"{each('behaviours'):>10} {each('crashes'):>7} {each('edges'):>9}")
    lines += ["", "analyzed/s and written/s: means over the rounds; corpus, behaviours, crashes, edges: each round"]
    return "\n".join(lines)


def proc_cpu(pid: int) -> float:
    """CPU seconds of a live process and of the children it has reaped (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def exec_cost(symcc_cc: str, count: int, out: Path) -> int:
    """Wall and CPU ms of one SymCC run of hdr_opcode on its seed: direct Popen vs the executor in its sandbox."""
    sys.path.insert(0, str(ROOT))
    from symcc_ulfm.executors import create

    binary = build(symcc_cc, "hdr_opcode", out / "bin")["symcc"]
    seed = bytes.fromhex(SEEDS["hdr_opcode"]).ljust(SEED_LENGTH, b"\0")
    scratch = out / "scratch"
    scratch.mkdir()
    executor = create("symcc", str(binary), {}, scratch=scratch)
    executor.run(seed)  # start the sandbox child
    child = executor._proc.pid
    env = symcc_env(scratch)
    totals = {"direct": [0.0, 0.0, 0], "executor": [0.0, 0.0, 0]}
    for block in range(2 * count // 5):
        way = "direct" if block % 2 == 0 else "executor"
        cpu0 = children_cpu() + self_cpu() + (proc_cpu(child) if way == "executor" else 0.0)
        start = time.perf_counter()
        for _ in range(5):
            if way == "direct":
                symcc_run(binary, seed, scratch, RUN_TIMEOUT_S, env)
            else:
                executor.run(seed)
        totals[way][0] += time.perf_counter() - start
        totals[way][1] += children_cpu() + self_cpu() + (proc_cpu(child) if way == "executor" else 0.0) - cpu0
        totals[way][2] += 5
    executor.close()
    lines = [f"bench_symcc --exec-cost {count}: hdr_opcode on its seed, cores={os.cpu_count()}, "
             f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}"]
    for way, (wall, cpu, runs) in totals.items():
        lines.append(f"{way:<9} {runs:>4} runs  wall {1000 * wall / runs:6.1f} ms/run  cpu {1000 * cpu / runs:6.1f} ms/run")
    text = "\n".join(lines)
    print(text)
    (out / "exec-cost.txt").write_text(text + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="3,7", help="campaign workers (one master each), comma separated")
    parser.add_argument("--variants", default="",
                        help="campaign variants beside the plain one, comma separated: map (a QSYM coverage map "
                             "per worker), afl (the AFL twin's coverage)")
    parser.add_argument("--targets", default=",".join(SEEDS))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--exec-cost", type=int, default=0, metavar="N",
                        help="only measure the cost of one execution, N times each way")
    args = parser.parse_args(argv)
    symcc_cc = os.environ.get("SYMCC_CC")
    if not symcc_cc:
        print("bench_symcc: skipped: SYMCC_CC is not set (the path of a SymCC build's symcc compiler wrapper)")
        return 0
    args.driver = os.environ.get("UPSTREAM_DRIVER") or None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = (args.out or ROOT / "runs" / f"symcc-{stamp}").resolve()
    (out / "bin").mkdir(parents=True)
    if args.exec_cost:
        return exec_cost(symcc_cc, args.exec_cost, out)
    names = args.targets.split(",")
    binaries = {name: build(symcc_cc, name, out / "bin") for name in names}
    seed_dirs = {name: write_seed(name, out) for name in names}
    systems = plan([int(w) for w in args.workers.split(",")], [v for v in args.variants.split(",") if v],
                   args.driver)
    results = []
    for rnd in range(args.rounds):
        for system in systems if rnd % 2 == 0 else systems[::-1]:
            for name in names:
                run_dir = out / f"round{rnd}" / name / system
                run_dir.mkdir(parents=True)
                m = measure(system, name, binaries[name], seed_dirs[name], args, run_dir, rnd)
                score(m, binaries[name], seed_dirs[name], run_dir)
                print(f"round {rnd} {name} {system}: {m.analyzed} analyzed, corpus {m.corpus}, "
                      f"behaviours {m.behaviours}, edges {m.edges}", flush=True)
                results.append(m)
    header = (f"bench_symcc: {args.seconds:g} s windows, {args.rounds} rounds, cores={os.cpu_count()}, {stamp}\n"
              f"command: {' '.join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])}\n"
              f"SYMCC_CC={symcc_cc} UPSTREAM_DRIVER={args.driver or '-'}")
    text = table(results, header)
    print(text)
    (out / "table.txt").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps([asdict(m) for m in results], indent=1, default=str))
    print(f"raw outputs: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
