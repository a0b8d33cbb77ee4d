"""The campaign on ipyparallel MPI engines (the notebook's way to run it, DESIGN.md §11).

The engines are one ``mpiexec`` job with the flags of ``mpiexec.py``; the campaign function
runs on all of them at once (``mpi.engine``), so the notebook's kernel never initialises MPI.
An engine that dies is an expected injected failure only if the failure schedule names it
(:func:`classify_engines`).

On a Slurm cluster (``docs/slurm.md``) the engines are started one of two ways. ``engines="mpi"``
in a kernel that runs inside an allocation (``salloc``, or a Jupyter server started by
``sbatch``): ``mpiexec`` as in ``launch``, with the ranks placed on the allocation's nodes
(``launch.batch``). ``engines="slurm"`` in a kernel outside one (a login node): ipyparallel's
Slurm engine launcher submits the engine job, with a batch template of our own
(:func:`slurm_template`): its default runs ``srun ipengine``, a direct launch that has no ULFM in
Open MPI 5, so ours runs ``mpiexec --with-ft ulfm`` inside the job instead, and PRRTE starts its
daemons on the job's other nodes with ``srun``. The controller then must listen on an address
the nodes reach (``controller_ip``). Profiles live outside any run directory (:func:`ipp_root`), and a
cluster left behind by a launcher that died is stopped by :func:`ensure_stopped`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.budget import job_timeout
from ..core.modes import FileModes
from ..core.policy import Policy
from ..errors import CheckFailed, ConfigError
from ..mpi import engine
from ..store.deadline_file import read_deadlines
from ..store.paths import StateDir
from .batch import current_allocation, job_hosts
from .job import START_ATTEMPTS, START_RETRY_S
from .launcher import Runner
from .mpiexec import FT_FLAGS, find_mpiexec, forwarded_variables, job_environment, mpi_flags, placement_flags

IPP_ROOT_VAR = "SYMCC_ULFM_IPP_ROOT"
ENGINE_LAUNCHERS = ("mpi", "slurm")  # mpiexec here (inside an allocation: on its nodes), or an sbatch job


def ipp_root() -> Path:
    """Where ipyparallel profiles live: never inside a run directory, so keys are never sealed."""
    return Path(os.environ.get(IPP_ROOT_VAR) or Path(tempfile.gettempdir()) / "symcc-ulfm-ipp")


def engine_environment(modes: FileModes) -> dict[str, str]:
    """The variables mpiexec needs on top of the kernel's environment (forwarded to ranks by ``-x``)."""
    return job_environment(modes, base={})


def engine_mpi_args(policy: Policy, modes: FileModes, with_ft: bool = True,
                    hosts: tuple[tuple[str, int], ...] | None = None) -> list[str]:
    """mpiexec arguments of the engine set: the job's flags, hosts and ``-x`` forwarding.

    ``hosts`` defaults to the job's (``launch.batch.job_hosts``: the policy's, else the Slurm
    allocation's this kernel runs in). ``with_ft=False`` drops ``--with-ft ulfm`` while the policy
    still demands ULFM; it exists to show that the ranks' capability check then refuses to run
    (fail closed).
    """
    flags = mpi_flags(policy.ulfm)
    if not with_ft:
        flags = [f for f in flags if f not in FT_FLAGS]
    if hosts is None:
        hosts = job_hosts(policy, current_allocation())
    return [*flags, *placement_flags(hosts), *forwarded_variables(modes)]


def slurm_template(policy: Policy, modes: FileModes, with_ft: bool = True, sbatch_options: str = "") -> str:
    """The batch script of ``engines="slurm"`` (ipyparallel fills in ``{n}``, ``{cluster_id}``,
    ``{profile_dir}``, ``{output_file}`` and ``{program_and_args}``): ``mpiexec --with-ft ulfm`` over
    the job's task slots in node order, never ``srun`` direct launch. ``sbatch_options`` (e.g.
    ``--nodes=2 --partition=long``) become ``#SBATCH`` lines; ``--no-kill`` keeps the allocation when
    a node fails. The job runs in the cluster's profile and writes to ipyparallel's engine log
    there (which it reads back), never into the directory it was submitted from."""
    args = engine_mpi_args(policy, modes, with_ft, hosts=())  # the job's nodes are known only inside it
    command = shlex.join([find_mpiexec(), *args, "--map-by", "slot"]).replace("{", "{{").replace("}", "}}")
    options = [f"#SBATCH {option}" for option in shlex.split(sbatch_options)]
    return "\n".join(["#!/bin/sh", "#SBATCH --export=ALL", "#SBATCH --job-name=ipengine-{cluster_id}",
                      "#SBATCH --ntasks={n}", "#SBATCH --no-kill", "#SBATCH --chdir={profile_dir}",
                      "#SBATCH --output={output_file}", *options,
                      f"exec {command} -n {{n}} {{program_and_args}} --mpi", ""])


