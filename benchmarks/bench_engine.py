"""Engine benchmark (``make bench-engine-tools``): branch coverage of real stdlib parsers, four tools, one measurer.

For every parser of :mod:`benchmarks.engine_parsers` and every tool, one subprocess searches for
the same window on one core and leaves a corpus directory:

* ``engine``: this engine now (``explore``, one process, the parser's modules instrumented);
* ``engine-before``: the engine as it was before issue 16 (the package of the base commit,
  extracted with ``git archive`` and put first on ``PYTHONPATH``), given the same coverage
  feedback (the parser's files) through its executor's traced-file set;
* ``atheris``: libFuzzer on the parser with every loaded Python function instrumented;
* ``crosshair``: ``crosshair cover --coverage_type=path`` on the adapter; its examples are the corpus.

Four more tools take two cores each (run them with ``--jobs 1`` on a 2-core machine): two
processes or workers searching one corpus for the same window.

* ``atheris2``: two atheris processes on one corpus directory (libFuzzer reloads it every second,
  so each imports what the other wrote: libFuzzer's own parallel arrangement);
* ``campaign``: a campaign (``launch``) with two ``concolic`` workers and ``--keep novel``;
* ``havoc2``: a campaign with two ``havoc`` workers (the engine's mutation phase as a fuzzer);
* ``hybrid``: a campaign with one ``havoc`` and one ``concolic`` worker on one corpus.

A campaign's master is a third process; its window is the campaign's ``--deadline`` (the job's
start is not counted), and its corpus is the campaign's corpus objects.

Then ONE measurer replays every corpus (plus the parser's seed, so every tool starts from the
same baseline) in a fresh process under ``coverage.py`` with branch coverage restricted to the
parser's own module files, and the table shows covered/total branches per tool per parser. A tool
that cannot run shows its error in the table. ``--rounds N`` runs every cell N times, the tools in
reversed order from one round to the next (``corpus/round<r>/<tool>/<parser>``); the table shows
each round's figure (``a/b``), the best mean in bold, and its header the commit and the load
average over the cells.

    python -m benchmarks.bench_engine --seconds 60 --jobs 2 --out /tmp/bench-engine
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOOLS = ("engine", "engine-before", "atheris", "crosshair")
CAMPAIGN_KINDS = {"campaign": None, "havoc2": "havoc:2", "hybrid": "havoc:1,concolic:1"}
TWO_CORE_TOOLS = ("atheris2", *CAMPAIGN_KINDS)
CAMPAIGN_EXTRA_S = 180  # beyond the window: a campaign's start, endpoint measurement and oracle
BASE_COMMIT = "6096f1d"
REPLAY_TIMEOUT_S = 5


def _write(corpus: Path, data: bytes) -> None:
    (corpus / hashlib.sha256(data).hexdigest()).write_bytes(data)


def _module_files(parser: str) -> list[str]:
    import importlib

    from benchmarks import engine_parsers

    return sorted({importlib.import_module(m).__file__ for m in engine_parsers.MODULES[parser]})


# -- the tools (each runs in its own subprocess: `python -m benchmarks.bench_engine _tool ...`) ------
def _run_engine(parser: str, corpus: Path, seconds: float, before: bool) -> dict:
    from benchmarks import engine_parsers
    from symcc_ulfm.executors.concolic import ConcolicExecutor
    from symcc_ulfm.tools.explore import explore

    spec = f"{HERE / 'engine_parsers.py'}:t_{parser}"
    seed = engine_parsers.SEEDS[parser]
    options = {"seeds": [seed.hex()]}
    if before:
        executor = ConcolicExecutor(spec, options)
        executor._files = frozenset(executor._files) | frozenset(_module_files(parser))
    else:
        extra = json.loads(os.environ.get("BENCH_ENGINE_OPTIONS") or "{}")  # --engine-options
        executor = ConcolicExecutor(spec, {**options, **extra, "modules": engine_parsers.MODULES[parser]})
    stats = explore(executor, seconds, corpus)
    import symcc_ulfm

    return {"package": os.path.dirname(symcc_ulfm.__file__),
            **{k: stats[k] for k in ("runs", "executions", "generated", "unique", "novel", "solver_queries")}}


def _run_atheris(parser: str, corpus: Path, seconds: float) -> dict:
    import atheris

    from benchmarks import engine_parsers

    function = getattr(engine_parsers, f"t_{parser}")
    atheris.instrument_all()

    def one(data: bytes) -> None:
        try:
            function(data)
        except Exception:
            pass

    _write(corpus, engine_parsers.SEEDS[parser])
    atheris.Setup([sys.argv[0], str(corpus), f"-max_total_time={int(seconds)}", "-timeout=5",
                   "-rss_limit_mb=4096", "-print_final_stats=1"], one)
    atheris.Fuzz()
    return {}


def _run_atheris2(parser: str, corpus: Path, seconds: float) -> dict:
    """Two ``atheris`` tools on one corpus directory at once."""
    command = [sys.executable, "-m", "benchmarks.bench_engine", "_tool", "atheris", parser, str(corpus), str(seconds)]
    procs = [subprocess.Popen(command, cwd=corpus, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    errors = [p.communicate(timeout=seconds + 120)[1] for p in procs]
    failed = [(p.returncode, e) for p, e in zip(procs, errors, strict=True) if p.returncode]
    if failed and not any(corpus.iterdir()):
        raise RuntimeError(f"atheris exit {failed[0][0]}: {failed[0][1].strip().splitlines()[-1:]}")
    return {"processes": 2, "exits": [p.returncode for p in procs]}


def _run_campaign(parser: str, corpus: Path, seconds: float, kinds: str | None) -> dict:
    """A campaign of two workers (``kinds``, else two concolic ones) on the parser; its corpus
    objects are copied into ``corpus``."""
    from benchmarks import engine_parsers
    from symcc_ulfm.compare.systems.campaign_system import window_args
    from symcc_ulfm.launch import json_child

    state = corpus.parent / f".state-{corpus.name}"
    args = ["--target", f"{HERE / 'engine_parsers.py'}:t_{parser}", "--executor", "concolic",
            "--executor-option", f"modules={json.dumps(engine_parsers.MODULES[parser])}",
            "--executor-option", f"seeds={json.dumps([engine_parsers.SEEDS[parser].hex()])}",
            *window_args(seconds, 2, int(os.environ.get("BENCH_STOP_AFTER") or 0))]  # --stop-after
    if kinds:
        args += ["--worker-kinds", kinds]
    proc = json_child.start(state, args, cwd=ROOT, new_session=True)
    done = json_child.finish(proc, timeout=seconds + CAMPAIGN_EXTRA_S)
    verdict = done.verdict
    objects = state / "corpus" / "objects"
    for path in objects.iterdir() if objects.is_dir() else ():
        _write(corpus, path.read_bytes())
    if done.returncode or not verdict.get("passed"):
        raise RuntimeError(f"launch exit {done.returncode}, passed={verdict.get('passed')}: "
                           f"{done.stderr.strip().splitlines()[-1:]}")
    return {"kinds": kinds or "concolic:2", **{k: verdict.get(f"wal_{k}") for k in ("analyzed", "generated",
                                                                                     "unique", "novel")}}


def _run_crosshair(parser: str, corpus: Path, seconds: float) -> dict:
    command = [sys.executable, "-m", "crosshair", "cover", f"engine_parsers.t_{parser}",
               "--example_output_format=arg_dictionary", "--coverage_type=path",
               f"--per_condition_timeout={seconds * 0.9:.0f}"]
    env = dict(os.environ, PYTHONPATH=str(HERE))
    done = subprocess.run(command, cwd=HERE, env=env, capture_output=True, text=True, timeout=seconds + 120)
    examples = 0
    for line in done.stdout.splitlines():
        try:
            value = ast.literal_eval(line.strip())
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, dict) and isinstance(value.get("data"), bytes):
            _write(corpus, value["data"])
            examples += 1
    if not examples and done.returncode:
        raise RuntimeError(f"crosshair exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    return {"examples": examples}


def _tool_main(tool: str, parser: str, corpus: str, seconds: str) -> None:
    corpus_dir = Path(corpus)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    if tool in ("engine", "engine-before"):
        stats = _run_engine(parser, corpus_dir, float(seconds), tool == "engine-before")
    elif tool == "atheris":
        stats = _run_atheris(parser, corpus_dir, float(seconds))
    elif tool == "atheris2":
        stats = _run_atheris2(parser, corpus_dir, float(seconds))
    elif tool in CAMPAIGN_KINDS:
        stats = _run_campaign(parser, corpus_dir, float(seconds), CAMPAIGN_KINDS[tool])
    else:
        stats = _run_crosshair(parser, corpus_dir, float(seconds))
    print(json.dumps(stats))


# -- the measurer (one code path for every corpus) ---------------------------------------------------
def _alarm(_signum, _frame):
    raise TimeoutError("replay timeout")


def _measure_main(parser: str, corpus: str, out: str) -> None:
    import coverage

    from benchmarks import engine_parsers
    from symcc_ulfm.compare.measure.python_child import branch_totals

    function = getattr(engine_parsers, f"t_{parser}")
    files = _module_files(parser)
    inputs = [engine_parsers.SEEDS[parser]]
    inputs += [p.read_bytes() for p in sorted(Path(corpus).iterdir()) if p.is_file() and not p.name.startswith(".")]
    signal.signal(signal.SIGALRM, _alarm)
    cov = coverage.Coverage(branch=True, include=files, data_file=None)
    cov.start()
    for data in inputs:
        signal.alarm(REPLAY_TIMEOUT_S)
        try:
            function(data)
        except BaseException:  # a parser may raise anything on a bad input
            pass
        finally:
            signal.alarm(0)
    cov.stop()
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        totals = branch_totals(cov, report.name)  # the comparison measurer's count (symcc_ulfm.compare.measure)
    Path(out).write_text(json.dumps({"inputs": len(inputs), "covered_branches": totals["covered_branches"],
                                     "num_branches": totals["num_branches"]}))


# -- orchestration -----------------------------------------------------------------------------------------
def _extract_base(commit: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "symcc_ulfm"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _env(pythonpath: list[Path]) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath), PYTHONHASHSEED="0")


def _stats(stdout: str) -> dict:
    """The JSON line a tool printed last (atheris exits from inside libFuzzer and prints none)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


