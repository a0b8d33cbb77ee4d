"""Transport: buffers, tags, bounded waits, and what counts as a failure.

Messages are bytes (see ``core.envelope``) moved with buffer-based calls (``Isend``/``Irecv``
on ``MPI.BYTE``): nothing is pickled. Every wait is a ``Test`` loop with an exponential
sleep back-off (``runtime.backoff.Backoff``), so a blocked rank uses almost no CPU and every wait can be
bounded. Any error of a request on an FT path (``ERR_PROC_FAILED``, ``..._PENDING``,
``ERR_REVOKED``, and ``ERR_OTHER`` which Open MPI returns on some failed collectives) raises
:class:`FailureDetected`, which sends the rank into recovery.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mpi4py import MPI

from ..errors import ProtocolError
from ..runtime.backoff import HOT_ROUNDS, Backoff
from ..runtime.transport import PeerFailure

TAG_DATA = 11  # READY, WORK, RESULT, STOP inside a group
TAG_SENTINEL = 12  # never sent: a master's per-worker failure sentinel
TAG_REVOKE = 13  # never sent: every rank's revocation sentinel on the global communicator
TAG_FRONTIER = 14  # FRONTIER between masters
TAG_WARMUP = 15
TAG_CONTROL = 16  # PROBE, STATUS, EXHAUSTED: deciding that the search is exhausted (exhaustion.py)

class FailureDetected(PeerFailure):
    """A request or collective failed the way a process failure or revocation makes it fail."""

    def __init__(self, where: str, error_class: int):
        self.error_class = error_class
        super().__init__(where, f"{where}: MPI error class {error_class}")


class WaitTimeout(Exception):
    """A bounded wait expired."""


def error_class(exc: MPI.Exception) -> int:
    return exc.Get_error_class()


def failure(where: str, exc: MPI.Exception) -> FailureDetected:
    return FailureDetected(where, error_class(exc))


_RETAINED: list[Inbox] = []


@dataclass
class Inbox:
    """A posted receive with its own reusable buffer.

    MPI may write into the buffer until the request completes, which after a revocation can be
    long after the loop that posted it is gone; so every posted inbox is retained for the life
    of the process (a handful per generation) instead of being left to the garbage collector.
    A message larger than the buffer is truncated by MPI: it is rejected with ProtocolError
    and the receive is posted again; it never triggers recovery.
    """

    comm: MPI.Comm
    source: int
    tag: int
    size: int
    buffer: bytearray = field(init=False)
    request: MPI.Request | None = field(default=None, init=False)
    status: MPI.Status = field(default_factory=MPI.Status, init=False)
    retained: bool = field(default=False, init=False)

    def __post_init__(self):
        self.buffer = bytearray(self.size)

    def post(self) -> Inbox:
        try:
            self.request = self.comm.Irecv([self.buffer, MPI.BYTE], source=self.source, tag=self.tag)
        except MPI.Exception as exc:
            raise failure(f"posting a receive from {self.source}", exc) from None
        if not self.retained:
            self.retained = True
            _RETAINED.append(self)
        return self

    def test(self, where: str) -> bytes | None:
        """The message if one arrived (the receive is then re-posted), else None."""
        try:
            done = self.request.Test(self.status)
        except MPI.Exception as exc:
            if exc.Get_error_class() == MPI.ERR_TRUNCATE:
                self.post()
                raise ProtocolError(f"{where}: message larger than {self.size} bytes, rejected") from None
            raise failure(where, exc) from None
        if not done:
            return None
        data = bytes(self.buffer[: self.status.Get_count(MPI.BYTE)])
        self.post()
        return data

    def cancel(self) -> None:
        """Withdraw the pending receive at the orderly end of a loop (errors mean it is gone anyway)."""
        if self.request is None:
            return
        try:
            self.request.Cancel()
            self.request.Wait()
        except MPI.Exception:
            pass


@dataclass
class Mailbox:
    """Messages of up to ``limit`` bytes from one source, received by probing (no posted buffer).

    ``Improbe`` then a receive into a buffer of exactly the probed size: nothing is allocated
    while nothing arrives (a master with many workers and peers used to keep a ``limit``-sized
    buffer posted for each of them), and an oversized message is received, discarded and
    rejected with ProtocolError; it never triggers recovery. Probing a dead source fails like a
    receive.
    """

    comm: MPI.Comm
    source: int
    tag: int
    limit: int
    status: MPI.Status = field(default_factory=MPI.Status, init=False)

    def post(self) -> Mailbox:
        return self

    def test(self, where: str) -> bytes | None:
        try:
            message = self.comm.Improbe(source=self.source, tag=self.tag, status=self.status)
            if message is None:
                return None
            size = self.status.Get_count(MPI.BYTE)
            # Drained whole even when oversized: receiving a large matched message into a
            # shorter buffer crashed the TCP transport of Open MPI 5.0.11 (readv EFAULT, SIGSEGV).
            buffer = bytearray(size)
            message.Recv([buffer, MPI.BYTE])
        except MPI.Exception as exc:
            raise failure(where, exc) from None
        if size > self.limit:
            raise ProtocolError(f"{where}: message of {size} bytes is larger than {self.limit} bytes, rejected")
        return bytes(buffer)

    def cancel(self) -> None:
        """Nothing is posted, so nothing to withdraw."""


class Outbox:
    """Nonblocking sends whose completion is driven by the owner's poll loop."""

    def __init__(self):
        self._pending: list[tuple[str, MPI.Request, bytes]] = []

    def send(self, comm: MPI.Comm, dest: int, tag: int, data: bytes, where: str) -> None:
        try:
            request = comm.Isend([data, MPI.BYTE], dest=dest, tag=tag)
        except MPI.Exception as exc:
            raise failure(where, exc) from None
        self._pending.append((where, request, data))

    def progress(self) -> None:
        still = []
        for where, request, data in self._pending:
            try:
                if not request.Test():
                    still.append((where, request, data))
            except MPI.Exception as exc:
                raise failure(where, exc) from None
        self._pending = still

    @property
    def busy(self) -> bool:
        return bool(self._pending)


