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

from ..errors import ConfigError, Interrupted
from .args import given_options
from .option_values import dictionary_used, emit, executor_options, read_seeds, timeouts, with_dictionary


def _policy_options(args: argparse.Namespace) -> dict[str, tuple[str, Any]]:
    """``launch``'s options that set policy fields: option (its dest) -> (field, value as
    ``build_policy`` takes it)."""
    options = with_dictionary(executor_options(args.executor_option), args.dictionary)
    return {
        "ranks": ("ranks", args.ranks),
        "warm_spares": ("warm_spares", args.warm_spares),
        "workers_per_master": ("workers_per_master", args.workers_per_master),
        "deadline": ("deadline_s", args.deadline),
        "failure_schedule": ("failure_schedule", args.failure_schedule),
        "executor": ("executor", args.executor),
        "target": ("target", args.target),
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
        "worker_kinds": ("worker_kinds", args.worker_kinds),
        "keep": ("keep", args.keep),
        "slice_s": ("slice_s", args.slice_s),
        "idle": ("idle", args.idle),
        "isolation": ("isolation", args.isolation),
    }


def cmd_launch(args: argparse.Namespace) -> int:
    from ..core.budget import fit_lease
    from ..core.finding import same_type_error, type_error_hint
    from ..core.hosts import format_hosts
    from ..core.modes import modes_from_env
    from ..core.policy import build_policy
    from ..launch import batch
    from ..launch.conclude import conclude
    from ..launch.job import run_job
    from ..launch.mpiexec import placement_flags
    from ..launch.prepare import check_executor, prepare_state_dir, resume_command, resume_policy
    from ..launch.progress import LaunchProgress
    from ..tools.replay import list_findings

    modes = modes_from_env(os.environ)
    options = _policy_options(args)
    extend_to = None
    if args.resume:  # the stored policy; what is given is checked against it
        if not args.state_dir:
            raise ConfigError("--resume", "needs --state-dir DIR, the state directory of the campaign to continue")
        given = dict(options[dest] for dest in given_options(args.argv) if dest in options)
        policy = resume_policy(Path(args.state_dir), modes, given)
        extend_to = given.get("deadline_s")
    else:
        policy = build_policy(**dict(options.values()))
    allocation = batch.current_allocation()  # Slurm's, inside sbatch/salloc (docs/slurm.md)
    hosts = batch.job_hosts(policy, allocation)
    dictionary_used(args.dictionary, policy.kinds)
    seeds = read_seeds(args.seeds)
    probe = check_executor(policy, seeds.seeds if seeds else None, seeds.names if seeds else None)
    echo = (lambda line: print(line, file=sys.stderr)) if args.json else print
    if not args.resume and "lease_s" not in options["timeout"][1]:
        fitted = fit_lease(policy, probe.run_limit_s, probe.execution_limit_s)
        if fitted is not policy:
            echo(f"note: lease_s {fitted.timeouts.lease_s:g} s (default {policy.timeouts.lease_s:g} s): one run of "
                 f"this executor may take {probe.run_limit_s:g} s; --timeout lease_s=... sets it")
            policy = fitted
    state_dir = Path(args.state_dir or Path("runs") / time.strftime("launch-%Y%m%d-%H%M%S"))
    state = prepare_state_dir(policy, state_dir, modes, resume=args.resume, probe=probe, new_seeds=seeds is not None,
                              deadline_s=extend_to)
    if allocation is not None:
        slurm_entry = batch.record(state, allocation, hosts, args.resume)
        echo(f"slurm: job {allocation.job_id}, nodes {','.join(allocation.nodes)}; ranks on {format_hosts(hosts)}")
    # the live status line on a terminal (never with --json); stats/ is written in every case
    progress = LaunchProgress(state, shlex.join(["symcc-ulfm", *args.argv]),
                              line=not args.json and sys.stderr.isatty())
    try:
        job = run_job(policy, state, echo=echo, extra_args=None if policy.hosts else placement_flags(hosts),
                      progress=progress)
    except (KeyboardInterrupt, Interrupted, BrokenPipeError):
        progress.finish()
        print(f"symcc-ulfm: the campaign is resumable: {resume_command(state.root)}", file=sys.stderr)
        raise
    progress.finish()
    verdict = conclude(state)
    verdict.pop("summary", None)
    if allocation is not None:
        verdict.update(slurm=slurm_entry, lost_daemon=batch.lost_daemon(job.output))
    verdict.update(job_returncode=job.returncode, job_seconds=round(job.seconds, 3), job_timed_out=job.timed_out,
                   state_dir=str(state.root), command=job.command,
                   rank_errors=[{"exit": code, "error": why} for code, why in job.errors])
    lines = [
        f"state dir: {state.root}",
        f"job: exit {job.returncode} after {job.seconds:.1f} s" + (" (timed out, killed)" if job.timed_out else ""),
        *[f"rank error (exit {code}): {why}" for code, why in _distinct(job.errors)],
        f"oracle: {'PASS' if verdict['passed'] else 'FAIL'}  result_sha256={verdict.get('result_sha256')}",
    ]
    if verdict.get("final_generation") is not None:
        lines.append(
            f"generation {verdict['final_generation']}; receipts {verdict['receipts']}; promoted {verdict['promoted']}; "
            f"active {verdict['final_active']}; masters {verdict['masters']}; workers {verdict['workers']}"
        )
        lines.append(
            f"analyzed {verdict['wal_analyzed']}, generated {verdict['wal_generated']}, unique {verdict['wal_unique']}, "
            f"novel {verdict['wal_novel']}, public objects {verdict['public_objects']}, "
            f"endpoint edges {verdict['endpoint_edges']}"
        )
        lines.append(f"findings: {verdict['findings_unique']} unique, {verdict['findings_hits']} hits"
                     + (f", as the target reported them (symcc-ulfm findings {state.root} --confirm replays each)"
                        if verdict["findings_unique"] else ""))
    lines += [f"problem: {p}" for p in verdict["problems"]] + [f"note: {n}" for n in verdict["notes"]]
    lines += [f"note: {note}" for note in ([job.output_error] if job.output_error else []) + job.notes]
    row = same_type_error(verdict.get("findings", []), verdict.get("public_objects", 0))
    if row is not None:  # its message, from the finding's record
        detail = list_findings(state.root, modes)["findings"][0]
        verdict["hint"] = type_error_hint({**row, "detail": detail.get("detail")}, verdict["public_objects"],
                                          policy.target)
        lines.append(verdict["hint"])
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
