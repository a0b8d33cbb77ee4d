"""``symcc-ulfm launch``: prepare the state directory, run the mpiexec job, bound it in time.

The job's own exit status is a fact, not the verdict: ``mpiexec`` returns 86 when a victim of
an injected failure exits, and 0 when the victim was SIGKILLed. The oracle decides.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cluster import job_environment, mpiexec_command
from .core.canonical import canonical_json, digest
from .core.modes import FileModes
from .core.policy import Policy
from .endpoint import measure_endpoint
from .errors import IntegrityError, PolicyError, SymccUlfmError, WalCorruption
from .evidence.oracle import judge
from .executors import create
from .executors.sandbox import Sandbox, grace_s
from .store.atomic import read_bytes, write_new, write_replace
from .store.corpus import Corpus
from .store.identity import require_same, write_identity
from .store.paths import StateDir
from .store.snapshots import SnapshotStore
from .store.wal import WorkWAL

JOB_OUTPUT = "job-output.txt"


@dataclass
class JobResult:
    command: list[str]
    returncode: int
    seconds: float
    timed_out: bool
    output_path: Path

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.output_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class ExecutorProbe:
    """What a contained executor says about itself before a campaign starts."""

    identity: dict
    sha256: str
    seeds: list[bytes]
    execution_limit_s: float  # with the sandbox's grace when the executor is contained
    run_limit_s: float


def check_executor(policy: Policy, seeds: list[bytes] | None = None) -> ExecutorProbe:
    """Build the executor once, contained, before anything is written: a bad target fails here
    (exit 2), and the target's code never runs in this process. ``seeds`` (``--seeds DIR``)
    replace the executor's own."""
    executor = create(policy.executor, policy.target, policy.executor_options)
    try:
        identity = executor.identity()
        execution = executor.execution_limit_s
        if isinstance(executor, Sandbox):
            execution += grace_s(execution)
        probe = ExecutorProbe(identity, digest(identity), executor.seeds() if seeds is None else list(seeds),
                              execution, executor.run_limit_s)
    finally:
        executor.close()
    check_time_limits(policy, probe)
    return probe


def check_time_limits(policy: Policy, probe: ExecutorProbe) -> None:
    """The executor's limits must fit the lease: a worker that runs an input for as long as its
    executor allows must never look stuck to its master, which fences it after ``lease_s``.

    One lease can take a whole run plus the coverage runs of its children, which the worker
    bounds by half the lease, plus one execution that overruns (its limit and the sandbox's
    grace); twice that must fit in ``lease_s`` (the worker's next lease waits behind it).
    """
    execution = probe.execution_limit_s
    needed = 2 * (probe.run_limit_s + execution)
    if policy.timeouts.lease_s < needed:
        raise PolicyError("timeouts.lease_s", f"{policy.timeouts.lease_s:g} s is too short for this executor: one run may "
                                              f"take {probe.run_limit_s:g} s and one execution {execution:g} s (with "
                                              f"the sandbox's grace), so a lease needs at least {needed:g} s; raise it "
                                              f"(--timeout lease_s=...) or lower the executor's time limits")


def prepare_state_dir(policy: Policy, state_dir: Path, modes: FileModes, resume: bool = False,
                      probe: ExecutorProbe | None = None, new_seeds: bool = False) -> StateDir:
    """Create the state directory: the canonical policy and the executor identity (create-only),
    and the seeds as corpus objects.

    A directory that already holds a campaign is only accepted with ``resume``, the same policy
    and the same executor identity (exit 6 when the target changed); ``new_seeds`` publishes the
    probe's seeds into it as well (``launch --resume --seeds DIR``).
    """
    probe = probe or check_executor(policy)
    state = StateDir(Path(state_dir).absolute(), modes)
    data = policy.to_bytes()
    if state.policy.exists():
        if not resume:
            raise PolicyError("state_dir", f"{state.root} already holds a campaign; use --resume or a new directory")
        if read_bytes(state.policy) != data:
            raise PolicyError("state_dir", f"{state.root} holds a campaign with a different policy; cannot resume")
        if _finished(state) == "deadline-reached":
            raise PolicyError("state_dir", f"the campaign in {state.root} already reached its deadline; nothing to resume")
        require_same(state.executor, probe.sha256, "the resumed campaign")
        preflight(state)
        if new_seeds:
            _publish_seeds(state, probe.seeds)
        return state
    if resume:
        raise PolicyError("state_dir", f"{state.root} holds no campaign to resume")
    state.create()
    write_new(state.policy, data, modes.snapshot)
    write_identity(state.executor, probe.identity, modes.snapshot)
    _publish_seeds(state, probe.seeds)
    return state


