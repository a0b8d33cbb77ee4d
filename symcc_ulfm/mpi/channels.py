"""``runtime.transport.Transport`` over one generation's communicators.

Peers are stable ranks; each channel has its communicator and tag: ``data`` and ``sentinel``
on the group communicator (a group's ranks follow their stable ranks: ``Split`` is keyed by
them), ``frontier`` and ``control`` on the master communicator, and ``control`` to a warm
spare on the global communicator. Receives from one peer on ``data``, ``frontier`` and
``control`` probe (``Mailbox``); the ``sentinel`` channel keeps a posted receive that only a
failure completes (``Inbox``): anything that arrives on it is refused.
"""

from __future__ import annotations

from ..errors import ProtocolError
from ..runtime.transport import CONTROL, DATA, FRONTIER, SENTINEL
from .context import RankContext
from .requests import TAG_CONTROL, TAG_DATA, TAG_FRONTIER, TAG_SENTINEL, Inbox, Mailbox, Outbox

TAGS = {DATA: TAG_DATA, SENTINEL: TAG_SENTINEL, FRONTIER: TAG_FRONTIER, CONTROL: TAG_CONTROL}
SENTINEL_BYTES = 16


class MpiTransport:
    def __init__(self, ctx: RankContext):
        self.ctx = ctx
        self.limit = ctx.policy.max_message_bytes
        layout = ctx.membership.layout
        group = layout.group_of(ctx.stable)
        self.group = sorted([group.master, *group.workers]) if group else []
        self.masters = list(layout.masters)
        self.spares = set(ctx.membership.spares)
        self.outbox = Outbox()
        self.inboxes: dict[tuple[int, str], Inbox | Mailbox] = {}

    def _route(self, peer: int, channel: str):
        """The communicator and rank in it that reach ``peer`` on ``channel``."""
        if channel in (DATA, SENTINEL):
            return self.ctx.group_comm, self.group.index(peer)
        if channel == CONTROL and peer in self.spares:
            return self.ctx.global_comm, self.ctx.global_rank(peer)
        return self.ctx.master_comm, self.masters.index(peer)

    def send(self, peer: int, channel: str, payload: bytes, where: str) -> None:
        comm, rank = self._route(peer, channel)
        self.outbox.send(comm, rank, TAGS[channel], payload, where)

    def receive(self, peer: int, channel: str, where: str) -> bytes | None:
        inbox = self.inboxes.get((peer, channel))
        if inbox is None:
            comm, rank = self._route(peer, channel)
            if channel == SENTINEL:
                inbox = Inbox(comm, rank, TAG_SENTINEL, SENTINEL_BYTES).post()
            else:
                inbox = Mailbox(comm, rank, TAGS[channel], self.limit)
            self.inboxes[(peer, channel)] = inbox
        data = inbox.test(where)
        if data is not None and channel == SENTINEL:
            raise ProtocolError("data on the failure-sentinel tag")
        return data

    def progress(self) -> None:
        self.outbox.progress()

    @property
    def busy(self) -> bool:
        return self.outbox.busy

    def check(self) -> None:
        self.ctx.check_revocation()

    def close(self) -> None:
        for inbox in self.inboxes.values():
            inbox.cancel()
