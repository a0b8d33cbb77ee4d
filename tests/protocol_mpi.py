"""Play every protocol scenario (``protocol_scenarios``) under mpiexec, one after the other.

``mpiexec -n 4 python tests/protocol_mpi.py ROOT``: for each scenario, rank 0 prepares
``ROOT/<scenario>`` and runs the master driver over ``mpi.channels.MpiTransport``; the scripted
ranks play their part over the same transport and write what they observed to
``observed-<rank>.json``; rank 3 only takes part in the communicators.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402
from protocol_scenarios import MASTER, SCENARIOS, MpiBench, prepare, rank_state  # noqa: E402

from symcc_ulfm.mpi.channels import MpiTransport  # noqa: E402
from symcc_ulfm.mpi.context import RankContext  # noqa: E402
from symcc_ulfm.runtime.master_driver import MasterDriver  # noqa: E402


def main(root: Path) -> None:
    world = MPI.COMM_WORLD.Dup()
    world.Set_errhandler(MPI.ERRORS_RETURN)
    rank = world.Get_rank()
    for scenario in SCENARIOS:
        directory = root / scenario.name
        if rank == MASTER:
            prepare(directory)
        started = np.array([time.time()])
        world.Bcast([started, MPI.DOUBLE], root=MASTER)
        ctx = RankContext(**rank_state(directory, scenario, rank, float(started[0])), global_comm=world,
                          world_group=world.Get_group())
        layout = ctx.membership.layout
        group = layout.group_of(rank)
        ctx.group_comm = world.Split(group.index, rank)
        ctx.master_comm = world.Split(0 if rank in layout.masters else MPI.UNDEFINED, rank)
        ctx.post_revocation_sentinel()
        transport = MpiTransport(ctx)
        if rank == MASTER:
            driver = MasterDriver(ctx, transport)
            try:
                driver.prepare()
                driver.run()
            finally:
                driver.close()
        else:
            bench = MpiBench(directory, transport, ctx.deadline)
            for player, play in scenario.phases:
                if player == rank:
                    observed = play(bench)
                    (directory / f"observed-{rank}.json").write_text(json.dumps(observed))
        world.Barrier()
        transport.close()
        ctx.revocation.cancel()
        for comm in (ctx.group_comm, ctx.master_comm):
            if comm != MPI.COMM_NULL:
                comm.Free()
        ctx.log.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