def _finished(state: StateDir) -> str | None:
    """How the last job of the campaign ended (``outcome.json``'s status), None when it never did.

    Only a campaign that reached its deadline is over: one that stopped because its search was
    exhausted or too few members were left may be resumed with the budget it has left."""
    try:
        outcome = json.loads(read_bytes(state.root / "outcome.json", limit=1 << 20))
    except FileNotFoundError:
        return None
    except ValueError:
        raise IntegrityError(f"{state.root / 'outcome.json'} is not JSON") from None
    return outcome.get("status") if isinstance(outcome, dict) else None


def _publish_seeds(state: StateDir, seeds: list[bytes]) -> None:
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    for seed in seeds:
        corpus.publish_seed(seed)


def preflight(state: StateDir) -> None:
    """Before a resume: the durable state must be trustworthy, or nothing starts (exit 4).

    A corrupted WAL record or a broken receipt chain is reported by name and left as it is.
    """
    SnapshotStore(state.membership, state.modes.snapshot).current()
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    wal = WorkWAL(state.wal, state.root, corpus, state.modes.snapshot)
    problems = [str(problem) for _, _, problem in wal.scan() if problem is not None]
    if problems:
        raise WalCorruption(f"{len(problems)} WAL record(s) cannot be trusted; refusing to resume: " + "; ".join(problems))


def job_timeout(policy: Policy) -> float:
    t = policy.timeouts
    return t.startup_s + policy.deadline_s + t.shutdown_grace_s + t.job_grace_s


def run_job(
    policy: Policy,
    state: StateDir,
    echo: Callable[[str], None] = print,
    extra_args: list[str] | None = None,
    env_overrides: dict[str, str] | None = None,
    command_prefix: list[str] | None = None,
) -> JobResult:
    """Run the campaign job; prints the exact command; kills the whole job if it overruns."""
    command = mpiexec_command(policy, state.root, state.modes, extra=extra_args)
    command = [*(command_prefix or []), *command]
    echo("+ " + shlex.join(command))
    env = job_environment(state.modes)
    env.update(env_overrides or {})
    output = state.root / JOB_OUTPUT
    started = time.monotonic()
    timed_out = False
    with open(output, "ab") as sink:
        os.fchmod(sink.fileno(), state.modes.snapshot)
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = process.wait(timeout=job_timeout(policy))
        except subprocess.TimeoutExpired:
            timed_out = True
            returncode = _kill_job(process)
        except BaseException:  # interrupted: the job runs in its own session, never leave it behind
            _kill_job(process)
            raise
    return JobResult(command, returncode, time.monotonic() - started, timed_out, output)


def _kill_job(process: subprocess.Popen) -> int:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            return process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return process.wait()


def conclude(state: StateDir, minimum_hosts: int | None = None) -> dict:
    """After the job: re-measure endpoint coverage (contained, bounded in time), run the oracle,
    store its verdict. A target that fails the measurement costs the endpoint figure, never the
    verdict."""
    if (state.root / "outcome.json").exists():
        try:
            measure_endpoint(state)
        except SymccUlfmError as exc:
            write_replace(state.endpoint, canonical_json({"error": f"{type(exc).__name__}: {exc}"[:2000]}),
                          state.modes.snapshot)
    verdict = judge(state.root, minimum_hosts=minimum_hosts)
    write_replace(state.root / "oracle.json", canonical_json(verdict), state.modes.snapshot)
    return verdict
