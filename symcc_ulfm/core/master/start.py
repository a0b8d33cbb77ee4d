"""The start of a master's generation: replay, reclaim, quarantine, rebuild (part of
:class:`.machine.MasterState`).

``committing -> done`` for the records this master owns, one at a time (then a scan again,
since a replay may publish what others wait for); the leases of older generations are lapsed
and queued ahead of everything else, unless they killed ``poison_deaths`` workers
(``core.master.poison``): those inputs are settled as ``crash`` findings (lease to this master,
quarantine manifest, barrier), and their manifests join the commit pipeline, published and marked
done by the first round. Then the queue is rebuilt from the corpus, leaving out what the done
records and the quarantines settled.
"""

from __future__ import annotations

from collections import deque

from . import events as ev
from . import poison
from .fields import MasterFields, Recovery
from .frontier import PRIORITY_RECLAIMED, PRIORITY_SEED, PRIORITY_UNIQUE
from .manifest import quarantine_manifest
from .mix import previous_decision
from .steps import Step


class StartPhase(MasterFields):
    """The start-of-generation transitions of :class:`~.machine.MasterState`."""

    def _on_start(self, event: ev.Start) -> None:
        self._start = Recovery(event.now)
        self._ask(ev.Scan, Step.SCANNED)

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
            self._ask(ev.Replay, Step.REPLAYED, start.replays.popleft())
        elif start.replayed:
            self._ask(ev.Scan, Step.SCANNED)
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
        """Learn from the done records (the adaptive mix's yields too); the leases of older
        generations are lapsed."""
        start = self._start
        if self.yields is not None:  # the adaptive mix goes on from the WAL alone (core.master.mix)
            self.yields.restore(start.records)
            self.mix_previous = previous_decision(start.records, self.config.me)
        for record in start.records:
            if record["state"] == "done":
                start.settled.add(record["input_hash"])
                start.settled |= self.frontier.learn(record)
            elif record["state"] == "leased" and record["lease"]["generation"] < self.gen:
                # a fuzzer's slice (another executor identity) that lapsed is not leased again
                if self.queue.owns(record["input_hash"]) and self._analysis(record):
                    start.lapsed.append(record)
        if start.lapsed:
            self._ask(ev.ReadDeaths, Step.DEATHS_READ)
        else:
            self._ask(ev.ListCorpus, Step.LISTED)

    def _analysis(self, record: dict) -> bool:
        """Whether a record is the campaign executor's work on an input (not a fuzzer's slice)."""
        return record["executor_sha256"] == self.config.executor_sha

    # -- poison inputs (core.master.poison) -------------------------------------------------------

    def _deaths_read(self, fact: ev.DeathsRead) -> None:
        """Suspects: lapsed records with at least ``poison_deaths`` leases whose worker died in
        their generation; their workers' running markers decide."""
        start, limit = self._start, self.config.poison_deaths
        start.died = poison.deaths(fact.receipts)
        start.suspects = [r for r in start.lapsed
                          if sum(lease["worker"] in start.died.get(lease["generation"], ())
                                 for lease in poison.record_leases(r)) >= limit]
        if not start.suspects:
            self._ask(ev.ListCorpus, Step.LISTED)
            return
        pairs = sorted({(lease["worker"], lease["generation"]) for r in start.suspects
                        for lease in poison.record_leases(r)})
        self._ask(ev.ReadMarkers, Step.MARKERS_READ, tuple(pairs))

    def _markers_read(self, fact: ev.MarkersRead) -> None:
        start, limit = self._start, self.config.poison_deaths
        running = dict(fact.running)
        for record in start.suspects:
            strikes = poison.strikes(poison.record_leases(record), start.died, running)
            if len(strikes) >= limit:
                start.condemned.append((record, strikes))
        if not start.condemned:
            self._ask(ev.ListCorpus, Step.LISTED)
            return
        self._emit(ev.OpenBatch)
        self._lease_poison()

    def _lease_poison(self) -> None:
        """Lease each condemned input to this master itself and write its quarantine manifest."""
        start = self._start
        if start.condemned:
            record, _ = start.condemned[0]
            self._ask(ev.Lease, Step.POISON_LEASED, self.config.me, record["input_hash"])
            return
        self._ask(ev.Barrier, Step.POISON_SYNCED)  # the manifests are durable before their publication

    def _poison_leased(self, fact: ev.Leased) -> None:
        start = self._start
        record, strikes = start.condemned.popleft()
        if fact.outcome != "leased":  # settled or taken meanwhile: nothing to quarantine
            self._emit(ev.Release, fact.token)
            self._log("quarantine-skipped", input_hash=record["input_hash"], outcome=fact.outcome,
                      reason=fact.error)
            return self._lease_poison()
        manifest = quarantine_manifest(self.gen, self.config.me, self.config.executor, fact.shard, fact.token,
                                       record["input_hash"], record["work_hash"], strikes, fact.now)
        start.leased.append((record, strikes, fact.lease))
        self._ask(ev.WriteManifest, Step.POISON_COMMITTING, record["work_hash"], fact.lease, manifest)

    def _poison_committing(self, fact: ev.Committing) -> None:
        start = self._start
        record, strikes, lease = start.leased[-1]
        if fact.error is not None:
            start.leased.pop()
            self._emit(ev.Release, lease["token"])
            self._log("quarantine-skipped", input_hash=record["input_hash"], outcome="refused", reason=fact.error)
        else:
            self._log("input-quarantined", input_hash=record["input_hash"], strikes=len(strikes),
                      workers=[s.worker for s in strikes])
        self._lease_poison()

    def _poison_synced(self, fact: ev.Synced) -> None:
        """The quarantine manifests are durable: they join the commit pipeline (published, marked
        done and counted by the next round, like any result's); their inputs are settled."""
        self.syncs = fact.syncs
        start = self._start
        for record, _, _ in start.leased:
            self.pending.append(record["work_hash"])
            start.settled.add(record["input_hash"])
        start.quarantined = len(start.leased)
        self.oldest = fact.now
        self._emit(ev.CloseBatch)
        self._ask(ev.ListCorpus, Step.LISTED)

    # -- the queue ----------------------------------------------------------------------------------

    def _listed(self, fact: ev.Listed) -> None:
        """Rebuild the queue: lapsed work first, then every object of the corpus not settled."""
        start, self._start = self._start, None
        for name in start.settled:
            self.queue.forget(name)
        for record in start.lapsed:  # work that was in flight goes first (a quarantined input is settled)
            self.queue.offer(record["input_hash"], PRIORITY_RECLAIMED)
        for name, seed in fact.names:
            if name not in start.settled:
                self.queue.offer(name, self.frontier.priority.get(name, PRIORITY_SEED if seed else PRIORITY_UNIQUE))
        self._log("master-ready", replayed=start.replayed, reclaimed=len(start.lapsed) - start.quarantined,
                  quarantined=start.quarantined, frontier=self.queue.pending, seconds=fact.now - start.at,
                  masters=list(self.config.masters))
        for master, payload in start.outgoing:
            self._emit(ev.Forward, master, payload)
