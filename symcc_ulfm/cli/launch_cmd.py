"""``symcc-ulfm launch``: a campaign from the command line, or its resume with the stored policy;
the verdict it prints and the exit code it ends with."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from ..core.modes import modes_from_env
from ..core.policy import build_policy
from ..errors import ConfigError, Interrupted, TargetError
from ..evidence.oracle.verdict_text import verdict_lines
from ..harness.directory import MANIFEST, Harness, sha256_file
from ..harness.directory import read as read_harness
from ..launch import batch
from .args import given_options
from .option_values import dictionary_used, emit, executor_options, read_seeds, timeouts, with_dictionary


def _policy_options(args: argparse.Namespace, harness: Harness | None) -> dict[str, tuple[str, Any]]:
    """``launch``'s options that set policy fields: option (its dest) -> (field, value as
    ``build_policy`` takes it); with ``harness`` (``--harness``) the executor, its target and
    options, the dictionary and the worker kinds are derived from it (:func:`from_harness`)."""
    executor, target, dictionary, kinds = args.executor, args.target, args.dictionary, args.worker_kinds
    options = executor_options(args.executor_option)
    if harness is not None:
        executor, target, derived, default_kinds = from_harness(harness, args.workers_per_master)
        both = sorted(set(derived) & set(options))
        if both:
            raise ConfigError("--executor-option", f"{both[0]} is the harness's (--harness {harness.root}); "
                                                   "not given as well")
        options = {**derived, **options}
        dictionary = dictionary or (str(harness.file(harness.dictionary)) if harness.dictionary else None)
        kinds = kinds or default_kinds
    options = with_dictionary(options, dictionary)
    return {
        "ranks": ("ranks", args.ranks),
        "warm_spares": ("warm_spares", args.warm_spares),
        "workers_per_master": ("workers_per_master", args.workers_per_master),
        "deadline": ("deadline_s", args.deadline),
        "failure_schedule": ("failure_schedule", args.failure_schedule),
        "executor": ("executor", executor),
        "target": ("target", target),
        "harness": ("executor_options", options),
        "executor_option": ("executor_options", options),
        "dictionary": ("executor_options", options),
        "hosts": ("hosts", args.hosts),
        "minimum_hosts": ("minimum_hosts", args.minimum_hosts),
        "seed": ("seed", args.seed),
        "no_ulfm": ("ulfm", not args.no_ulfm),
        "timeout": ("timeouts", timeouts(args.timeout)),
        "run_to_deadline": ("stop_when_exhausted", not args.run_to_deadline),
        "stop_after": ("stop_after", args.stop_after),
        "stop_from": ("stop_from", args.stop_from),
        "worker_kinds": ("worker_kinds", kinds),
        "keep": ("keep", args.keep),
        "slice_s": ("slice_s", args.slice_s),
        "idle": ("idle", args.idle),
        "concolic_order": ("concolic_order", args.concolic_order),
        "mix": ("mix", args.mix),
        "isolation": ("isolation", args.isolation),
    }


def _harness(args: argparse.Namespace) -> Harness | None:
    """The harness directory of ``--harness`` (None without one); --target or --executor beside it
    is a ConfigError naming both."""
    if args.harness is None:
        return None
    given = [f"--{dest}" for dest in ("target", "executor") if dest in given_options(args.argv)]
    if given:
        raise ConfigError("--harness", f"--harness DIR names the executor and its target; not with {' or '.join(given)}")
    return read_harness(args.harness)


def from_harness(harness: Harness, workers_per_master: int) -> tuple[str, str, dict[str, Any], str]:
    """The executor, its target, the executor options and the default worker kinds of a campaign
    on ``harness``'s builds: ``symcc`` on its SymCC build, else ``native`` on its sanitizer build,
    else on its AFL build; ``afl_binary`` its AFL build, ``sanitizer_binary`` its sanitizer build
    (every kind's failing inputs are judged by it), ``cmplog_binary`` its CmpLog build (afl-fuzz's
    ``-c``, with its AFL build), ``args`` its args, ``harness`` the path and
    SHA-256 of its manifest (recorded in the policy; each kind checks it when it is built)."""
    builds = {name: str(harness.path(name)) for name in ("afl", "sanitizer", "symcc") if name in harness.builds}
    manifest = harness.root / MANIFEST
    options: dict[str, Any] = {"args": list(harness.args),
                               "harness": {"manifest": str(manifest), "sha256": sha256_file(manifest)}}
    if "afl" in builds:
        options["afl_binary"] = builds["afl"]
        if "cmplog" in harness.builds:
            options["cmplog_binary"] = str(harness.path("cmplog"))
    if "sanitizer" in builds:
        options["sanitizer_binary"] = builds["sanitizer"]
    if "symcc" in builds:
        executor, target = "symcc", builds["symcc"]
    elif builds:
        executor, target = "native", builds.get("sanitizer", builds.get("afl"))
    else:
        raise TargetError("harness", f"{harness.root} has no build a campaign runs (it has: "
                                     f"{', '.join(sorted(harness.builds))}); symcc-ulfm build makes them")
    rest = workers_per_master - 1
    if "afl" not in builds:
        kinds = ""  # every slot the executor's
    elif executor == "symcc" and rest:
        kinds = f"afl:1,symcc:{rest}"
    else:
        kinds = f"afl:{workers_per_master}"
    return executor, target, options, kinds


def _harness_line(harness: Harness, executor: str, target: str, kinds: str | None) -> str:
    """What ``launch --harness`` runs, and why there is no SymCC worker when the harness has no SymCC build."""
    line = f"harness: {executor} on {target}; worker kinds {kinds or 'all ' + executor}"
    not_built = harness.source.get("not_built")
    why = not_built.get("symcc") if isinstance(not_built, dict) else None
    if executor != "symcc":
        line += f" (no SymCC build{': ' + str(why) if why else ''}: an AFL++-only campaign)"
    return line


def cmd_launch(args: argparse.Namespace) -> int:
    from ..launch.launcher import Mpiexec, plan  # the job's modules, loaded by this command alone
    from ..launch.prepare import resume_command
    from ..launch.progress import LaunchProgress

    harness = _harness(args)
    options = _policy_options(args, harness)
    modes = modes_from_env(os.environ)
    echo = (lambda line: print(line, file=sys.stderr)) if args.json else print
    runner = Mpiexec(echo=echo, allocation=batch.current_allocation())  # Slurm's, inside sbatch/salloc (docs/slurm.md)
    if args.resume:  # the stored policy; what is given is checked against it
        if not args.state_dir:
            raise ConfigError("--resume", "needs --state-dir DIR, the state directory of the campaign to continue")
        given = dict(options[dest] for dest in given_options(args.argv) if dest in options)
        launch = plan(runner, modes, resume=Path(args.state_dir), given=given, seeds=read_seeds(args.seeds))
    else:
        policy = build_policy(**dict(options.values()))
        dictionary_used(args.dictionary, policy.kinds)
        if harness is not None:
            echo(_harness_line(harness, policy.executor, policy.target, options["worker_kinds"][1]))
        seeds = args.seeds or (str(harness.file(harness.seeds)) if harness is not None and harness.seeds else None)
        launch = plan(runner, modes, policy, seeds=read_seeds(seeds), lease_given="lease_s" in options["timeout"][1])
    if launch.lease_note:
        echo(f"note: {launch.lease_note}")
    if launch.probe.seeds_note and not args.resume:
        echo(launch.probe.seeds_note)
    state = launch.prepare(Path(args.state_dir or Path("runs") / time.strftime("launch-%Y%m%d-%H%M%S")))
    if launch.slurm is not None:
        echo(f"slurm: job {launch.slurm['job_id']}, nodes {','.join(launch.slurm['nodes'])}; "
             f"ranks on {launch.slurm['placement']}")
    # the live status line on a terminal (never with --json); stats/ is written in every case
    runner.progress = progress = LaunchProgress(state, shlex.join(["symcc-ulfm", *args.argv]),
                                                line=not args.json and sys.stderr.isatty())
    try:
        campaign = launch.run()
    except (KeyboardInterrupt, Interrupted, BrokenPipeError):
        print(f"symcc-ulfm: the campaign is resumable: {resume_command(state.root)}", file=sys.stderr)
        raise
    job, verdict = campaign.job, campaign.verdict
    verdict.pop("summary", None)
    verdict.update(job_returncode=job.returncode, job_seconds=round(job.seconds, 3), job_timed_out=job.timed_out,
                   state_dir=str(state.root), command=job.command,
                   rank_errors=[{"exit": code, "error": why} for code, why in job.errors])
    lines = [
        f"state dir: {state.root}",
        f"job: exit {job.returncode} after {job.seconds:.1f} s" + (" (timed out, killed)" if job.timed_out else ""),
        *[f"rank error (exit {code}): {why}" for code, why in _distinct(job.errors)],
        *verdict_lines(verdict, str(state.root)),
    ]
    lines += [f"note: {note}" for note in ([job.output_error] if job.output_error else []) + job.notes]
    lines += [verdict["hint"]] if "hint" in verdict else []
    if batch.lost_daemon(job.output) and not verdict["passed"]:
        lines.append("note: the job lost a node's PRRTE daemon, which Open MPI 5.0 cannot recover from; the campaign "
                     f"is resumable in a new job: {resume_command(state.root)}")
    lines += [f"note: {progress.error}"] if progress.error else []
    if not verdict["passed"]:
        lines.append("last job output:\n" + job.tail())
    emit(args, verdict, "\n".join(lines))
    return launch_exit(verdict, job, state.outcome.exists())


def _distinct(errors: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return list(dict.fromkeys(errors))[:8]


def launch_exit(verdict: dict, job, finished: bool) -> int:
    """0 only for a judged, passing campaign whose verdict was stored; a job that failed before it
    finished exits with its ranks' reason (2 bad input, 4 integrity, 5 ULFM, 6 provenance, 7
    store); a verdict that could not be stored is a store failure (7)."""
    if verdict.get("store_error"):
        return 7
    if verdict["passed"]:
        return 0
    if not finished:
        for code in [job.returncode] + [c for c, _ in job.errors]:
            if code in (2, 4, 5, 6, 7):
                return code
    return 1
