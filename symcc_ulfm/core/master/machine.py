"""One master of one generation as a state machine: events in, instructions out.

Pure: no MPI, no clock, no file system. :meth:`MasterState.handle` takes an event
(``core.master.events``) and returns the instructions to perform; the driver
(``runtime.master_driver``) performs them and feeds back what they found as facts. The machine
holds the outstanding leases of every worker, the commit pipeline, the frontier queue and its
accounts. Its control flow is data: an instruction that ends in a fact is paired with the named
:class:`~.steps.Step` that takes the fact, and a table maps each step to its transition.

Work moves through the WAL states ``leased -> committing -> done``:

- *start* (:mod:`.start`): replay the ``committing`` records this master owns
  (``committing -> done``), reclaim the leases of older generations (``leased``, queued ahead of
  everything else unless they killed too many workers, ``core.master.poison``) and rebuild the queue
  from the corpus;
- *none -> leased*: a ready worker with room in its pipeline (``PIPELINE`` leases) gets the
  next input; the WORK is sent after the barrier that makes its lease durable;
- *leased -> committing*: a RESULT that matches its lease (``core.envelope.check_fence``) waits
  for a round; the round writes its manifest;
- *committing -> done*: the next round publishes its objects before its barrier and marks it
  done after it; done records are counted (and their new inputs forwarded to their owners)
  after the barrier that follows;
- *leased -> queued*: a rejected result puts its input back (``MAX_REJECTIONS`` at most); so do
  the leases a worker past the deadline returns unstarted (``RETURN``).

Durability is a group commit per round (:mod:`.rounds`). A round is not run for every
RESULT: results wait up to half the time a task takes (at most ``MAX_COMMIT_DELAY``) for others
to share their barrier, unless a worker is down to the lease it runs while inputs are waiting
for it. An idle master drains the pipeline (publish, barrier, done, barrier).

A worker that holds a lease past ``lease_s`` without a result is fenced: killed when it runs on
this master's host (ULFM then detects it like any death), reported otherwise.
"""

from __future__ import annotations

from collections import deque

from ...errors import FenceError, ProtocolError
from .. import envelope
from ..envelope import check_fence
from . import events as ev
from .fields import MasterConfig
from .invariants import violations
from .rounds import PIPELINE, CommitRounds
from .start import StartPhase
from .steps import After, Step
from .termination import Status

MAX_COMMIT_DELAY = 0.02  # seconds a RESULT may wait for others to share its round's barrier


