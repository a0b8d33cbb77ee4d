"""One round of group commit (part of :class:`.machine.MasterState`).

Durability is a group commit per round, pipelined over rounds so that one barrier per round
keeps every ordering the WAL needs: the round's manifests and new leases, the claims and
objects of the previous round's manifests and the done records marked after the previous
barrier all become durable together. In order, a round moves each waiting RESULT
``leased -> committing`` (accept, write its manifest), publishes the manifests the previous
barrier made durable, fills the ready workers' pipelines (``none -> leased``), runs the
barrier, then counts, sends the WORK and marks ``committing -> done`` what it made durable.
Draining (:meth:`CommitRounds._settle`) publishes what is pending with no new leases. A round
or a drain ends with its :class:`~.steps.After`.
"""

from __future__ import annotations

from collections import deque

from ...errors import FenceError, ProtocolError
from .. import envelope
from ..envelope import Fence
from ..schedule import Phase
from ..slices import descriptor, slice_hash
from . import events as ev
from .branches import room
from .fields import MasterFields, Outstanding, Round
from .frontier import PRIORITY_NOVEL, signatures
from .manifest import result_manifest
from .mix import decide, lent_workers, new_edges
from .report import check_stats, distinct_objects
from .steps import After, Step

MAX_REJECTIONS = 3
PIPELINE = 3  # leases a worker may hold: a worker runs one, the next ones are already there
# The slice of an analysis worker lent to fuzzing (``MasterConfig.idle_kind``): an input that comes
# meanwhile waits behind it, so it is short; the fuzzer runs on from one such slice to the next.
LENT_SLICE_S = 1.0


def findings_of(message: dict, now: float) -> list[dict]:
    """A RESULT's finding reports as manifest records: each must name the lease's input or one of
    the result's candidates (the objects the commit publishes); the master stamps its own time."""
    named = {c["sha256"] for c in message["candidates"]} | {message["input_hash"]}
    out = {}
    for report in message["findings"]:
        if report["sha256"] not in named:
            raise FenceError(f"a {report['kind']} finding names {report['sha256'][:12]}, not an input of this result")
        out.setdefault((report["kind"], report["signature"], report["sha256"]), {**report, "time": now})
    return list(out.values())