def _is_engine_death(value: Any) -> bool:
    return isinstance(value, BaseException) and getattr(value, "ename", type(value).__name__) == "EngineError"


def classify_engines(results: dict[int, Any], scheduled: set[int] | frozenset[int]) -> dict[str, Any]:
    """Sort engine results by stable rank: finished (a dict), died (EngineError) or failed (any other error).

    A death is expected only if the failure schedule names that rank; a scheduled victim that
    is still alive, an unscheduled death or any error makes ``as_scheduled`` false.
    """
    engines, died = [], []
    for rank in sorted(results):
        value = results[rank]
        if isinstance(value, dict):
            engines.append({"rank": rank, "status": "finished", "detail": value})
        elif _is_engine_death(value):
            died.append(rank)
            engines.append({"rank": rank, "status": "died", "detail": str(value)})
        else:
            detail = f"{getattr(value, 'ename', type(value).__name__)}: {getattr(value, 'evalue', value)}"
            engines.append({"rank": rank, "status": "failed", "detail": detail})
    unexpected = sorted(set(died) - set(scheduled))
    alive = sorted(set(scheduled) - set(died))
    failed = [e["rank"] for e in engines if e["status"] == "failed"]
    return {
        "engines": engines,
        "died": died,
        "failed": failed,
        "scheduled_victims": sorted(scheduled),
        "unexpected_deaths": unexpected,
        "victims_alive": alive,
        "as_scheduled": not (unexpected or alive or failed),
    }


def ipcluster_stop(profile_dir: Path, cluster_id: str) -> None:
    """Fallback: ``ipcluster stop`` stops a controller and engines that outlived their launcher."""
    local = Path(sys.executable).parent / "ipcluster"
    command = [str(local) if local.exists() else "ipcluster", "stop", "--profile-dir", str(profile_dir),
               "--cluster-id", cluster_id]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)


