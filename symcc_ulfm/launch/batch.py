"""A campaign job inside a Slurm allocation (``sbatch``/``salloc``): its hosts, their record.

Open MPI 5 runs inside an allocation through ``mpirun``, not by direct launch with ``srun``:
PRRTE reads the allocation from Slurm's variables and starts one ``prted`` per other node with
``srun``; the ranks are the daemons' children. ``launch`` without ``--hosts`` therefore places
the ranks on the allocation's nodes itself (``core.allocation.placement``) and passes them as
``-H node:slots --map-by slot``, so the host of each stable rank is known before the job starts
and ``--minimum-hosts`` is checked against it: a job that could not satisfy it is refused (exit
2) before anything is written. The allocation of each job is appended to the state's
``slurm.json`` (``store.allocations``) before the job starts.

The allocation is not part of the policy: a campaign resumed in a later job runs on whatever
nodes that job got, with the same policy SHA-256.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from ..core.allocation import Allocation, from_environment, placement
from ..core.hosts import format_hosts
from ..core.policy import Policy
from ..errors import HostSpecError, PolicyError
from ..store.allocations import record_allocation
from ..store.paths import StateDir

# What PRRTE 3.0 prints when it loses a remote daemon (prted), after which it ends the whole job:
# the first when it notices the daemon's connection close, the second when it notices first that
# the ``srun`` which started the daemons exited (which of the two comes first is a race).
LOST_DAEMON = ("PRTE has lost communication with a remote daemon",
               "from launching\nthe per-node daemon")


def current_allocation(env: Mapping[str, str] | None = None) -> Allocation | None:
    """The allocation this process runs in (None outside Slurm); malformed variables exit 2."""
    return from_environment(os.environ if env is None else env)


def job_hosts(policy: Policy, allocation: Allocation | None) -> tuple[tuple[str, int], ...]:
    """The hosts the job's ranks go to: ``--hosts`` when given (inside an allocation they must be
    its nodes), else the allocation's placement, else () for this machine alone."""
    if policy.hosts:
        if allocation is not None:
            foreign = [name for name, _ in policy.hosts if name not in allocation.nodes]
            if foreign:
                raise HostSpecError("hosts", f"{', '.join(foreign)} not in the Slurm allocation {allocation.job_id} "
                                             f"({', '.join(allocation.nodes)}); leave --hosts out to use the allocation")
        return policy.hosts
    if allocation is None:
        if policy.minimum_hosts > 1:
            raise PolicyError("minimum_hosts", f"{policy.minimum_hosts} hosts required but the job runs on this machine "
                                               "alone: name them with --hosts or launch inside a Slurm allocation")
        return ()
    hosts = placement(allocation, policy.ranks)
    if len(hosts) < policy.minimum_hosts:
        raise PolicyError("minimum_hosts", f"{policy.minimum_hosts} hosts required but {policy.ranks} ranks fill only "
                                           f"{len(hosts)} of the allocation's nodes ({format_hosts(hosts)}); request "
                                           "fewer tasks per node or lower --minimum-hosts")
    return hosts


def record(state: StateDir, allocation: Allocation, hosts: tuple[tuple[str, int], ...], resume: bool) -> dict:
    """Append this job's allocation to the state's ``slurm.json``; the entry written."""
    entry = {**allocation.to_json(), "placement": format_hosts(hosts), "resume": resume,
             "recorded_at": round(time.time(), 3)}
    record_allocation(state, entry)
    return entry


def lost_daemon(output: bytes) -> bool:
    """Whether the job's output shows that PRRTE lost a node's daemon (and so ended the job)."""
    return any(text.encode() in output for text in LOST_DAEMON)
