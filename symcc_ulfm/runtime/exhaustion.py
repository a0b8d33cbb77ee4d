"""The masters' side of ending a campaign before its deadline: an exhausted search or a spent
budget (``core.master.termination`` decides).

Every master polls :meth:`Exhaustion.poll` once per loop round with its current status. The
coordinator (the first master of the layout) probes the others in waves while it is idle or
satisfied itself; the others answer each PROBE with their status. When the coordinator decides, it
sends EXHAUSTED (with the reason: ``exhausted`` or ``budget``) to every other master and to every
warm spare, and each of them stops as at the deadline; workers learn it from their master's STOP.
All of it is ordinary point-to-point traffic on the control channel (``transport.CONTROL``): a
failure meanwhile is detected as any other, and the next generation decides again from scratch. A
generation that a scheduled failure is still to end (``failure_schedule``) is not stopped early,
nor, for the budget, one before ``stop_from``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core import envelope
from ..core.master.termination import BUDGET, EXHAUSTED, Status, Waves
from ..errors import ProtocolError
from .rank_state import RankState
from .transport import CONTROL, Transport

WAVE_INTERVAL_S = 0.05


class Exhaustion:
    def __init__(self, ctx: RankState, masters: tuple[int, ...], transport: Transport,
                 clock: Callable[[], float] = time.time):
        self.ctx = ctx
        self.clock = clock  # the master driver's: the time the decision is logged with
        self.masters = masters
        self.transport = transport
        self.limit = ctx.policy.max_message_bytes
        self.coordinator = masters[0]
        self.me = ctx.stable
        self.gen = ctx.generation
        self.peers = [m for m in masters if m != self.me] if self.me == self.coordinator else [self.coordinator]
        self.waves = Waves(masters) if self.me == self.coordinator else None
        self.next_wave_at = 0.0
        # a failure the schedule still asks for must happen: an injected campaign runs on until then
        pending = any(event.generation >= self.gen for event in ctx.policy.failure_schedule)
        self.exhaustion = ctx.policy.stop_when_exhausted and not pending
        self.budget = ctx.policy.stop_after > 0 and self.gen >= ctx.policy.stop_from and not pending
        self.enabled = self.exhaustion or self.budget

    def _send(self, dest: int, kind: str, **fields) -> None:
        payload = envelope.encode(kind, self.limit, generation=self.gen, master=self.me, **fields)
        self.transport.send(dest, CONTROL, payload, f"{kind} to {dest}")

    def _messages(self, stimulus: str):
        for source in self.peers:
            try:
                raw = self.transport.receive(source, CONTROL, f"control from master {source}")
                if raw is None:
                    continue
                message = envelope.decode(raw, self.limit)
                if message.get("generation") != self.gen or message.get("master") != source:
                    raise ProtocolError(f"{message['type']} of generation {message['generation']} from {source}")
            except ProtocolError as exc:
                self.ctx.log.limited("message-rejected", source, source=source, reason=str(exc), stimulus=stimulus)
                continue
            yield source, message

    def poll(self, status: Status, now: float, stimulus: str) -> str | None:
        """Answer probes, run waves (coordinator); once the masters decided, why the campaign ends
        (``exhausted`` or ``budget``), else None. ``stimulus``: the master's event that polled
        (``core.master.machine``), logged with every line."""
        if not self.enabled:
            return None
        for source, message in self._messages(stimulus):
            kind = message["type"]
            if kind == "PROBE" and self.waves is None:
                self._send(source, "STATUS", wave=message["wave"], idle=status.idle, sent=status.sent,
                           received=status.received, satisfied=status.satisfied)
            elif kind == "EXHAUSTED" and self.waves is None and self._decided(message["reason"]):
                return message["reason"]
            elif kind == "STATUS" and self.waves is not None:
                self.waves.reply(source, message["wave"], Status(message["idle"], message["sent"], message["received"],
                                                                 message["satisfied"]))
            else:
                what = f"{kind} ({message['reason']})" if kind == "EXHAUSTED" else kind
                self.ctx.log.limited("message-rejected", source, source=source, reason=f"{what} is not for this master",
                                     stimulus=stimulus)
        if self.waves is None:
            return None
        if self.waves.complete:
            exhausted = self.waves.exhausted()  # every complete wave, so that two consecutive ones are compared
            ended = BUDGET if self.budget and self.waves.satisfied() else EXHAUSTED if self.exhaustion and exhausted \
                else None
            if ended is not None:
                self._announce(ended, stimulus)
                return ended
            self.waves.replies = {}
            self.next_wave_at = now + WAVE_INTERVAL_S
        wanted = (self.exhaustion and status.idle) or (self.budget and status.satisfied)
        if wanted and not self.waves.replies and now >= self.next_wave_at:
            wave = self.waves.start()
            self.waves.reply(self.me, wave, status)
            for master in self.masters[1:]:
                self._send(master, "PROBE", wave=wave)
            self.next_wave_at = now + WAVE_INTERVAL_S
        return None

    def _decided(self, reason: str) -> bool:
        """Whether a coordinator's decision is one this master takes part in."""
        return (reason == EXHAUSTED and self.exhaustion) or (reason == BUDGET and self.budget)

    def _announce(self, reason: str, stimulus: str) -> None:
        for master in self.masters[1:]:
            self._send(master, "EXHAUSTED", reason=reason)
        notice = envelope.encode("EXHAUSTED", self.limit, generation=self.gen, master=self.me, reason=reason)
        for spare in self.ctx.membership.spares:
            self.transport.send(spare, CONTROL, notice, f"EXHAUSTED to {spare}")
        event = "search-exhausted" if reason == EXHAUSTED else "budget-spent"
        self.ctx.log.event(event, waves=self.waves.wave, at=self.clock(), stimulus=stimulus)
