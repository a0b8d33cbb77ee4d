"""Fault-tolerance operations behind one interface: ULFM, or plain MPI for ``--no-ulfm``.

The campaign code calls ``agree``/``shrink``/``revoke`` and never asks which one it has. The
plain variant exists only for the fault-free baseline: agreement becomes an allreduce of the
flags, and a failure cannot be survived, so ``shrink`` stops the campaign (all durable state
is already consistent at every step).

Two rules learned the hard way with Open MPI 5.0.11 (see ``docs/openmpi.md``):

* ``Ishrink`` fails with ``ERR_INTERN``: shrink is blocking, bounded by a watchdog.
* An agreement left pending on a communicator that others then shrink is matched with the
  shrink's internal agreement and everyone hangs. So every agreement on a communicator that
  may be shrunk is entered by all ranks at the same logical point, carrying a success flag
  instead of bailing out early; the only long-pending agreement (the final one) lives on a
  communicator of its own, which recovery revokes.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..errors import CheckFailed
from .requests import failure, revoke_quietly


class NoFaultTolerance(CheckFailed):
    """A failure happened in a ``--no-ulfm`` campaign: it stops, state intact."""


class UlfmOps:
    name = "ulfm"

    def revoke(self, comm: MPI.Comm | None) -> None:
        revoke_quietly(comm)

    def shrink(self, comm: MPI.Comm, where: str) -> MPI.Comm:
        try:
            new = comm.Shrink()
        except MPI.Exception as exc:
            raise failure(where, exc) from None
        new.Set_errhandler(MPI.ERRORS_RETURN)
        return new

    def agree(self, comm: MPI.Comm, flag: int, where: str) -> int:
        """Uniform agreement (bitwise AND of the flags); raises FailureDetected on a new failure."""
        try:
            return int(comm.Agree(flag))
        except MPI.Exception as exc:
            raise failure(where, exc) from None

    def start_agree(self, comm: MPI.Comm, flag: int, where: str) -> tuple[MPI.Request, np.ndarray]:
        buf = np.array([flag], dtype=np.int32)
        try:
            return comm.Iagree(buf), buf
        except MPI.Exception as exc:
            raise failure(where, exc) from None


class PlainOps:
    name = "plain"

    def revoke(self, comm: MPI.Comm | None) -> None:
        """Nothing to revoke without ULFM."""

    def shrink(self, comm: MPI.Comm, where: str) -> MPI.Comm:
        raise NoFaultTolerance(f"{where}: a rank failed in a --no-ulfm campaign; stopping with state intact")

    def agree(self, comm: MPI.Comm, flag: int, where: str) -> int:
        try:
            return _allreduce_band(comm, flag)
        except MPI.Exception as exc:
            raise failure(where, exc) from None

    def start_agree(self, comm: MPI.Comm, flag: int, where: str) -> tuple[MPI.Request, np.ndarray]:
        pair = np.array([flag, 0], dtype=np.int32)
        try:
            request = comm.Iallreduce([pair[0:1], MPI.INT32_T], [pair[1:2], MPI.INT32_T], op=MPI.BAND)
        except MPI.Exception as exc:
            raise failure(where, exc) from None
        return request, pair[1:2]  # the view keeps the send half alive until completion


def _allreduce_band(comm: MPI.Comm, flag: int) -> int:
    send = np.array([flag], dtype=np.int32)
    recv = np.zeros(1, dtype=np.int32)
    comm.Allreduce([send, MPI.INT32_T], [recv, MPI.INT32_T], op=MPI.BAND)
    return int(recv[0])


def ops_for(ulfm: bool) -> UlfmOps | PlainOps:
    return UlfmOps() if ulfm else PlainOps()
