"""What the role loops need from a transport: bytes to and from peers, by stable rank.

A :class:`Transport` is one rank's view of one generation: it sends and receives whole
messages (``core.envelope`` bytes, never pickled) on a few channels, each message addressed to
a peer by its stable rank. Sends are nonblocking and completed by :meth:`Transport.progress`;
receives poll. Two implementations: ``mpi.requests.MpiTransport`` (communicators, tags,
ULFM failure detection) and ``loopback.Loopback`` (in-process queues, for the protocol tests).
"""

from __future__ import annotations

from typing import Protocol

DATA = "data"  # READY, WORK, RESULT, STOP between a master and its workers
SENTINEL = "sentinel"  # never sent: a master's per-worker failure sentinel
FRONTIER = "frontier"  # FRONTIER between masters
CONTROL = "control"  # PROBE, STATUS, EXHAUSTED: deciding that the search is exhausted (exhaustion.py)
CHANNELS = (DATA, SENTINEL, FRONTIER, CONTROL)


class PeerFailure(Exception):
    """A peer failed (or the generation was revoked): the rank goes into recovery."""

    def __init__(self, where: str, message: str | None = None):
        self.where = where
        super().__init__(message or where)


class Transport(Protocol):
    def send(self, peer: int, channel: str, payload: bytes, where: str) -> None:
        """Start sending ``payload``; raises PeerFailure when ``peer`` is known to have failed."""

    def receive(self, peer: int, channel: str, where: str) -> bytes | None:
        """The next message from ``peer`` on ``channel``, or None.

        Raises ProtocolError for a message the transport refuses (larger than the limit, or any
        data on the sentinel channel) and PeerFailure when ``peer`` failed.
        """

    def progress(self) -> None:
        """Drive pending sends; raises PeerFailure when one of them failed."""

    @property
    def busy(self) -> bool:
        """Whether sends are still pending."""

    def check(self) -> None:
        """Raise PeerFailure when a failure anywhere in the job was announced (revocation)."""

    def close(self) -> None:
        """Withdraw whatever receives are posted (the orderly end of a loop)."""