def wait_request(request: MPI.Request, where: str, timeout_s: float, watch: list[Inbox] | None = None,
                 hot_rounds: int = HOT_ROUNDS) -> Any:
    """Wait for one request, also testing ``watch`` inboxes (sentinels); bounded by ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    backoff = Backoff(hot_rounds)
    status = MPI.Status()
    while True:
        try:
            if request.Test(status):
                return status
        except MPI.Exception as exc:
            raise failure(where, exc) from None
        for inbox in watch or ():
            inbox.test(where)
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"{where}: no completion within {timeout_s:.1f} s")
        backoff.idle()


def allgather_ints(comm: MPI.Comm, value: int, where: str) -> list[int]:
    """Fixed-width allgather of one int64 per rank (blocking: callers bound it with a watchdog)."""
    send = np.array([value], dtype=np.int64)
    recv = np.zeros(comm.Get_size(), dtype=np.int64)
    try:
        comm.Allgather([send, MPI.INT64_T], [recv, MPI.INT64_T])
    except MPI.Exception as exc:
        raise failure(where, exc) from None
    return [int(x) for x in recv]


def allgather_blobs(comm: MPI.Comm, blob: bytes, width: int, where: str) -> list[bytes]:
    """Fixed-width allgather of one byte string per rank (padded; the length travels in front)."""
    if len(blob) > width - 4:
        raise ValueError(f"{where}: {len(blob)} bytes do not fit a {width}-byte slot")
    send = bytearray(width)
    send[:4] = len(blob).to_bytes(4, "big")
    send[4 : 4 + len(blob)] = blob
    recv = bytearray(width * comm.Get_size())
    try:
        comm.Allgather([send, MPI.BYTE], [recv, MPI.BYTE])
    except MPI.Exception as exc:
        raise failure(where, exc) from None
    out = []
    for i in range(comm.Get_size()):
        slot = recv[i * width : (i + 1) * width]
        out.append(bytes(slot[4 : 4 + int.from_bytes(slot[:4], "big")]))
    return out


def revoke_quietly(comm: MPI.Comm | None) -> None:
    if comm is None or comm == MPI.COMM_NULL:
        return
    try:
        comm.Revoke()
    except MPI.Exception:
        pass


def warm_up(comm: MPI.Comm, where: str, timeout_s: float, hot_rounds: int = HOT_ROUNDS) -> None:
    """Exchange one message with every peer before any rank can die.

    A survivor that never talked to the rank that dies can hang in the next collective
    (docs/openmpi.md); an all-pairs exchange made recovery reliable.
    """
    rank, size = comm.Get_rank(), comm.Get_size()
    out = bytearray(rank.to_bytes(4, "big"))
    buffers = {p: bytearray(4) for p in range(size) if p != rank}
    requests: list[tuple[Hashable, MPI.Request]] = []
    try:
        for peer, buf in buffers.items():
            requests.append((peer, comm.Irecv([buf, MPI.BYTE], source=peer, tag=TAG_WARMUP)))
        for peer in buffers:
            requests.append((peer, comm.Isend([out, MPI.BYTE], dest=peer, tag=TAG_WARMUP)))
    except MPI.Exception as exc:
        raise failure(where, exc) from None
    for _, request in requests:
        wait_request(request, where, timeout_s, hot_rounds=hot_rounds)
    for peer, buf in buffers.items():
        if int.from_bytes(buf, "big") != peer:
            raise FailureDetected(f"{where}: warm-up with rank {peer} returned the wrong rank", MPI.ERR_OTHER)
