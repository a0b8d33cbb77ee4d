"""An in-process transport: every rank's messages in queues of one :class:`Loopback`.

Used by the protocol tests to run a role loop and its peers in one process, in milliseconds.
It keeps the contract of ``transport.Transport`` that the MPI transport keeps: per (sender,
receiver, channel) order, a size limit whose violation is refused as ProtocolError, data on
the sentinel channel refused, and a failed rank seen by its peers as PeerFailure (on receive
from it, on send to it, and on :meth:`LoopbackTransport.check` once the failure is announced).
"""

from __future__ import annotations

from collections import deque

from ..errors import ProtocolError
from .transport import CHANNELS, SENTINEL, PeerFailure


class Loopback:
    """The queues between a fixed set of ranks."""

    def __init__(self, ranks, limit: int):
        self.ranks = frozenset(ranks)
        self.limit = limit
        self.queues: dict[tuple[int, int, str], deque[bytes]] = {}
        self.failed: set[int] = set()
        self.revoked = False

    def endpoint(self, rank: int) -> LoopbackTransport:
        if rank not in self.ranks:
            raise ValueError(f"rank {rank} is not one of {sorted(self.ranks)}")
        return LoopbackTransport(self, rank)

    def fail(self, rank: int, announce: bool = True) -> None:
        """``rank`` dies; with ``announce``, every rank's :meth:`LoopbackTransport.check` raises."""
        self.failed.add(rank)
        self.revoked = self.revoked or announce

    def queue(self, source: int, dest: int, channel: str) -> deque[bytes]:
        if channel not in CHANNELS:
            raise ValueError(f"unknown channel {channel!r}")
        return self.queues.setdefault((source, dest, channel), deque())


class LoopbackTransport:
    def __init__(self, hub: Loopback, rank: int):
        self.hub = hub
        self.rank = rank

    def send(self, peer: int, channel: str, payload: bytes, where: str) -> None:
        if peer not in self.hub.ranks:
            raise ValueError(f"{where}: rank {peer} is not in this job")
        if peer in self.hub.failed:
            raise PeerFailure(f"{where}: rank {peer} failed")
        self.hub.queue(self.rank, peer, channel).append(bytes(payload))

    def receive(self, peer: int, channel: str, where: str) -> bytes | None:
        queue = self.hub.queue(peer, self.rank, channel)
        if not queue:
            if peer in self.hub.failed:
                raise PeerFailure(f"{where}: rank {peer} failed")
            return None
        data = queue.popleft()
        if channel == SENTINEL:
            raise ProtocolError(f"{where}: data on the failure-sentinel channel")
        if len(data) > self.hub.limit:
            raise ProtocolError(f"{where}: message of {len(data)} bytes is larger than {self.hub.limit} bytes, rejected")
        return data

    def progress(self) -> None:
        """Sends complete at once."""

    @property
    def busy(self) -> bool:
        return False

    def check(self) -> None:
        if self.hub.revoked:
            raise PeerFailure("a failure was announced")

    def close(self) -> None:
        """Nothing is posted."""
