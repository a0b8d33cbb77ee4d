"""The start of a master's generation: replay, reclaim, rebuild (part of :class:`.master_state.MasterState`).

``committing -> done`` for the records this master owns, one at a time (then a scan again,
since a replay may publish what others wait for); the leases of older generations are lapsed
(queued ahead of everything else unless they killed too many workers: ``core.master.poison``); the
queue is rebuilt from the corpus, leaving out what the done records settled.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from . import events as ev
from .frontier import PRIORITY_RECLAIMED, PRIORITY_SEED, PRIORITY_UNIQUE


@dataclass
class Recovery:
    """The start of a generation in progress: replay, reclaim, rebuild."""

    at: float
    records: tuple[dict, ...] = ()
    replays: deque | None = None  # committing records to replay; None until the first scan
    replayed: int = 0
    outgoing: list[tuple[int, bytes]] = field(default_factory=list)  # FRONTIER of the replays
    settled: set[str] = field(default_factory=set)
    lapsed: list[dict] = field(default_factory=list)
    quarantined: int = 0


class StartPhase:
    """The start-of-generation transitions of :class:`~.master_state.MasterState`."""


    def _on_start(self, event: ev.Start) -> None:
        self._start = Recovery(event.now)
        self._ask(ev.Scan, self._scanned)

    def _scanned(self, fact: ev.Scanned) -> None:
        for work, error in fact.problems:
            self._log("integrity-error", work_hash=work, error=error)
        start = self._start
        start.records = fact.records
        if start.replays is None:
            start.replays = deque(r["work_hash"] for r in fact.records
                                  if r["state"] == "committing" and self.queue.owns(r["input_hash"]))
            self._replay_committing()
        else:
            self._reclaim()

    def _replay_committing(self) -> None:
        """``committing -> done`` for the records this master owns, one at a time; then scan again."""
        start = self._start
        if start.replays:
            self._ask(ev.Replay, self._replayed, start.replays.popleft())
        elif start.replayed:
            self._ask(ev.Scan, self._scanned)
        else:
            self._reclaim()

    def _replayed(self, fact: ev.Replayed) -> None:
        if fact.error is not None:
            self._log("integrity-error", work_hash=fact.work, error=fact.error)
        elif {k: fact.record["done"][k] for k in ("generation", "master")} == self.committer:
            self._start.replayed += 1  # else another master marked it done first and counts it
            # peers may have scanned the corpus before these objects existed: tell their owners
            self._start.outgoing += self._account(fact.record)
        self._replay_committing()

    def _reclaim(self) -> None:
        """Learn from the done records; the leases of older generations are lapsed (``core.master.poison``
        settles those that killed too many workers)."""
        start = self._start
        for record in start.records:
            if record["state"] == "done":
                start.settled.add(record["input_hash"])
                start.settled |= self.frontier.learn(record)
            elif record["state"] == "leased" and record["lease"]["generation"] < self.gen:
                if self.queue.owns(record["input_hash"]):
                    start.lapsed.append(record)
        self._ask(ev.Quarantine, self._quarantined, tuple(start.lapsed))

    def _quarantined(self, fact: ev.Quarantined) -> None:
        self._start.quarantined = len(fact.settled)
        self._start.settled |= set(fact.settled)
        self.unaccounted += fact.done
        self._ask(ev.ListCorpus, self._listed)

    def _listed(self, fact: ev.Listed) -> None:
        """Rebuild the queue: lapsed work first, then every object of the corpus not settled."""
        start, self._start = self._start, None
        for name in start.settled:
            self.queue.forget(name)
        for record in start.lapsed:  # work that was in flight goes first
            self.queue.offer(record["input_hash"], PRIORITY_RECLAIMED)
        for name, seed in fact.names:
            if name not in start.settled:
                self.queue.offer(name, self.frontier.priority.get(name, PRIORITY_SEED if seed else PRIORITY_UNIQUE))
        self._log("master-ready", replayed=start.replayed, reclaimed=len(start.lapsed) - start.quarantined,
                  quarantined=start.quarantined, frontier=self.queue.pending, seconds=fact.now - start.at,
                  masters=list(self.config.masters))
        for master, payload in start.outgoing:
            self._emit(ev.Forward, master, payload)