class MasterState(StartPhase, CommitRounds):
    def __init__(self, config: MasterConfig):
        super().__init__(config)
        self._handlers = {
            ev.Start: self._on_start, ev.FromWorker: self._on_worker, ev.FromMaster: self._on_master,
            ev.Refused: self._on_refused, ev.Tick: self._on_tick, ev.Failed: self._on_failed,
        }
        self._steps = {
            Step.SCANNED: self._scanned, Step.REPLAYED: self._replayed, Step.DEATHS_READ: self._deaths_read,
            Step.MARKERS_READ: self._markers_read, Step.POISON_LEASED: self._poison_leased,
            Step.POISON_COMMITTING: self._poison_committing, Step.POISON_SYNCED: self._poison_synced,
            Step.LISTED: self._listed, Step.POLLED: self._polled, Step.FAILURE_SYNCED: self._failure_synced,
            Step.ACCEPTED: self._accepted, Step.COMMITTING: self._committing, Step.PUBLISHED: self._published,
            Step.LEASED: self._leased, Step.REPLAY_PUBLISHED: self._replay_published,
            Step.ROUND_SYNCED: self._round_synced, Step.DONE: self._done, Step.DRAIN_PUBLISHED: self._drain_published,
            Step.DRAIN_SYNCED: self._drain_synced, Step.DRAINED: self._drained,
        }

    # -- events in, instructions out ------------------------------------------------------------

    def handle(self, event: ev.Event) -> list[ev.Instruction]:
        """The instructions an event causes; at most the last one ends in a fact to feed back.

        Each stimulus gets an id (``tick-57``); the instructions of a fact carry the id of the
        stimulus whose instructions found it.
        """
        self._seq += 1
        self._now = event.now
        self._out = []
        if self._awaiting is not None:
            kind, step = self._awaiting
            if not isinstance(event, kind) and not isinstance(event, ev.Failed):
                raise RuntimeError(f"{type(event).__name__} while the master waits for {kind.__name__}")
            if isinstance(event, kind):
                self._awaiting = None
                self._steps[step](event)
                return self._out
        self._stimulus = f"{type(event).__name__.lower()}-{self._seq}"
        handler = self._handlers.get(type(event))
        if handler is None:
            raise RuntimeError(f"{type(event).__name__} was not asked for")
        handler(event)
        return self._out

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` naming each invariant of the state that does not hold
        (``core.master.invariants``); the tests run it after every :meth:`handle`."""
        broken = violations(self)
        if broken:
            raise AssertionError("master state: " + "; ".join(broken))

    def held(self) -> int:
        return sum(len(queue) for queue in self.outstanding.values())

    def _free(self, fuzzers: bool) -> list[int]:
        """Ready workers without a lease, the fuzzers or the analysis workers."""
        return [w for w in self.config.workers
                if self.config.fuzzes(w) == fuzzers and w in self.ready and not self.outstanding[w]]

    def _idle_fuzzers(self) -> list[int]:
        """Ready fuzzer workers without a slice: each gets its next one in the next round."""
        return self._free(fuzzers=True)

    def _idle_analysts(self) -> list[int]:
        """Ready analysis workers left without a lease once the round has leased every queued
        input: with an ``idle_kind`` each runs a slice of it (they are lent to fuzzing) rather
        than wait for the fuzzers' next finds; so does one the adaptive mix lends (``mix_lent``)
        once its pipeline is empty."""
        return [] if self.config.idle_kind is None else self._free(fuzzers=False)

    def status(self) -> Status:
        """Idle: nothing queued, leased, waiting to be committed or counted; satisfied: every worker
        has ``stop_after`` results counted in this generation (``core.master.termination``)."""
        idle = not (self.queue.pending or self.held() or self.waiting or self.pending or self.unaccounted)
        satisfied = self.config.stop_after > 0 and all(n >= self.config.stop_after for n in self.results.values())
        return Status(idle, self.frontier.items_sent, self.frontier.items_received, satisfied)

    # -- messages ----------------------------------------------------------------------------------

    def _on_refused(self, event: ev.Refused) -> None:
        self._log_limited("message-rejected", event.source, source=event.source, reason=event.reason)

    def _on_worker(self, event: ev.FromWorker) -> None:
        """A READY marks the worker idle; a RESULT that matches its lease waits for a round."""
        worker = event.worker
        try:
            message = envelope.decode(event.raw, self.config.limit)
            kind = message["type"]
            if kind == "READY":
                if message["generation"] != self.gen or message["worker"] != worker:
                    raise FenceError(f"READY for generation {message['generation']} from {message['worker']}")
                self.ready.add(worker)
                return
            if kind == "RETURN":
                if message["generation"] != self.gen or message["worker"] != worker:
                    raise FenceError(f"RETURN for generation {message['generation']} from {message['worker']}")
                self._returned(worker, message["leases"])
                return
            if kind != "RESULT":
                raise ProtocolError(f"{kind} is not a worker message")
            queue = self.outstanding.get(worker)
            if not queue:
                raise FenceError(f"RESULT from worker {worker}, which holds no lease")
            check_fence(queue[0].fence, message, worker, self.gen)  # a worker runs its leases in order
        except (ProtocolError, FenceError) as exc:
            self._log_limited("message-rejected", worker, source=worker, reason=str(exc))
            return
        self.progress_at[worker] = event.now
        if not self.waiting and not self.pending:
            self.oldest = event.now
        self.waiting.append((worker, message, queue.popleft()))

    def _returned(self, worker: int, tokens: list[str]) -> None:
        """``leased -> queued`` for the leases a worker past the deadline hands back unstarted:
        released and put back (a slice is not), so a stopping master waits only for the lease
        each worker is running, not for its whole pipeline (``PIPELINE``)."""
        queue = self.outstanding.get(worker, deque())
        returned = [held for held in queue if held.fence.lease in set(tokens)]
        unknown = sorted(set(tokens) - {held.fence.lease for held in returned})
        if unknown:
            self._log_limited("message-rejected", worker, source=worker,
                              reason=f"RETURN of leases {unknown} this worker does not hold")
        for held in returned:
            queue.remove(held)
            self._emit(ev.Release, held.fence.lease)
            if held.slice is None:
                self.queue.requeue(held.fence.input_hash, held.priority)
        if returned:
            self.progress_at[worker] = self._now
            self._log("leases-returned", worker=worker, count=len(returned))

    def _on_master(self, event: ev.FromMaster) -> None:
        source = event.master
        try:
            message = envelope.decode(event.raw, self.config.limit)
            if message["type"] != "FRONTIER" or message["generation"] != self.gen or message["master"] != source:
                raise FenceError(f"{message['type']} of generation {message['generation']} from master {source}")
        except (ProtocolError, FenceError) as exc:
            self._log_limited("message-rejected", source, source=source, reason=str(exc))
            return
        self.frontier.take(message)
        self._log_limited("frontier-taken", source, source=source, items=len(message["items"]),
                          coverage=len(message["coverage"]))

    # -- a tick: fencing, deadline, exhaustion, a round ----------------------------------------------

    def _on_tick(self, event: ev.Tick) -> None:
        if self._start is not None or self.stopped:
            raise RuntimeError("a tick before the master is ready or after it stopped")
        now = self._tick = event.now
        self._fence_expired(now)
        if self.stopping_since is None and now >= self.config.deadline:
            self.stopping_since = now
            self._log("deadline", outstanding=self.held(), frontier=self.queue.pending)
            self._round_or_settle(now)
        elif self.stopping_since is None:
            status = self.status()
            self._ask(ev.PollExhaustion, Step.POLLED, status.idle, status.sent, status.received, status.satisfied, now)
        else:
            self._round_or_settle(now)

    def _polled(self, fact: ev.Polled) -> None:
        now = self._tick
        if fact.ended is not None:
            self.stopping_since, self.reason = now, fact.ended
            self._log(fact.ended, totals=self.frontier.totals, remaining_s=self.config.deadline - now)
        self._round_or_settle(now)

    def _fence_expired(self, now: float) -> None:
        limit = self.config.lease_s
        for worker, queue in self.outstanding.items():
            held_s = now - self.progress_at.get(worker, now)
            if not queue or worker in self.fenced or held_s <= limit:
                continue
            self.fenced.add(worker)
            peer, me = self.config.peers[worker], self.config.peers[self.config.me]
            if peer["host"] != me["host"]:
                self._log("lease-expired", worker=worker, held_s=held_s, fenced=False,
                          reason=f"worker runs on {peer['host']}; only local ranks can be fenced")
                continue
            self._log("lease-expired", worker=worker, held_s=held_s, fenced=True, pid=peer["pid"])
            self._emit(ev.Kill, peer["pid"])

    def _round_or_settle(self, now: float) -> None:
        dispatch = self.stopping_since is None
        if self._due(dispatch, now):
            self._begin_round(dispatch, After.TICK)
        elif self.unaccounted and not self.waiting and not self.pending:
            self._settle(After.TICK)
        else:
            self._after_tick()

    def _after(self, after: After) -> None:
        """Go on after a round or a drain (``core.master.steps.After``)."""
        if after is After.TICK:
            self._after_tick()
        else:
            self._stop()

    def _after_tick(self) -> None:
        now = self._tick
        if self.stopping_since is not None and (not self.held() or now - self.stopping_since > self.config.grace_s):
            self._settle(After.STOP)

    def _due(self, dispatch: bool, now: float) -> bool:
        """Whether a round runs now (see the module docstring)."""
        if dispatch and self.queue.pending and any(
                w in self.ready and len(self.outstanding[w]) < PIPELINE - 1 and not self.config.fuzzes(w)
                and w not in self.mix_lent for w in self.config.workers):
            return True
        if dispatch and (self._idle_fuzzers() or self._idle_analysts()):
            return True
        if not self.waiting and not self.pending:
            return False
        return not dispatch or now - self.oldest >= min(MAX_COMMIT_DELAY, self.task_s / 2)

    # -- stopping ---------------------------------------------------------------------------------

    def _stop(self) -> None:
        """Release every lease still held (its input is in the frontier again, for a resume) and
        name each in ``master-stop`` with its worker and input, then STOP every worker."""
        abandoned = [{"worker": w, "input": lost.fence.input_hash, "slice": lost.slice is not None}
                     for w, queue in self.outstanding.items() for lost in queue]
        for queue in self.outstanding.values():
            for lost in queue:
                self._emit(ev.Release, lost.fence.lease)
        self._log("master-stop", abandoned=self.held(), abandoned_leases=abandoned, totals=self.frontier.totals,
                  syncs=self.syncs, frontier=self.queue.pending)
        for w in self.config.workers:
            stop = envelope.encode("STOP", self.config.limit, generation=self.gen, reason=self.reason)
            self._emit(ev.Send, w, stop, f"STOP to worker {w}")
        self.stopped = True
        self._emit(ev.Stop)

    def _on_failed(self, event: ev.Failed) -> None:
        """Done records of the last round are durable after one more barrier: count them (the
        FRONTIER messages cannot go out any more; the next generation rebuilds from the corpus)."""
        self._round = None
        self._awaiting = None
        self.failed = True
        self._ask(ev.Barrier, Step.FAILURE_SYNCED)

    def _failure_synced(self, fact: ev.Synced) -> None:
        self._account_all()

    def _account_all(self) -> None:
        """Count the done records the last barrier made durable; forward their new inputs."""
        records, self.unaccounted = self.unaccounted, []
        for record in records:
            for master, payload in self._account(record):
                if not self.failed:
                    self._emit(ev.Forward, master, payload)

    def _account(self, record: dict) -> list[tuple[int, bytes]]:
        manifest = record["manifest"]
        if (manifest["master"], manifest["generation"]) == (self.config.me, self.gen) and manifest["worker"] in self.results:
            self.results[manifest["worker"]] += 1
        if self.yields is not None:
            self.yields.observe(record)
        line, messages = self.frontier.account(record)
        self._log("commit", **line)
        return messages
