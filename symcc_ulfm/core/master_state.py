"""One master of one generation as a state machine: events in, instructions out.

Pure: no MPI, no clock, no file system. :meth:`MasterState.handle` takes an event
(``core.master_events``) and returns the instructions to perform; the driver (``mpi.master``)
performs them and feeds back what they found as facts. The machine holds the outstanding
leases of every worker, the commit pipeline, the frontier queue and its accounts.

Work moves through the WAL states ``leased -> committing -> done``:

- *start*: replay the ``committing`` records this master owns (``committing -> done``),
  reclaim the leases of older generations (``leased``, queued ahead of everything else unless
  they killed too many workers, ``core.poison``) and rebuild the queue from the corpus;
- *none -> leased*: a ready worker with room in its pipeline (``PIPELINE`` leases) gets the
  next input; the WORK is sent after the barrier that makes its lease durable;
- *leased -> committing*: a RESULT that matches its lease (``core.envelope.check_fence``) waits
  for a round; the round writes its manifest;
- *committing -> done*: the next round publishes its objects before its barrier and marks it
  done after it; done records are counted (and their new inputs forwarded to their owners)
  after the barrier that follows;
- *leased -> queued*: a rejected result puts its input back (``MAX_REJECTIONS`` at most).

Durability is a group commit per round, pipelined over rounds so that one barrier per round
keeps every ordering the WAL needs: the round's manifests and new leases, the claims and
objects of the previous round's manifests and the done records marked after the previous
barrier all become durable together. A round is not run for every RESULT: results wait up to
half the time a task takes (at most ``MAX_COMMIT_DELAY``) for others to share their barrier,
unless a worker is down to the lease it runs while inputs are waiting for it. An idle master
drains the pipeline (publish, barrier, done, barrier).

A worker that holds a lease past ``lease_s`` without a result is fenced: killed when it runs on
this master's host (ULFM then detects it like any death), reported otherwise.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import FenceError, ProtocolError
from . import envelope
from . import master_events as ev
from .envelope import Fence, check_fence
from .frontier import PRIORITY_RECLAIMED, PRIORITY_SEED, PRIORITY_UNIQUE, Frontier
from .report import check_stats, distinct_objects
from .schedule import Phase
from .termination import Status

MAX_REJECTIONS = 3
PIPELINE = 3  # leases a worker may hold: a worker runs one, the next ones are already there
MAX_COMMIT_DELAY = 0.02  # seconds a RESULT may wait for others to share its round's barrier


@dataclass(frozen=True)
class MasterConfig:
    me: int
    generation: int
    workers: tuple[int, ...]
    masters: tuple[int, ...]
    limit: int  # the largest message, bytes
    lease_s: float
    deadline: float
    grace_s: float  # how long a stopping master waits for outstanding results
    peers: dict[int, dict] = field(default_factory=dict)  # stable rank -> {"host", "pid"} (for fencing)


@dataclass
class Outstanding:
    fence: Fence
    lease: dict
    priority: int


@dataclass
class Round:
    """One round of group commit in progress."""

    dispatch: bool
    results: deque
    then: Callable[[], None]  # what the tick that started it does next
    current: tuple | None = None
    staged: list[str] = field(default_factory=list)
    publishing: deque = field(default_factory=deque)
    published: list[tuple[str, list[str] | None | bool]] = field(default_factory=list)
    slots: deque = field(default_factory=deque)
    work_out: list[tuple[int, bytes]] = field(default_factory=list)
    finishing: deque = field(default_factory=deque)
    leasing: str = ""  # the input of the lease being taken


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


class MasterState:
    def __init__(self, config: MasterConfig):
        self.config = config
        self.gen = config.generation
        self.frontier = Frontier(config.me, config.masters, config.generation, config.limit)
        self.queue = self.frontier.queue
        self.ready: set[int] = set()  # workers that sent READY
        self.outstanding: dict[int, deque[Outstanding]] = {w: deque() for w in config.workers}
        self.progress_at: dict[int, float] = {}  # when each worker last made progress (for fencing)
        self.fenced: set[int] = set()
        self.waiting: list[tuple[int, dict, Outstanding]] = []  # accepted RESULTs for the next round
        self.pending: list[str] = []  # work whose manifests are durable, published in the next round
        self.unaccounted: list[dict] = []  # done records not yet durable, counted after the next barrier
        self.rejections: dict[str, int] = {}
        self.oldest = 0.0  # when the oldest waiting RESULT (or pending manifest) arrived
        self.task_s = 0.0  # how long a task takes (moving average of the workers' reports)
        self.dispatched = 0
        self.rounds = 0
        self.syncs = 0
        self.stopping_since: float | None = None
        self.exhausted = False
        self.failed = False
        self.stopped = False
        self._round: Round | None = None
        self._awaiting: tuple[type, Callable] | None = None  # the fact the machine waits for
        self._start: Recovery | None = None
        self._seq = 0
        self._stimulus = ""
        self._now = 0.0
        self._tick = 0.0  # the time of the tick being handled
        self._out: list[ev.Instruction] = []

    @property
    def committer(self) -> dict:
        return {"generation": self.gen, "master": self.config.me}

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
            kind, then = self._awaiting
            if not isinstance(event, kind) and not isinstance(event, ev.Failed):
                raise RuntimeError(f"{type(event).__name__} while the master waits for {kind.__name__}")
            if isinstance(event, kind):
                self._awaiting = None
                then(event)
                return self._out
        self._stimulus = f"{type(event).__name__.lower()}-{self._seq}"
        handler = {
            ev.Start: self._on_start, ev.FromWorker: self._on_worker, ev.FromMaster: self._on_master,
            ev.Refused: self._on_refused, ev.Tick: self._on_tick, ev.Failed: self._on_failed,
        }.get(type(event))
        if handler is None:
            raise RuntimeError(f"{type(event).__name__} was not asked for")
        handler(event)
        return self._out

    def _emit(self, instruction_type: type, *args, **fields) -> None:
        self._out.append(instruction_type(self._stimulus, *args, **fields))

    def _ask(self, instruction_type: type, then: Callable, *args, **fields) -> None:
        """Emit an instruction that ends in a fact; ``then`` takes the fact."""
        self._emit(instruction_type, *args, **fields)
        self._awaiting = (instruction_type.FACT, then)

    def _log(self, event: str, **fields) -> None:
        self._emit(ev.Log, event, fields)

    def _log_limited(self, event: str, key: object, **fields) -> None:
        self._emit(ev.Log, event, fields, key)

    def held(self) -> int:
        return sum(len(queue) for queue in self.outstanding.values())

    def status(self) -> Status:
        """Idle: nothing queued, leased, waiting to be committed or counted (``core.termination``)."""
        idle = not (self.queue.pending or self.held() or self.waiting or self.pending or self.unaccounted)
        return Status(idle, self.frontier.items_sent, self.frontier.items_received)

    # -- start: replay, reclaim, rebuild -------------------------------------------------------------

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
        """Learn from the done records; the leases of older generations are lapsed (``core.poison``
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
            self._ask(ev.PollExhaustion, self._polled, status.idle, status.sent, status.received, now)
        else:
            self._round_or_settle(now)

    def _polled(self, fact: ev.Polled) -> None:
        now = self._tick
        if fact.exhausted:
            self.stopping_since, self.exhausted = now, True
            self._log("exhausted", totals=self.frontier.totals, remaining_s=self.config.deadline - now)
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
            self._begin_round(dispatch, lambda: self._after_tick(now))
        elif self.unaccounted and not self.waiting and not self.pending:
            self._settle(lambda: self._after_tick(now))
        else:
            self._after_tick(now)

    def _after_tick(self, now: float) -> None:
        if self.stopping_since is not None and (not self.held() or now - self.stopping_since > self.config.grace_s):
            self._settle(self._stop)

    def _due(self, dispatch: bool, now: float) -> bool:
        """Whether a round runs now (see the module docstring)."""
        if dispatch and self.queue.pending and any(
                w in self.ready and len(self.outstanding[w]) < PIPELINE - 1 for w in self.config.workers):
            return True
        if not self.waiting and not self.pending:
            return False
        return not dispatch or now - self.oldest >= min(MAX_COMMIT_DELAY, self.task_s / 2)

    # -- one round of group commit ----------------------------------------------------------------

    def _begin_round(self, dispatch: bool, then: Callable[[], None]) -> None:
        self.rounds += 1
        self._round = Round(dispatch, deque(self.waiting), then)
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
            self._ask(ev.Accept, self._accepted, worker, message["generation"], message["shard"], message["lease"],
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
        objects = [{"sha256": j.sha256, "length": j.length, "novel": j.novel, "coverage": list(j.coverage),
                    "hint": j.hint} for j in judged]
        manifest = {
            "generation": self.gen, "master": self.config.me, "worker": worker, "shard": fence.shard,
            "lease": fence.lease, "input_hash": fence.input_hash, "work_hash": fence.work_hash,
            "objects": objects, "generated": len(objects),  # derived from what was staged (core.report)
            "findings": findings, "stats": message["stats"], "error": message["error"],
        }
        self._round.current = (worker, message, held, judged)
        self._ask(ev.WriteManifest, self._committing, fence.work_hash, held.lease, manifest)

    def _committing(self, fact: ev.Committing) -> None:
        worker, message, held, judged = self._round.current
        if fact.error is not None:
            self._leased_to_queued(worker, held, fact.error)
            return self._leased_to_committing()
        seconds = message["stats"].get("seconds", 0.0)
        self.task_s = seconds if not self.task_s else 0.8 * self.task_s + 0.2 * seconds
        for j in judged:  # learn the coverage now: the next round's results are judged before this round is counted
            self.queue.absorb(j.coverage)
        self._round.staged.append(held.fence.work_hash)
        self._leased_to_committing()

    def _leased_to_queued(self, worker: int, held: Outstanding, reason: str) -> None:
        """``leased -> queued``: release the lease, put the input back (or drop it)."""
        self._emit(ev.Release, held.fence.lease)
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
            self._ask(ev.Publish, self._published, r.publishing.popleft())
            return
        if r.dispatch:
            r.slots = deque(self._free_slots())
            self._to_leased()
        else:
            self._ask(ev.Barrier, self._round_synced)

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
        """Ready workers with room in their pipeline, emptiest first (one slot per entry)."""
        slots = []
        for depth in range(PIPELINE):
            slots += [w for w in self.config.workers if w in self.ready and len(self.outstanding[w]) == depth]
        return slots

    def _to_leased(self) -> None:
        """``none -> leased``: fill every ready worker's pipeline while inputs are queued."""
        r = self._round
        if r.slots:
            input_hash = self.queue.next_input()
            if input_hash is not None:
                r.leasing = input_hash
                self._ask(ev.Lease, self._leased, r.slots[0], input_hash)
                return
        self._ask(ev.Barrier, self._round_synced)

    def _leased(self, fact: ev.Leased) -> None:
        r = self._round
        worker = r.slots[0]
        input_hash = r.leasing
        if fact.outcome == "leased":
            r.slots.popleft()
            fence = Fence(self.gen, fact.shard, fact.token, fact.work, input_hash, worker)
            if not self.outstanding[worker]:
                self.progress_at[worker] = fact.now
            priority = self.frontier.priority_of(input_hash)
            self.outstanding[worker].append(Outstanding(fence, fact.lease, priority))
            r.work_out.append((worker, envelope.encode("WORK", self.config.limit, **fence.fields(),
                                                       hint=self.frontier.hints.get(input_hash))))
            return self._to_leased()
        self._emit(ev.Release, fact.token)
        if fact.outcome == "committing":  # replayed in this batch: its lock is held
            self.queue.forget(input_hash)
            if fact.work not in self.pending and all(w != fact.work for w, _ in r.published):
                self._ask(ev.Publish, self._replay_published, fact.work)
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
        self._committing_to_done(self._end_round)

    def _committing_to_done(self, then: Callable[[], None]) -> None:
        """``committing -> done`` for the records whose claims and objects are durable."""
        r = self._round
        if r.finishing:
            work, claimed = r.finishing[0]
            self._ask(ev.MarkDone, lambda fact: self._done(fact, then), work, claimed)
        else:
            then()

    def _done(self, fact: ev.Done, then: Callable[[], None]) -> None:
        _, claimed = self._round.finishing.popleft()
        if claimed is not None:  # None: it was done already, by whoever counts it
            self.unaccounted.append(fact.record)
        self._committing_to_done(then)

    def _end_round(self) -> None:
        r, self._round = self._round, None
        self._emit(ev.CloseBatch)
        self.pending = r.staged
        self.oldest = self._now
        r.then()

    # -- draining the pipeline, stopping ----------------------------------------------------------

    def _settle(self, then: Callable[[], None]) -> None:
        """Publish what is pending, make the last done records durable, count them."""
        if not self.pending:
            self._ask(ev.Barrier, lambda fact: self._settled(fact, then))
            return
        self._round = Round(False, deque(), then, publishing=deque(self.pending))
        self.pending = []
        self._emit(ev.OpenBatch)
        self._settle_publish()

    def _settle_publish(self) -> None:
        r = self._round
        if r.publishing:
            self._ask(ev.Publish, self._settle_published, r.publishing.popleft())
            return
        self._ask(ev.Barrier, self._settle_synced)

    def _settle_published(self, fact: ev.Published) -> None:
        self._round.published.append((fact.work, self._claimed(fact)))
        self._settle_publish()

    def _settle_synced(self, fact: ev.Synced) -> None:
        r = self._round
        self.syncs = fact.syncs
        r.finishing = deque((work, claimed) for work, claimed in r.published if claimed is not False)
        self._committing_to_done(self._settle_closed)

    def _settle_closed(self) -> None:
        r, self._round = self._round, None
        self._emit(ev.CloseBatch)
        self._ask(ev.Barrier, lambda fact: self._settled(fact, r.then))

    def _settled(self, fact: ev.Synced, then: Callable[[], None]) -> None:
        self.syncs = fact.syncs
        self._account_all()
        then()

    def _stop(self) -> None:
        for queue in self.outstanding.values():
            for lost in queue:
                self._emit(ev.Release, lost.fence.lease)
        self._log("master-stop", abandoned=self.held(), totals=self.frontier.totals, syncs=self.syncs,
                  frontier=self.queue.pending)
        reason = "exhausted" if self.exhausted else "deadline"
        for w in self.config.workers:
            stop = envelope.encode("STOP", self.config.limit, generation=self.gen, reason=reason)
            self._emit(ev.Send, w, stop, f"STOP to worker {w}")
        self.stopped = True
        self._emit(ev.Stop)

    def _on_failed(self, event: ev.Failed) -> None:
        """Done records of the last round are durable after one more barrier: count them (the
        FRONTIER messages cannot go out any more; the next generation rebuilds from the corpus)."""
        self._round = None
        self._awaiting = None
        self.failed = True
        self._ask(ev.Barrier, lambda fact: self._account_all())

    def _account_all(self) -> None:
        """Count the done records the last barrier made durable; forward their new inputs."""
        records, self.unaccounted = self.unaccounted, []
        for record in records:
            for master, payload in self._account(record):
                if not self.failed:
                    self._emit(ev.Forward, master, payload)

    def _account(self, record: dict) -> list[tuple[int, bytes]]:
        line, messages = self.frontier.account(record)
        self._log("commit", **line)
        return messages