def cluster_processes(cluster_id: str) -> list[Any]:
    """Live processes of one cluster: ipyparallel starts the controller and mpiexec (hence the
    engines) with ``IPP_CLUSTER_ID`` in their environment; their command lines do not name it."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            if process.pid != os.getpid() and process.environ().get("IPP_CLUSTER_ID") == cluster_id:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


def ensure_stopped(cluster_id: str) -> bool:
    """Stop what is left of cluster ``cluster_id`` (after a hard death of its launcher) and remove
    its profile; True when anything was found."""
    profile_dir = ipp_root() / cluster_id
    found = profile_dir.exists()
    if found:
        ipcluster_stop(profile_dir, cluster_id)
        shutil.rmtree(profile_dir, ignore_errors=True)
    survivors = cluster_processes(cluster_id)
    for process in survivors:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGKILL)
    return found or bool(survivors)


def _kill_leftovers(launchers: list[Any]) -> None:
    """Kill the process group of any launcher (controller, mpiexec) that survived a stop."""
    for launcher in launchers:
        pid = getattr(launcher, "pid", None)
        process = getattr(launcher, "process", None)
        if pid is None or process is None or not process.is_running():
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


@dataclass
class EngineRun:
    """What happened on the engines: per-rank results classified against the schedule."""

    classification: dict[str, Any]
    seconds: float
    startup_seconds: float
    timed_out: bool
    output: str = ""
    notes: list[str] = field(default_factory=list)  # engine jobs started again (``_wait_for_engines``)

    @property
    def as_scheduled(self) -> bool:
        return self.classification["as_scheduled"] and not self.timed_out

    def problems(self) -> list[str]:
        """Why the engines did not behave as scheduled (empty when they did)."""
        c = self.classification
        out = [f"engine {e['rank']} failed: {str(e['detail'])[:400]}" for e in c["engines"] if e["status"] == "failed"]
        if c["unexpected_deaths"]:
            out.append(f"engines {c['unexpected_deaths']} died but the failure schedule does not name them")
        if c["victims_alive"]:
            out.append(f"scheduled victims {c['victims_alive']} did not die")
        if self.timed_out:
            out.append("the campaign did not return within the job timeout")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"format": "symcc-ulfm-engines/1", "seconds": round(self.seconds, 3),
                "startup_seconds": round(self.startup_seconds, 3), "timed_out": self.timed_out,
                **self.classification, "as_scheduled": self.as_scheduled, "notes": self.notes}


def run_on_engines(
    policy: Policy,
    state_dir: Path,
    modes: FileModes,
    cluster_id: str,
    before_campaign: Callable[[], Any] | None = None,
    progress: Callable[[], Any] | None = None,
    with_ft: bool = True,
    poll_s: float = 0.5,
    launcher: str = "mpi",
    sbatch_options: str = "",
    controller_ip: str = "",
    startup: Callable[[str], Any] | None = None,
) -> EngineRun:
    """Start ``policy.ranks`` MPI engines, run ``run_campaign`` on all of them at once, always stop them.

    ``before_campaign`` runs once the engines are up, right before the campaign is submitted
    (the live provenance check); ``startup`` is told in words what start-up waits for (the
    controller, then "N of M engines up" about every second), ``progress`` is called every
    ``poll_s`` while the campaign runs. The campaign gets only plain data (the state directory
    path) and returns plain dicts. ``launcher`` is ``mpi`` or ``slurm`` (the module docstring;
    ``sbatch_options`` and ``controller_ip`` are for ``slurm``).
    """
    say = startup or (lambda _words: None)
    import ipyparallel as ipp

    if launcher not in ENGINE_LAUNCHERS:
        raise ConfigError("engines", f"{launcher!r}: expected one of {', '.join(ENGINE_LAUNCHERS)}")
    mpi_args = engine_mpi_args(policy, modes, with_ft) if launcher == "mpi" else None  # bad hosts fail here
    profile_dir = ipp_root() / cluster_id
    if profile_dir.exists():
        raise FileExistsError(f"{profile_dir} exists: cluster {cluster_id} is running or was not cleaned up")
    profile_dir.mkdir(parents=True, mode=0o700)
    cluster = ipp.Cluster(engines=launcher, n=policy.ranks, profile_dir=str(profile_dir), cluster_id=cluster_id,
                          log_level=logging.ERROR, engine_timeout=int(policy.timeouts.startup_s),
                          **({"controller_ip": controller_ip} if controller_ip else {}))
    if launcher == "mpi":
        engine_launcher = cluster.config.MPIEngineSetLauncher
        engine_launcher.mpi_cmd = [find_mpiexec()]
        engine_launcher.mpi_args = mpi_args
    else:
        engine_launcher = cluster.config.SlurmEngineSetLauncher
        engine_launcher.batch_template = slurm_template(policy, modes, with_ft, sbatch_options)
        engine_launcher.batch_file_name = str(profile_dir / "engines.sbatch")  # absolute: not in the cwd
    engine_launcher.environment = engine_environment(modes)
    started = time.monotonic()
    client = None
    try:
        say(f"starting the ipyparallel controller and the MPI job of {policy.ranks} engines "
            + ("(an sbatch job)" if launcher == "slurm" else "(mpiexec)"))
        cluster.start_cluster_sync()
        client = cluster.connect_client_sync()
        notes = _wait_for_engines(cluster, client, policy.ranks, policy.timeouts.startup_s, say)
        engine_sets = list(cluster.engines.values())
        startup_s = time.monotonic() - started
        view = client[:]
        targets = list(view.targets)
        ranks = dict(zip(targets, view.apply_sync(engine.world_rank), strict=True))
        say(f"{policy.ranks} engines up after {startup_s:.1f} s" + ("; checking provenance" if before_campaign else ""))
        if before_campaign is not None:
            before_campaign()
        say(f"campaign submitted to {policy.ranks} engines; ranks starting")
        mark = time.monotonic()
        result = view.apply_async(engine.campaign, str(Path(state_dir).absolute()))
        bound = job_timeout(policy, read_deadlines(StateDir(state_dir, modes), policy).latest)
        limit = mark + bound
        while not result.ready() and time.monotonic() < limit:
            result.wait(poll_s)
            if progress is not None:
                progress()
        timed_out = not result.ready()
        if timed_out:
            values: list[Any] = [TimeoutError(f"no result within {bound:.0f} s")] * len(targets)
        else:
            values = result.get(return_exceptions=True)
        seconds = time.monotonic() - mark
        output = _engine_output(engine_sets)
    finally:
        _stop(cluster, client, profile_dir, cluster_id)
    by_rank = {ranks[t]: v for t, v in zip(targets, values, strict=True)}
    scheduled = {event.rank for event in policy.failure_schedule}
    return EngineRun(classify_engines(by_rank, scheduled), seconds, startup_s, timed_out, output, notes)


def _stop(cluster: Any, client: Any, profile_dir: Path, cluster_id: str) -> None:
    """Stop controller and engines in every case; then remove the profile (and its keys)."""
    launchers = [x for x in (cluster.controller, *cluster.engines.values()) if x is not None]
    try:
        if client is not None:
            client.close()
        cluster.stop_cluster_sync()
    finally:
        _kill_leftovers(launchers)
        if (profile_dir / "security" / f"cluster-{cluster_id}.json").exists():
            ipcluster_stop(profile_dir, cluster_id)
        shutil.rmtree(profile_dir, ignore_errors=True)
        ensure_stopped(cluster_id)


def _wait_for_engines(cluster: Any, client: Any, n: int, timeout_s: float, say: Callable[[str], Any]) -> list[str]:
    """Wait for ``n`` engines, failing early (with mpiexec's output) when the engine job has exited.

    A job that exits before any engine registered (``mpiexec`` failing to start, as PRRTE does now
    and then under load) changed nothing, the campaign not having begun: it is started again, at
    most ``START_ATTEMPTS`` times in all, as ``launch`` does with its job (``job.py``). Returns a
    note for each such start."""
    from ipyparallel.error import EngineError

    limit = time.monotonic() + timeout_s
    notes: list[str] = []
    while True:
        say(f"MPI engines starting: {len(client.ids)} of {n} up")
        try:
            client.wait_for_engines(n, interactive=False, timeout=1)
            return notes
        except (TimeoutError, EngineError):  # not all up yet; or the engine job stopped (checked below)
            pass
        engine_sets = list(cluster.engines.values())
        exited = _exited(engine_sets[-1])
        if exited and not client.ids and len(notes) + 1 < START_ATTEMPTS:
            last = _engine_output(engine_sets[-1:]).strip().splitlines()[-1:]
            notes.append(f"the MPI engine job exited before any engine started (attempt {len(notes) + 1}: "
                         f"{' '.join(last) or 'no output'}); started again")
            time.sleep(START_RETRY_S)
            cluster.start_engines_sync(n)
            continue
        if exited or time.monotonic() > limit:
            state = "exited" if exited else f"not up after {timeout_s:.0f} s"
            raise CheckFailed(f"MPI engine job {state} with {len(client.ids)}/{n} engines:\n"
                              f"{_engine_output(engine_sets)[-3000:]}" + "".join(f"\n{note}" for note in notes))


def _exited(engine_set: Any) -> bool:
    """Whether an engine job has ended: asked of its process directly (``poll``), since the
    launcher's own notice waits for an event loop that only a notebook's kernel runs; a batch job's
    launcher knows it only from that notice."""
    engine_set.poll()
    return not engine_set.running


def _engine_output(engine_sets: list[Any]) -> str:
    return "".join(s.get_output(remove=False) or "" for s in engine_sets)


@dataclass
class Engines(Runner):
    """The job on ipyparallel MPI engines (``launch.engines.run_on_engines``, whose arguments these are)."""

    cluster_id: str = ""
    before_campaign: Callable[[], Any] | None = None
    startup: Callable[[str], Any] | None = None
    with_ft: bool = True
    launcher: str = "mpi"
    sbatch_options: str = ""
    controller_ip: str = ""

    def _job(self, policy: Policy, state: StateDir, hosts: tuple) -> EngineRun:
        return run_on_engines(policy, state.root, state.modes, cluster_id=self.cluster_id,
                              before_campaign=self.before_campaign, progress=self.progress, startup=self.startup,
                              with_ft=self.with_ft, launcher=self.launcher, sbatch_options=self.sbatch_options,
                              controller_ip=self.controller_ip)
