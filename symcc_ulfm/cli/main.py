"""Command line (DESIGN.md §12): the only place where exceptions become exit codes."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from ..errors import CampaignRunning, CheckFailed, ConfigError, SymccUlfmError, TargetError
from .args import build_parser
from .launch_cmd import cmd_launch
from .option_values import dictionary_used, emit, executor_options, read_seeds, with_dictionary
from .study_cmds import cmd_analyze, cmd_compare, cmd_matrix, cmd_model


def cmd_oracle(args: argparse.Namespace) -> int:
    from ..evidence.oracle.judge import judge, locate_state
    from ..evidence.oracle.verdict_text import verdict_lines

    _refuse_running(locate_state(args.dir))
    verdict = judge(args.dir, minimum_hosts=args.minimum_hosts)
    verdict.pop("summary", None)
    emit(args, verdict, "\n".join(verdict_lines(verdict, args.dir)))
    return 0 if verdict["passed"] else 1


def _refuse_running(state: Path) -> None:
    """A running campaign's state is not judged (exit 8): it still changes."""
    from ..store.joblock import running

    who = running(state)
    if who:
        raise CampaignRunning(f"{who}; judge it once it has ended (symcc-ulfm status {state} shows its progress)")


def cmd_findings(args: argparse.Namespace) -> int:
    from ..core.modes import modes_from_env
    from ..core.triage_policy import CONFIRM_REPEAT, check_min_rate, check_repeat
    from ..tools.replay import list_findings

    if args.repeat is not None and not args.confirm:
        raise ConfigError("--repeat", "only with --confirm (the attempts of its replays)")
    confirm = check_repeat(CONFIRM_REPEAT if args.repeat is None else args.repeat) if args.confirm else None
    result = list_findings(args.dir, modes_from_env(os.environ), confirm, check_min_rate(args.min_rate))
    text = [f"{result['unique']} unique findings, {result['hits']} hits in {result['state_dir']}"]
    for row in result["findings"]:
        when = f"+{row['first_seen_s']:.1f} s" if "first_seen_s" in row else f"{row['first_seen']:.0f}"
        where = f" (generation {row['generation']}, worker {row['worker']})" if "generation" in row else ""
        text.append(f"{row['id']}  {row['kind']:<9} hits {row['hits']:<4} first {when}{where}  {row['signature']}\n"
                    f"    input {row['input_sha256']}\n    {_confirmed(row)}\n    {row['replay']}")
    text += [f"damaged WAL record (its findings are not listed): {line}" for line in result["damaged"]]
    emit(args, result, "\n".join(text))
    return 4 if result["damaged"] else 0


def _confirmed(row: dict) -> str:
    from ..core.master import poison

    measured = row["reproduction"]
    if row["signature"] == poison.SIGNATURE:
        return "unconfirmed: never replayed (the input killed worker ranks from inside the sandbox)"
    if row["confirmed"] is None:
        return "unconfirmed: not replayed yet (findings --confirm, or replay)"
    rate = f"{measured['reproduced']}/{measured['attempts']} in fresh sandboxes (min rate {measured['min_rate']:g})"
    return f"confirmed {rate}" if row["confirmed"] else f"NOT CONFIRMED: {measured['verdict']}, {rate}"


def cmd_status(args: argparse.Namespace) -> int:
    """The campaign's status once, or redrawn every ``--watch`` seconds until it has ended
    (Ctrl-C ends the watch with exit 0: nothing is left half done)."""
    from ..core.modes import modes_from_env
    from ..tools.status import Tracker
    from ..tools.status_views import render_block

    try:
        tracker = Tracker(args.dir, modes_from_env(os.environ))
    except FileNotFoundError as exc:
        raise ConfigError("STATE_DIR", f"{args.dir} {exc.strerror}; give a state directory "
                                       "(launch --state-dir) or a run directory holding one") from None
    redraw = args.watch is not None and not args.json and sys.stdout.isatty()
    try:
        while True:
            snapshot = tracker.poll()
            if args.json:
                print(json.dumps(snapshot, sort_keys=True), flush=True)
            else:
                print(("\x1b[H\x1b[J" if redraw else "") + render_block(snapshot), flush=True)
            if args.watch is None or not snapshot["running"]:
                return 0
            time.sleep(args.watch)
            if not redraw and not args.json:
                print()
    except KeyboardInterrupt:
        return 0