def _cell(rnd: int, tool: str, parser: str, seconds: float, out: Path, base: Path | None) -> dict:
    corpus = out / "corpus" / f"round{rnd}" / tool / parser
    corpus.mkdir(parents=True, exist_ok=True)
    started, load = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.getloadavg()[0]
    path = [base, ROOT] if tool == "engine-before" else [ROOT]
    command = ["nice", "-n", "10", sys.executable, "-m", "benchmarks.bench_engine", "_tool", tool, parser,
               str(corpus), str(seconds)]
    start = time.monotonic()
    try:
        # cwd is the corpus (``-m`` puts the cwd first on sys.path: the base package must win there)
        done = subprocess.run(command, cwd=corpus, env=_env(path), capture_output=True, text=True,
                              timeout=seconds + 180)
        error = None
        if done.returncode:
            tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:]
            error = f"exit {done.returncode}: {tail[0] if tail else ''}"[:160]
        stats = _stats(done.stdout)
    except subprocess.TimeoutExpired:
        error, stats = "did not finish in the window + 180 s", {}
    return {"round": rnd, "tool": tool, "parser": parser, "seconds": round(time.monotonic() - start, 1),
            "error": error, "stats": stats, "corpus": str(corpus), "corpus_size": sum(1 for _ in corpus.iterdir()),
            "started": started, "load": [load, os.getloadavg()[0]]}


