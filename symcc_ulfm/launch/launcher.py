"""One campaign launched from the host, the one way ``launch``, the run notebook, the gates and a
matrix cell start it, in three steps:

* :func:`plan`: the policy (a resume's is the stored one, what was given checked against it:
  ``launch.prepare.resume_policy``), the hosts its :class:`Runner` places the ranks on, the
  executor probed once, contained (``launch.prepare.check_executor``), and the lease;
* :meth:`Launch.prepare`: the state directory (``launch.prepare.prepare_state_dir``, held by
  this process from then on) and the record of the Slurm allocation the job runs in;
* :meth:`Launch.run`: the job through the runner, the verdict (``launch.conclude``), the state
  directory given back (``launch.prepare.release``); a :class:`Campaign`.

A caller that needs the state directory before the job (the notebook writes provenance into its
run directory, a gate grants another user access) does its part between the last two.

The lease has one rule: a new campaign's ``timeouts.lease_s`` is raised to what one run of its
executor needs (``core.budget.fit_lease``) unless it was given; a resume runs the stored policy
as it is.

A :class:`Runner` runs the job: :class:`Mpiexec` (``launch.job.run_job``: on this machine, on
``--hosts`` or on the nodes of the Slurm allocation it is given) or ``launch.engines.Engines``
(the notebook's ipyparallel engines, kept there so that ``launch`` never loads them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core.allocation import Allocation
from ..core.budget import fit_lease
from ..core.finding import same_type_error, type_error_hint
from ..core.modes import FileModes
from ..core.policy import Policy
from ..errors import ConfigError
from ..executors.seed_dirs import SeedSet
from ..store.paths import StateDir
from ..tools.replay import list_findings
from . import batch
from .conclude import conclude
from .job import JobResult, run_job
from .mpiexec import placement_flags
from .prepare import ExecutorProbe, check_executor, prepare_state_dir, release, resume_policy

Hosts = tuple[tuple[str, int], ...]


class Progress(Protocol):
    """Called while the job runs (``launch.progress``, a notebook's live view); finished after it."""

    def __call__(self) -> Any: ...

    def finish(self) -> Any: ...


@dataclass
class Runner:
    """How the job runs; ``progress`` is called while it runs and finished once it has ended."""

    progress: Progress | None = None

    def hosts(self, policy: Policy) -> Hosts:
        """The hosts of the job's ranks, known before anything is written (() for no placement)."""
        return ()

    def record(self, state: StateDir, hosts: Hosts, resume: bool) -> dict | None:
        """What the state directory keeps of where this job runs (its ``slurm.json`` entry), if anything."""
        return None

    def run(self, policy: Policy, state: StateDir, hosts: Hosts) -> Any:
        try:
            return self._job(policy, state, hosts)
        finally:
            if self.progress is not None:
                self.progress.finish()

    def _job(self, policy: Policy, state: StateDir, hosts: Hosts) -> Any:
        raise NotImplementedError


@dataclass
class Mpiexec(Runner):
    """The job as one ``mpiexec`` (``launch.job.run_job``, its exact command echoed), after
    ``command_prefix`` and with ``extra_args``; inside a Slurm ``allocation`` (``launch.batch``)
    the ranks are placed on its nodes and the allocation is recorded in the state."""

    echo: Callable[[str], None] = print
    extra_args: list[str] = field(default_factory=list)
    command_prefix: list[str] | None = None
    allocation: Allocation | None = None

    def hosts(self, policy: Policy) -> Hosts:
        return batch.job_hosts(policy, self.allocation)

    def record(self, state: StateDir, hosts: Hosts, resume: bool) -> dict | None:
        return None if self.allocation is None else batch.record(state, self.allocation, hosts, resume)

    def _job(self, policy: Policy, state: StateDir, hosts: Hosts) -> JobResult:
        placement = [] if policy.hosts else placement_flags(hosts)
        return run_job(policy, state, echo=self.echo, extra_args=[*placement, *self.extra_args] or None,
                       command_prefix=self.command_prefix, progress=self.progress)


@dataclass(frozen=True)
class Campaign:
    """A launched campaign: its policy, state directory, job and the oracle's verdict (with
    ``slurm`` and ``lost_daemon`` inside an allocation, and the type-error ``hint`` where
    ``core.finding.same_type_error`` finds one)."""

    policy: Policy
    state: StateDir
    job: Any  # JobResult or EngineRun, as the runner ran it
    verdict: dict
    slurm: dict | None


@dataclass
class Launch:
    """A planned campaign (:func:`plan`): :meth:`prepare` its state directory, then :meth:`run` it."""

    policy: Policy
    modes: FileModes
    runner: Runner
    probe: ExecutorProbe
    hosts: Hosts
    resume: Path | None = None
    extend_to: float | None = None  # a resume's --deadline
    new_seeds: bool = False
    lease_note: str | None = None  # why lease_s was raised, when it was
    state: StateDir | None = None
    slurm: dict | None = None  # this job's slurm.json entry

    def prepare(self, state_dir: Path | None = None) -> StateDir:
        """Create (or, for a resume, check and extend) the state directory and hold it; record
        where the job runs. ``state_dir`` is a new campaign's (a resume's is its own)."""
        where = self.resume if self.resume is not None else state_dir
        if where is None:
            raise ConfigError("state_dir", "a new campaign needs a state directory")
        self.state = prepare_state_dir(self.policy, where, self.modes, resume=self.resume is not None,
                                       probe=self.probe, new_seeds=self.new_seeds, deadline_s=self.extend_to)
        try:
            self.slurm = self.runner.record(self.state, self.hosts, self.resume is not None)
        except BaseException:
            release(self.state)
            raise
        return self.state

    def run(self) -> Campaign:
        """Run the job, conclude (``launch.conclude``), give the state directory back, in every case."""
        state = self.state if self.state is not None else self.prepare()
        try:
            job = self.runner.run(self.policy, state, self.hosts)
            verdict = conclude(state)
        finally:
            release(state)
        if self.slurm is not None:
            verdict.update(slurm=self.slurm, lost_daemon=batch.lost_daemon(job.output))
        hint = _type_error_hint(verdict, state, self.policy)
        if hint is not None:
            verdict["hint"] = hint
        return Campaign(self.policy, state, job, verdict, self.slurm)


def plan(runner: Runner, modes: FileModes, policy: Policy | None = None, *, resume: Path | None = None,
         given: dict[str, Any] | None = None, seeds: SeedSet | None = None, lease_given: bool = False) -> Launch:
    """A new campaign of ``policy``, or with ``resume`` the campaign in that state directory with
    its stored policy, the policy fields ``given`` with the resume checked against it (a longer
    ``deadline_s`` extends it). ``seeds`` replace the executor's own (a resume publishes them as
    well); ``lease_given`` says a new campaign's ``lease_s`` was chosen, so it is not fitted.
    Nothing is written yet; a bad target, host or resume fails here."""
    if resume is not None:
        policy = resume_policy(Path(resume), modes, given or {})
    elif policy is None:
        raise ConfigError("policy", "a new campaign needs a policy (or resume, a state directory)")
    hosts = runner.hosts(policy)
    probe = check_executor(policy, seeds.seeds if seeds else None, seeds.names if seeds else None)
    note = None
    if resume is None and not lease_given:
        fitted = fit_lease(policy, probe.run_limit_s, probe.execution_limit_s)
        if fitted is not policy:
            note = (f"lease_s {fitted.timeouts.lease_s:g} s (default {policy.timeouts.lease_s:g} s): one run of this "
                    f"executor may take {probe.run_limit_s:g} s; --timeout lease_s=... sets it")
            policy = fitted
    return Launch(policy, modes, runner, probe, hosts, resume=None if resume is None else Path(resume),
                  extend_to=(given or {}).get("deadline_s") if resume is not None else None,
                  new_seeds=seeds is not None, lease_note=note)


def _type_error_hint(verdict: dict, state: StateDir, policy: Policy) -> str | None:
    """The hint for a campaign whose findings are one TypeError on the seeds (``core.finding``),
    with its message from the finding's record."""
    row = same_type_error(verdict.get("findings", []), verdict.get("public_objects", 0))
    if row is None:
        return None
    detail = list_findings(state.root, state.modes)["findings"][0]
    return type_error_hint({**row, "detail": detail.get("detail")}, verdict["public_objects"], policy.target)