def cmd_mechanism(args: argparse.Namespace) -> int:
    from ..evidence.mechanism import markdown, mechanism
    from ..evidence.oracle.judge import locate_state

    state = locate_state(args.dir)
    _refuse_running(state)
    summary = mechanism(state)
    emit(args, summary, markdown(summary))
    return 0


def _triage_run(args: argparse.Namespace):
    """``--input FILE --target T``, or ``DIR FINDING``, as replay and minimize take them; the
    file's Run, or None for a finding."""
    from ..tools.sources import Run

    if args.input is None:
        if args.dir is None or args.finding is None:
            raise ConfigError("DIR FINDING", f"{args.command} takes a directory and a finding, or --input FILE "
                                             "--target T")
        if args.target is not None:
            raise ConfigError("--target", "only with --input (a finding is run with the executor that found it)")
        return None
    if args.dir is not None:
        raise ConfigError("--input", f"{args.command} takes a directory and a finding, or --input FILE --target T, "
                                     "not both")
    if args.target is None:
        raise ConfigError("--target", "--input needs the target to execute it with")
    if not os.path.isfile(args.input):
        raise ConfigError("--input", f"{args.input}: no such file")
    return Run(args.executor, args.target, executor_options(args.executor_option), args.isolation)


def cmd_replay(args: argparse.Namespace) -> int:
    from ..core.modes import modes_from_env
    from ..core.triage_policy import DEFAULT_REPEAT, check_min_rate, check_repeat
    from ..store.reads import read_bytes
    from ..tools.replay import replay, replay_input

    run = _triage_run(args)
    repeat = args.repeat if args.repeat is not None else DEFAULT_REPEAT if run is None else 1
    check_repeat(repeat)
    check_min_rate(args.min_rate)
    if run is None:
        row = replay(args.dir, args.finding, modes_from_env(os.environ), repeat=repeat, min_rate=args.min_rate)
    else:
        row = replay_input(run, read_bytes(args.input), repeat=repeat, min_rate=args.min_rate)
    observed, measured = row["observed"], row.get("reproduction")
    if measured is None:
        verdict = "NOT REPLAYED"
    else:
        verdict = f"{measured['verdict'].upper()} {measured['reproduced']}/{measured['attempts']} " \
                  f"(rate {measured['rate']:.2f}, min {measured['min_rate']:g})"
    head = f"{row['id']} {row['kind']}: {row['signature']}" if row["kind"] else "no finding: every attempt ended ok"
    text = [f"{verdict}  {head}"]
    if row["input_sha256"]:
        text.append(f"  input {row['input_sha256']}")
    if observed is not None:
        text.append(f"  observed {observed['kind']}: {observed['signature'] or '-'} ({observed['detail'] or '-'})")
    for other in row.get("outcomes", [])[1:]:
        text.append(f"  also observed {other['kind']}: {other['signature'] or '-'} in {other['attempts']} attempts")
    if row.get("report"):
        text.append("  report:\n" + "\n".join("    " + line for line in row["report"].rstrip().splitlines()))
    if row.get("note"):
        text.append(f"  note: {row['note']}")
    if row.get("recorded"):
        text.append(f"  recorded in {row['recorded']}")
    emit(args, row, "\n".join(text))
    return 0 if row["reproduced"] else 1


def cmd_minimize(args: argparse.Namespace) -> int:
    from ..core.modes import modes_from_env
    from ..tools.minimize import minimize, minimize_input

    run = _triage_run(args)
    if run is None:
        row = minimize(args.dir, args.finding, modes_from_env(os.environ), out=args.out,
                       max_executions=args.max_executions)
    else:
        row = minimize_input(run, args.input, out=args.out, max_executions=args.max_executions)
    text = [f"minimized {row['id']} {row['kind']}: {row['signature']}",
            f"  {row['input_size']} -> {row['minimized_size']} bytes, sha256 {row['minimized_sha256']}",
            f"  {row['executions']} executions ({' then '.join(row['tools'])})"
            + (" - the budget ran out: --max-executions for more" if row["budget_spent"] else "")]
    text += [f"  {name}: {row[name]}" for name in ("object", "record", "out") if row.get(name)]
    emit(args, row, "\n".join(text))
    return 0


