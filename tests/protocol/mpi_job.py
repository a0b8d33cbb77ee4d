"""Play every message-protocol scenario (``scenarios``) under mpiexec, one after the other.

``mpiexec -n 6 python tests/protocol/mpi_job.py ROOT``: for each scenario, rank 0 prepares
``ROOT/<scenario>``; in each stage every rank plays its role over ``mpi.channels.MpiTransport``
on the communicators of the stage's layout: the real master driver, the real worker loop, a
scripted part (what it observed goes to ``observed-<rank>.json``; a play that fails records why
there, and the job plays on) or nothing. As on the loopback bench, the deadline counts from when
every rank is set up (:func:`start_the_clock`), and every real worker's READY is out and every
real master has started before any master takes its first turn. A real role that ends says so
(``MpiBench.ended``); a real master that the stage lets die stops where it is; the others run to
their ends.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from helpers.master_invariants import checked  # noqa: E402
from mpi4py import MPI  # noqa: E402
from scenarios import (  # noqa: E402
    MASTER,
    MASTER_ROLE,
    SCENARIOS,
    WORKER_ROLE,
    Dies,
    MpiBench,
    played,
    policy_of,
    prepare,
    rank_state,
    real_master,
    snapshots,
)

from symcc_ulfm.core.master.machine import MasterState  # noqa: E402
from symcc_ulfm.mpi.channels import MpiTransport  # noqa: E402
from symcc_ulfm.mpi.context import RankContext  # noqa: E402
from symcc_ulfm.runtime.backoff import Backoff  # noqa: E402
from symcc_ulfm.runtime.worker_loop import WorkerLoop  # noqa: E402
from symcc_ulfm.store.deadline_file import read_deadlines, write_deadlines  # noqa: E402
from symcc_ulfm.store.paths import StateDir  # noqa: E402

MasterState.handle = checked(MasterState.handle)  # the invariants after every event (helpers.master_invariants)


def play_stage(world, directory: Path, scenario, index: int, stage, rank: int) -> None:
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
    world.Barrier()
    if rank == MASTER:
        start_the_clock(directory, scenario)
    world.Barrier()
    role = stage.roles.get(rank)
    driver = worker = None
    if role == MASTER_ROLE:
        driver = real_master(ctx, transport, stage)
        driver.prepare()
    elif role == WORKER_ROLE:
        worker = WorkerLoop(ctx, transport)
        worker.start()
    world.Barrier()
    if driver is not None:
        try:
            driver.run()
        except Dies:
            pass
        finally:
            driver.close()
    elif worker is not None:
        backoff = Backoff(ctx.hot_rounds)
        while not worker.stopped:
            if worker.step():
                backoff.reset()
            else:
                backoff.idle()
        worker.finish()
    elif callable(role):
        bench = MpiBench(directory, transport, ctx.deadline, stage.real, index)
        (directory / f"observed-{rank}.json").write_text(json.dumps(played(role, bench)))
    if role in (MASTER_ROLE, WORKER_ROLE):
        ctx.log.flush_limited()
        MpiBench.ended(directory, index, rank).touch()
    world.Barrier()
    transport.close()
    ctx.revocation.cancel()
    for comm in (ctx.group_comm, ctx.master_comm):
        if comm != MPI.COMM_NULL:
            comm.Free()
    ctx.log.close()
    ctx.close_executor()


def start_the_clock(root: Path, scenario) -> None:
    """The stage's deadline counts from now, when every rank is set up (as on the loopback bench,
    where setting up takes no time): the deadline in force for the epoch is extended, as a resume
    extends it (``store.deadline_file``), by the time the ranks took to get here, before any role
    reads it."""
    state = StateDir(root)
    epoch = snapshots(root).current()
    deadlines = read_deadlines(state, policy_of(scenario))
    late = time.time() - epoch.epoch_started_at
    write_deadlines(state, deadlines.extended(epoch.epoch, deadlines.of_epoch(epoch.epoch) + late))


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
        for index, stage in enumerate(scenario.stages):
            play_stage(world, directory, scenario, index, stage, rank)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