class CommitRounds(MasterFields):
    """The round transitions of :class:`~.machine.MasterState`."""

    def _begin_round(self, dispatch: bool, after: After) -> None:
        self.rounds += 1
        self._round = Round(dispatch, deque(self.waiting), after)
        self.waiting = []
        self._emit(ev.OpenBatch)
        self._leased_to_committing()

    def _leased_to_committing(self) -> None:
        """``leased -> committing`` for each waiting result, in order."""
        r = self._round
        while r.results:
            worker, message, held = r.current = r.results.popleft()
            try:
                check_stats(message["stats"], self.config.lease_s)  # the worker's word, recorded only
            except ProtocolError as exc:
                self._leased_to_queued(worker, held, str(exc))
                continue
            fence = held.fence
            self._ask(ev.Accept, Step.ACCEPTED, worker, message["generation"], message["shard"], message["lease"],
                      fence.work_hash)
            return
        r.publishing = deque(self.pending)
        self._publish_committing()

    def _accepted(self, fact: ev.Accepted) -> None:
        worker, message, held = self._round.current
        if fact.error is not None:
            self._leased_to_queued(worker, held, fact.error)
            return self._leased_to_committing()
        fence = held.fence
        judged = self.queue.judge(distinct_objects(message["candidates"]))
        try:
            findings = findings_of(message, fact.now)
        except FenceError as exc:
            self._leased_to_queued(worker, held, str(exc))
            return self._leased_to_committing()
        kept, dropped, findings = self._kept(judged, findings, held)
        marked = signatures(findings) - self.frontier.signatures
        self.frontier.signatures |= marked
        kind = held.slice["kind"] if held.slice is not None else self.config.kind_of(worker)  # a lent worker's too
        tried = message.get("tried", []) if self.frontier.by_edge and held.slice is None else ()
        added = new_edges((j.coverage for j in kept), self.queue.coverage)
        manifest = result_manifest(self.gen, self.config.me, worker, kind, fence, kept, dropped, findings,
                                   message["stats"], message["error"], held.slice, tried, added, held.mix)
        self._round.current = (worker, message, held, judged, marked)
        self._ask(ev.WriteManifest, Step.COMMITTING, fence.work_hash, held.lease, manifest)

    def _committing(self, fact: ev.Committing) -> None:
        worker, message, held, judged, marked = self._round.current
        if fact.error is not None:
            self.frontier.signatures -= marked  # not recorded after all: a later result may hold them
            self._leased_to_queued(worker, held, fact.error)
            return self._leased_to_committing()
        seconds = message["stats"].get("seconds", 0.0)
        self.task_s = seconds if not self.task_s else 0.8 * self.task_s + 0.2 * seconds
        for j in judged:  # learn the coverage now: the next round's results are judged before this round is counted
            self.queue.absorb(j.coverage)
        self._round.staged.append(held.fence.work_hash)
        self._leased_to_committing()

    def _kept(self, judged: list, findings: list[dict], held: Outstanding) -> tuple[list, list[str], list[dict]]:
        """The candidates that enter the corpus, the SHA-256s of those dropped, and the findings
        recorded. With ``keep = novel`` an analysis worker's test case is kept when it adds
        coverage (as SymCC's fuzzing helper keeps only test cases that show new bits) or is the
        first input of a finding the corpus holds none of; a finding is recorded only when its
        input is the lease's or a kept one, so repeated hits of a known finding are dropped with
        their inputs (a fuzzer's crashes directory keeps one per signature the same way). A
        fuzzer's slice keeps all it returned: its fuzzer kept each entry for new bits of its own
        map (AFL++'s queue), and those are the inputs the helper runs SymCC on, coverage the
        campaign holds already or not."""
        if self.config.keep == "all" or held.slice is not None:
            return judged, [], findings
        keep = {j.sha256 for j in judged if j.novel} | {held.fence.input_hash}
        held_already = self.frontier.signatures | signatures([f for f in findings if f["sha256"] in keep])
        for f in findings:
            if (f["kind"], f["signature"]) not in held_already:
                held_already.add((f["kind"], f["signature"]))
                keep.add(f["sha256"])
        return ([j for j in judged if j.sha256 in keep], [j.sha256 for j in judged if j.sha256 not in keep],
                [f for f in findings if f["sha256"] in keep])

    def _leased_to_queued(self, worker: int, held: Outstanding, reason: str) -> None:
        """``leased -> queued``: release the lease, put the input back (or drop it); a slice is not
        put back (the fuzzer gets its next one)."""
        self._emit(ev.Release, held.fence.lease)
        if held.slice is None:
            self._requeue_rejected(held.fence.input_hash, held.priority, reason)
        self._log_limited("result-rejected", worker, worker=worker, lease=held.fence.lease, reason=reason)

    def _requeue_rejected(self, input_hash: str, priority: int, reason: str) -> None:
        count = self.rejections.get(input_hash, 0) + 1
        self.rejections[input_hash] = count
        if count < MAX_REJECTIONS:
            self.queue.requeue(input_hash, priority)
        else:
            self._log("input-dropped", input_hash=input_hash, rejections=count, reason=reason)

    def _publish_committing(self) -> None:
        """Claims and objects of the records whose manifests the last barrier made durable."""
        r = self._round
        if r.publishing:
            self._ask(ev.Publish, Step.PUBLISHED, r.publishing.popleft())
            return
        if r.dispatch:
            self._decide_mix()
            r.slots = deque(self._free_slots())
            r.fuzzers = deque(self._idle_fuzzers())
            self._to_leased()
        else:
            self._ask(ev.Barrier, Step.ROUND_SYNCED)

    def _published(self, fact: ev.Published) -> None:
        self._round.published.append((fact.work, self._claimed(fact)))
        self._publish_committing()

    def _claimed(self, fact: ev.Published) -> list[str] | None | bool:
        """What a publication claimed; False when integrity stops it (logged)."""
        if fact.error is not None:
            self._log("integrity-error", work_hash=fact.work, error=fact.error)
            return False
        return fact.claimed

    def _free_slots(self) -> list[int]:
        """Ready analysis workers with room in their pipeline, emptiest first (one slot per entry);
        not those the mix lends to fuzzing."""
        slots = []
        for depth in range(PIPELINE):
            slots += [w for w in self.config.workers if w in self.ready and len(self.outstanding[w]) == depth
                      and not self.config.fuzzes(w) and w not in self.mix_lent]
        return slots

    def _decide_mix(self) -> None:
        """The adaptive mix's decision for this round (``core.master.mix``): how many analysis
        workers are lent to the idle kind, the last ones of the group; logged when it changes."""
        if self.yields is None:
            return
        analysts = [w for w in self.config.workers if not self.config.fuzzes(w)]
        novel = any(self.frontier.priority_of(h) >= PRIORITY_NOVEL for h in self.queue.queued())
        decision = decide(self.yields, len(analysts), len(self.config.workers) - len(analysts), self.mix_previous,
                          novel)
        if decision.lent != self.mix_previous or self.mix_decision is None:
            self._log("mix", lent=decision.lent, previous=self.mix_previous, reason=decision.reason,
                      analysis_slots=len(analysts))
        self.mix_decision, self.mix_previous = decision, decision.lent
        self.mix_lent = lent_workers(analysts, decision.lent)

    def _to_leased(self) -> None:
        """``none -> leased``: fill every ready analysis worker's pipeline while inputs are queued,
        then give every idle fuzzer worker its next slice, and every analysis worker still without
        a lease (or lent by the mix, ``_decide_mix``) a slice of the idle kind
        (``MasterConfig.idle_kind``)."""
        r = self._round
        r.leasing_slice = None
        if r.slots:
            input_hash = self.queue.next_input()
            self._skipped()
            if input_hash is not None:
                r.leasing = input_hash
                self._ask(ev.Lease, Step.LEASED, r.slots[0], input_hash)
                return
            r.slots.clear()
        if not r.lent:
            r.lent = True
            r.fuzzers.extend(self._idle_analysts())
        if r.fuzzers:
            worker = r.fuzzers[0]
            self._slices += 1
            kind = self.config.slice_kind(worker)
            # lent by the mix: a slice as long as a fuzzer's, its decision named; idle: a short one
            mixed = worker in self.mix_lent
            short = not self.config.fuzzes(worker) and not mixed
            seconds = min(self.config.slice_s, LENT_SLICE_S) if short else self.config.slice_s
            r.leasing_slice = descriptor(kind, self.gen, self.config.me, worker, self._slices, seconds,
                                         self.mix_decision.sha256 if mixed else None)
            r.leasing = slice_hash(r.leasing_slice)
            self._ask(ev.Lease, Step.LEASED, worker, r.leasing, kind)
            return
        self._ask(ev.Barrier, Step.ROUND_SYNCED)

    def _skipped(self) -> None:
        """Settle the inputs the queue found with nothing left to analyze (edge order,
        ``core.master.frontier``): logged one by one and counted, never leased."""
        for input_hash in self.queue.skipped:
            self.frontier.totals["skipped"] += 1
            self._log("input-skipped", input_hash=input_hash, reason="every edge of its path was analyzed")
        self.queue.skipped.clear()

    def _leased(self, fact: ev.Leased) -> None:
        r = self._round
        sliced = r.leasing_slice
        lane = r.fuzzers if sliced is not None else r.slots
        worker = lane[0]
        input_hash = r.leasing
        if sliced is not None:  # a slice is tried once: the fuzzer gets another in the next round
            lane.popleft()
        if fact.outcome == "leased":
            if sliced is None:
                lane.popleft()
            fence = Fence(self.gen, fact.shard, fact.token, fact.work, input_hash, worker)
            if not self.outstanding[worker]:
                self.progress_at[worker] = fact.now
            priority = self.frontier.priority_of(input_hash)
            mix = self.mix_decision.to_json() if sliced is not None and "mix" in sliced else None
            self.outstanding[worker].append(Outstanding(fence, fact.lease, priority, sliced, mix))
            hint = sliced if sliced is not None else self.frontier.hints.get(input_hash)
            tried = [] if sliced is not None or not self.frontier.by_edge else \
                self.frontier.branches.delta(worker, room(self.config.limit))
            r.work_out.append((worker, envelope.encode("WORK", self.config.limit, **fence.fields(), hint=hint,
                                                       tried=tried)))
            return self._to_leased()
        self._emit(ev.Release, fact.token)
        if sliced is not None:
            self._log("lease-refused", input_hash=input_hash, reason=fact.error or fact.outcome)
            return self._to_leased()
        if fact.outcome == "committing":  # replayed in this batch: its lock is held
            self.queue.forget(input_hash)
            if fact.work not in self.pending and all(w != fact.work for w, _ in r.published):
                self._ask(ev.Publish, Step.REPLAY_PUBLISHED, fact.work)
                return
        elif fact.outcome == "retry":
            self._requeue_rejected(input_hash, self.frontier.priority_of(input_hash), fact.error)
            self._log("lease-refused", input_hash=input_hash, reason=fact.error)
        elif fact.outcome == "refused":
            self.queue.forget(input_hash)
            self._log("lease-refused", input_hash=input_hash, reason=fact.error)
        self._to_leased()

    def _replay_published(self, fact: ev.Published) -> None:
        self._round.published.append((fact.work, self._claimed(fact)))
        self._to_leased()

    def _round_synced(self, fact: ev.Synced) -> None:
        """After the barrier: count, send WORK, mark done what the barrier made durable."""
        r = self._round
        self.syncs = fact.syncs
        self._account_all()
        for worker, payload in r.work_out:
            self._emit(ev.Send, worker, payload, f"WORK to {worker}")
            self.dispatched += 1
            if self.dispatched == 1:
                self._log("first-work", worker=worker)
            self._emit(ev.Inject, Phase.WORK)
        if r.staged:
            self._emit(ev.Inject, Phase.COMMIT)
        r.finishing = deque((work, claimed) for work, claimed in r.published if claimed is not False)
        self._committing_to_done()

    def _committing_to_done(self) -> None:
        """``committing -> done`` for the records whose claims and objects are durable."""
        r = self._round
        if r.finishing:
            work, claimed = r.finishing[0]
            self._ask(ev.MarkDone, Step.DONE, work, claimed)
        elif r.draining:
            self._drain_closed()
        else:
            self._end_round()

    def _done(self, fact: ev.Done) -> None:
        _, claimed = self._round.finishing.popleft()
        if claimed is not None:  # None: it was done already, by whoever counts it
            self.unaccounted.append(fact.record)
        self._committing_to_done()

    def _end_round(self) -> None:
        r, self._round = self._round, None
        self._emit(ev.CloseBatch)
        self.pending = r.staged
        self.oldest = self._now
        self._after(r.after)

    # -- draining the pipeline ----------------------------------------------------------------------

    def _settle(self, after: After) -> None:
        """Publish what is pending, make the last done records durable, count them."""
        self._draining_after = after
        if not self.pending:
            self._ask(ev.Barrier, Step.DRAINED)
            return
        self._round = Round(False, deque(), after, draining=True, publishing=deque(self.pending))
        self.pending = []
        self._emit(ev.OpenBatch)
        self._drain_publish()

    def _drain_publish(self) -> None:
        r = self._round
        if r.publishing:
            self._ask(ev.Publish, Step.DRAIN_PUBLISHED, r.publishing.popleft())
            return
        self._ask(ev.Barrier, Step.DRAIN_SYNCED)

    def _drain_published(self, fact: ev.Published) -> None:
        self._round.published.append((fact.work, self._claimed(fact)))
        self._drain_publish()

    def _drain_synced(self, fact: ev.Synced) -> None:
        r = self._round
        self.syncs = fact.syncs
        r.finishing = deque((work, claimed) for work, claimed in r.published if claimed is not False)
        self._committing_to_done()

    def _drain_closed(self) -> None:
        self._round = None
        self._emit(ev.CloseBatch)
        self._ask(ev.Barrier, Step.DRAINED)

    def _drained(self, fact: ev.Synced) -> None:
        self.syncs = fact.syncs
        self._account_all()
        self._after(self._draining_after)