def cmd_sarif(args: argparse.Namespace) -> int:
    from ..core.modes import modes_from_env
    from ..tools.sarif import sarif

    result = sarif(args.dir, args.out, modes_from_env(os.environ))
    emit(args, result, f"SARIF 2.1.0: {result['results']} findings -> {result['out']}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..core.modes import modes_from_env
    from ..tools.export import export

    result = export(args.dir, args.out, modes_from_env(os.environ), layout=args.layout)
    counts = ", ".join(f"{key} {result[key]}" for key in ("queue", "crashes", "hangs", "exceptions", "corpus",
                                                          "artifacts") if key in result)
    left = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in result["skipped"].items() if n)
    emit(args, result, f"exported to {result['out']} ({result['layout']} layout): {counts}"
                        + (f" (left out: {left})" if left else ""))
    return 0


def cmd_seal(args: argparse.Namespace) -> int:
    from ..evidence.seal import seal

    result = seal(Path(args.run_dir))
    print(f"sealed {result['files']} files into {result['sums']}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ..compare.audit import verify_compare
    from ..compare.study_files import is_compare_study
    from ..evidence.verify import verify
    from ..experiment.study import is_study, verify_study

    path = Path(args.run_dir)
    if (path / "state").is_dir():
        _refuse_running(path / "state")
    if is_compare_study(path):
        result = verify_compare(path, remeasure=args.remeasure)
    elif args.remeasure:
        raise ConfigError("--remeasure", f"{path} is not a comparison study (only a study's cells are measured)")
    else:
        result = verify_study(path) if is_study(path) else verify(path)
    text = [f"verify: {'PASS' if result['passed'] else 'FAIL'}  files_checked={result['files_checked']}  "
            f"result_sha256={result['result_sha256']}"]
    text += [f"problem: {p}" for p in result["problems"]]
    emit(args, result, "\n".join(text))
    return 0 if result["passed"] else 1


def cmd_explore(args: argparse.Namespace) -> int:
    from ..core.finding import same_type_error, type_error_hint, useless_seeds_warning
    from ..executors import create
    from ..tools.explore import DEFAULT_SECONDS, explore

    for name, value in (("--seconds", args.seconds), ("--runs", args.runs)):
        if value is not None and not value >= 0:
            raise ConfigError(name, f"must not be negative, got {value}")
    seconds = DEFAULT_SECONDS if args.seconds is None and args.runs is None else args.seconds
    seeds = read_seeds(args.seeds)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError("--out", f"{out} exists and is not a directory; name a directory (it is created)")
    dictionary_used(args.dictionary, (args.executor,))
    options = with_dictionary(executor_options(args.executor_option), args.dictionary)
    executor = create(args.executor, args.target, options, isolation=args.isolation)
    try:
        ran = {"executor": args.executor, "target": args.target, "executor_options": options,
               "isolation": args.isolation}
        result = explore(executor, seconds=seconds, out_dir=Path(args.out),
                         seeds=seeds.seeds if seeds else None, runs=args.runs, ran=ran)
    finally:
        executor.close()
    text = (
        f"executions {result['executions']} ({result.get('executions_per_s', 0):.1f}/s), generated {result['generated']}, "
        f"unique {result['unique']}, novel {result['novel']}, edges {result['edges']}, "
        f"solver queries {result.get('solver_queries', 0)} ({result.get('solver_queries_per_s', 0):.1f}/s), "
        f"{result['seconds']:.1f} s, {result['runs']} runs, stopped: {result['stopped']} -> {args.out}"
    )
    if result["useless_seeds"] and result["seed_coverage_ids"]:  # without coverage there is nothing to compare
        text += "\n" + useless_seeds_warning(result["seeds"], result["useless_seeds"], result["seed_coverage_ids"])
    row = same_type_error(result["findings"], result["inputs"])
    if row is not None:
        result["hint"] = type_error_hint(row, result["inputs"], args.target)
        text += "\n" + result["hint"]
    emit(args, result, text)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from ..harness.build import Script, Sources, build

    if args.script is None:
        if args.src is not None or args.workdir is not None:
            raise ConfigError("--src" if args.src else "--workdir", "only with --script (the script's $SRC and "
                                                                    "where in it the script runs)")
        dictionary = Path(args.dictionary) if args.dictionary else None
        harness = Sources(tuple(Path(s) for s in args.sources), dictionary)
    elif args.sources or args.dictionary:
        raise ConfigError("--script", "builds from its script alone: no SOURCE or --dictionary beside it (the "
                                      "script leaves NAME.dict in $OUT)")
    else:
        src = Path(args.src) if args.src else Path(args.script).absolute().parent
        harness = Script(Path(args.script), src, Path(args.workdir) if args.workdir else None)
    try:
        cflags = shlex.split(args.cflags)
    except ValueError as error:
        raise ConfigError("--cflags", f"{args.cflags!r}: {error}") from None
    made = build(Path(args.out), harness, name=args.name, cflags=cflags, symcc=args.symcc)
    text = []
    for name, entry in made.harness.builds.items():
        text.append(f"{name:<9} {made.out / entry.path}  ({entry.compiler})")
    text += [f"{name:<9} skipped: {why}" for name, why in made.skipped.items()]
    text += [f"{name:<9} FAILED: {why}" for name, why in made.failed.items()]
    tokens = made.tokens
    text.append(f"dictionary {made.harness.dictionary or 'none'}: {tokens['written']} tokens ({tokens['harness']} "
                f"from the harness's, {tokens['extracted']} extracted by AFL_LLVM_DICT2FILE)")
    if made.seeds is not None:
        skipped = ", ".join(f"{n} {why}" for why, n in made.seeds.skipped.items())
        text.append(f"seeds     {made.harness.seeds}/: {made.seeds.seeds}" + (f" (skipped: {skipped})" if skipped
                                                                               else ""))
    text += [f"note: {note}" for note in made.notes]
    text.append(f"manifest  {made.out / 'harness.json'}")
    emit(args, made.to_json(), "\n".join(text))
    made.check()
    return 0


def cmd_targets(args: argparse.Namespace) -> int:
    from ..targets import list_targets

    rows = list_targets()
    if args.json:
        print(json.dumps(rows, sort_keys=True))
    else:
        for row in rows:
            print(f"{row['name']:<12} {row['description']}")
    return 0


COMMANDS = {
    "launch": cmd_launch,
    "oracle": cmd_oracle,
    "findings": cmd_findings,
    "status": cmd_status,
    "mechanism": cmd_mechanism,
    "replay": cmd_replay,
    "minimize": cmd_minimize,
    "sarif": cmd_sarif,
    "export": cmd_export,
    "seal": cmd_seal,
    "verify": cmd_verify,
    "explore": cmd_explore,
    "build": cmd_build,
    "targets": cmd_targets,
    "matrix": cmd_matrix,
    "compare": cmd_compare,
    "analyze": cmd_analyze,
    "model": cmd_model,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return COMMANDS[args.command](args)
    except TargetError as exc:
        print(f"symcc-ulfm: {exc}", file=sys.stderr)
        return exc.exit_code
    except SymccUlfmError as exc:
        kind = "check failed" if isinstance(exc, CheckFailed) else type(exc).__name__
        print(f"symcc-ulfm: {kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except FileNotFoundError as exc:
        where = f"{exc.filename}: {exc.strerror or 'missing'}" if exc.filename else str(exc)
        print(f"symcc-ulfm: no such file or directory: {where}", file=sys.stderr)
        return 1
    except SystemExit as exc:  # only argparse may end the program on purpose; anything else is a bug
        print(f"symcc-ulfm: internal error: something asked to exit ({exc.code!r})", file=sys.stderr)
        return 70
    except KeyboardInterrupt:
        print("symcc-ulfm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout's reader went away (``| head``): stop quietly, as a shell tool would
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())  # the interpreter's last flush of stdout must not fail again
        os.close(null)
        return 128 + signal.SIGPIPE
