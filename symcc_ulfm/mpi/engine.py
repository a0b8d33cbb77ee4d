"""What runs on an ipyparallel MPI engine (``launch.engines`` submits these functions by reference).

mpi4py is imported inside the functions, on the engine: the notebook's kernel imports this
module to name them and must never initialise MPI itself.
"""

from __future__ import annotations


def world_rank() -> int:
    """This engine's rank in the engine job's world: its stable rank."""
    from mpi4py import MPI

    return MPI.COMM_WORLD.Get_rank()


def campaign(state_dir: str) -> dict:
    """Run this rank's part of the campaign in ``state_dir`` and return its outcome (plain data)."""
    from .campaign import run_campaign

    return run_campaign(state_dir)
