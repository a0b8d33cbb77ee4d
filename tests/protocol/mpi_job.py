"""Play every message-protocol scenario (``scenarios``) under mpiexec, one after the other.

``mpiexec -n 6 python tests/protocol/mpi_job.py ROOT``: for each scenario, rank 0 prepares
``ROOT/<scenario>``; in each stage every rank plays its role over ``mpi.channels.MpiTransport``
on the communicators of the stage's layout: the real master driver, the real worker loop, a
scripted part (what it observed goes to ``observed-<rank>.json``) or nothing. A real master that
the stage lets die stops where it is; the others run to their ends.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402
from scenarios import (  # noqa: E402
    MASTER,
    MASTER_ROLE,
    SCENARIOS,
    WORKER_ROLE,
    Dies,
    MpiBench,
    prepare,
    rank_state,
    real_master,  # noqa: E402
)

from symcc_ulfm.mpi.channels import MpiTransport  # noqa: E402
from symcc_ulfm.mpi.context import RankContext  # noqa: E402
from symcc_ulfm.runtime.worker_loop import WorkerLoop  # noqa: E402


def play_stage(world, directory: Path, scenario, stage, rank: int) -> None:
    if rank == MASTER and stage.before:
        stage.before(directory, time.time())
    world.Barrier()
    state = rank_state(directory, scenario, stage, rank)
    ctx = RankContext(**{f: getattr(state, f) for f in ("stable", "policy", "state", "log", "injector")},
                      peers=state.peers, hot_rounds=0, global_comm=world, world_group=world.Get_group())
    ctx.set_generation(state.membership)
    layout = ctx.membership.layout
    group = layout.group_of(rank)
    ctx.group_comm = world.Split(group.index if group else MPI.UNDEFINED, rank)
    ctx.master_comm = world.Split(0 if rank in layout.masters else MPI.UNDEFINED, rank)
    ctx.post_revocation_sentinel()
    transport = MpiTransport(ctx)
    role = stage.roles.get(rank)
    if role == MASTER_ROLE:
        driver = real_master(ctx, transport, stage)
        try:
            driver.prepare()
            driver.run()
        except Dies:
            pass
        finally:
            driver.close()
    elif role == WORKER_ROLE:
        WorkerLoop(ctx, transport).run()
    elif callable(role):
        bench = MpiBench(directory, transport, ctx.deadline)
        (directory / f"observed-{rank}.json").write_text(json.dumps(role(bench)))
    world.Barrier()
    transport.close()
    ctx.revocation.cancel()
    for comm in (ctx.group_comm, ctx.master_comm):
        if comm != MPI.COMM_NULL:
            comm.Free()
    ctx.log.close()
    ctx.close_executor()


def main(root: Path) -> None:
    world = MPI.COMM_WORLD.Dup()
    world.Set_errhandler(MPI.ERRORS_RETURN)
    rank = world.Get_rank()
    for scenario in SCENARIOS:
        directory = root / scenario.name
        started = np.array([time.time()])
        world.Bcast([started, MPI.DOUBLE], root=MASTER)
        if rank == MASTER:
            prepare(directory, scenario, float(started[0]))
        for stage in scenario.stages:
            play_stage(world, directory, scenario, stage, rank)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
