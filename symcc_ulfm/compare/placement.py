"""Where a study's cells run: disjoint core sets of this machine, or job steps of a Slurm allocation;
how a running cell is stopped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from contextlib import suppress

from ..core.allocation import from_environment
from ..errors import ConfigError


def core_sets(cores: int, parallel: int) -> list[list[int]]:
    """``parallel`` disjoint sets of ``cores`` cores each, of those this process may use."""
    available = sorted(os.sched_getaffinity(0))
    if parallel < 1 or parallel * cores > len(available):
        raise ConfigError("--parallel", f"{parallel} cell(s) of {cores} cores each need {parallel * cores} cores; "
                                        f"this process may use {len(available)} ({available})")
    return [available[k * cores:(k + 1) * cores] for k in range(parallel)]


def step_slots(cores: int, parallel: int, env: dict[str, str]) -> list[list[int]]:
    """``parallel`` slots for cells run as Slurm job steps (their cores are the step's): the
    allocation must hold them (``parallel`` x ``cores`` CPUs in task slots)."""
    allocation = from_environment(env)
    if allocation is None:
        raise ConfigError("--slurm-steps", "not inside a Slurm allocation (no SLURM_JOB_ID): run the study from "
                                           "an sbatch script or salloc")
    cpus = int(env.get("SLURM_CPUS_PER_TASK") or 1) * allocation.slots
    if parallel < 1 or parallel * cores > cpus:
        raise ConfigError("--parallel", f"{parallel} cell(s) of {cores} cores each need {parallel * cores} CPUs; "
                                        f"the allocation {allocation.job_id} has {cpus}")
    return [[] for _ in range(parallel)]


def step_prefix(cores: int, name: str) -> list[str]:
    """``srun`` starting a cell as a job step on ``cores`` CPUs of one node of the allocation."""
    return [shutil.which("srun") or "srun", "--exact", "--nodes=1", "--ntasks=1", f"--cpus-per-task={cores}",
            "--cpu-bind=cores", "--kill-on-bad-exit=1", f"--job-name={name}", "--quiet"]


def kill_group(process: subprocess.Popen) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)