def _measure(cell: dict, out: Path) -> dict:
    result = out / "measure" / f"round{cell['round']}" / f"{cell['tool']}-{cell['parser']}.json"
    result.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "benchmarks.bench_engine", "_measure", cell["parser"], cell["corpus"],
               str(result)]
    done = subprocess.run(command, cwd=ROOT, env=_env([ROOT]), capture_output=True, text=True, timeout=3600)
    if done.returncode:
        return {**cell, "measure_error": done.stderr.strip().splitlines()[-1:]}
    return {**cell, **json.loads(result.read_text())}


def table(cells: list[dict], parsers: list[str], tools: list[str]) -> str:
    """Covered branches (corpus inputs) of each tool on each parser, round by round (``a/b``); the
    best mean over the rounds in bold."""
    rows: dict[tuple[str, str], list[dict]] = {}
    for c in sorted(cells, key=lambda c: c["round"]):
        rows.setdefault((c["parser"], c["tool"]), []).append(c)
    lines = ["| parser | branches | " + " | ".join(tools) + " |", "|---|---|" + "---|" * len(tools)]
    for parser in parsers:
        mine = {t: rows.get((parser, t), []) for t in tools}
        total = next((c["num_branches"] for t in tools for c in mine[t] if "num_branches" in c), "?")
        means = {t: sum(c["covered_branches"] for c in mine[t]) / len(mine[t]) for t in tools
                 if mine[t] and all("covered_branches" in c and not c["error"] for c in mine[t])}
        best = max(means.values(), default=None)
        marks = []
        for tool in tools:
            broken = [c for c in mine[tool] if c["error"] or "covered_branches" not in c]
            if broken:
                c = broken[0]
                marks.append(f"round {c['round']} error: {c['error']}" if c["error"]
                             else f"round {c['round']} measure error: {c.get('measure_error')}")
                continue
            text = (f"{'/'.join(str(c['covered_branches']) for c in mine[tool])} "
                    f"({'/'.join(str(c['corpus_size']) for c in mine[tool])} inputs)")
            marks.append(f"**{text}**" if best is not None and means[tool] == best else text)
        lines.append(f"| {parser} | {total} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_tool"]:
        _tool_main(*argv[1:5])
        return 0
    if argv[:1] == ["_measure"]:
        _measure_main(*argv[1:4])
        return 0
    from benchmarks import engine_parsers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=2, help="cells run at once (one core each)")
    parser.add_argument("--parsers", nargs="*", default=engine_parsers.PARSERS)
    parser.add_argument("--tools", nargs="*", default=list(TOOLS),
                        help=f"from {', '.join(TOOLS + TWO_CORE_TOOLS)} (the last {len(TWO_CORE_TOOLS)} take two cores)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds, each with the tools in the order reversed from the round before")
    parser.add_argument("--base", default=BASE_COMMIT, help="commit of the engine before issue 16")
    parser.add_argument("--out", default=None)
    parser.add_argument("--engine-options", default=None,
                        help="JSON object of concolic options for the `engine` tool (e.g. '{\"mutate_share\": 0.8}')")
    parser.add_argument("--stop-after", type=int, default=0, metavar="N",
                        help="campaign tools end once each worker committed N results, the window only bounding "
                             "them (launch --stop-after; for a smoke test: cells so ended are no figures)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.tools) - set(TOOLS + TWO_CORE_TOOLS))
    if unknown:
        parser.error(f"unknown tools {unknown}")
    cores = 2 if set(args.tools) & set(TWO_CORE_TOOLS) else 1
    if args.jobs * cores > (os.cpu_count() or 1):
        parser.error(f"--jobs {args.jobs} with tools of {cores} cores needs {args.jobs * cores} cores; "
                     f"this machine has {os.cpu_count()}")
    if args.engine_options is not None:
        if not isinstance(json.loads(args.engine_options), dict):
            parser.error("--engine-options must be a JSON object")
        os.environ["BENCH_ENGINE_OPTIONS"] = args.engine_options
    if args.stop_after:
        os.environ["BENCH_STOP_AFTER"] = str(args.stop_after)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-engine-")).resolve()  # the tools run elsewhere
    out.mkdir(parents=True, exist_ok=True)
    base = _extract_base(args.base, out / "before") if "engine-before" in args.tools else None
    from benchmarks.harness import checkout

    commit = checkout()
    jobs = [(rnd, tool, p) for rnd in range(args.rounds) for p in args.parsers
            for tool in (args.tools if rnd % 2 == 0 else args.tools[::-1])]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        cells = list(pool.map(lambda job: _cell(*job, args.seconds, out, base), jobs))
        measured = list(pool.map(lambda cell: _measure(cell, out), cells))
    (out / "results.json").write_text(json.dumps(measured, indent=1))
    loads = [v for c in measured for v in c["load"]]
    header = (f"{args.seconds:g}-s windows, {args.rounds} round(s), commit {commit}, "
              f"{min(c['started'] for c in measured)} .. {max(c['started'] for c in measured)}, "
              f"load average {min(loads):.2f}-{max(loads):.2f}")
    text = header + "\n\n" + table(measured, args.parsers, args.tools)
    (out / "table.md").write_text(text + "\n")
    print(text)
    print(f"\nresults: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
