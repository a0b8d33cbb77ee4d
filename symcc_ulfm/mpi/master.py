"""The master loop: lease, dispatch, verify, commit, forward frontier.

One generation of one master. Before any work it replays the WAL's ``committing`` records it
owns, reclaims lapsed leases and rebuilds its frontier (``frontier.py``); then it serves
READY/RESULT from its workers and FRONTIER from its peers until the deadline, waits (bounded)
for outstanding results, stops its workers and joins the final agreement.

Durability is a group commit per loop round (``store.wal.GroupCommit``), pipelined over
rounds so that one barrier (``syncfs``) per round keeps every ordering the WAL needs: the
round's manifests and new leases, the claims and objects of the previous round's manifests
(published before the barrier: their manifests became durable at the previous one) and the
done records marked after the previous barrier all become durable together; then WORK is
sent, earlier done records are counted and forwarded, and the previous round's records are
marked done. An idle master drains the pipeline (publish, barrier, done, barrier).

A round is not run for every RESULT (group commit delay): a worker holds up to ``PIPELINE``
leases, so results wait, up to half the time a task takes (at most ``MAX_COMMIT_DELAY``), for
others to share their barrier, unless a worker is down to the lease it runs while inputs are
waiting for it. On a host where the workers fill the cores, a barrier per RESULT was a syncfs
and a round of fixed costs per commit.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from dataclasses import dataclass

from ..core import envelope, poison
from ..core.envelope import Fence, check_fence
from ..core.frontier import PRIORITY_UNIQUE
from ..core.report import check_stats, distinct_objects
from ..core.termination import Status
from ..errors import FenceError, IntegrityError, ProtocolError, StoreError
from ..store.atomic import Barrier
from ..store.querystore import QueryStore
from ..store.record import work_hash
from ..store.staging import read_running, staged_name
from ..store.wal import AlreadyDone, GroupCommit, NeedsReplay
from .context import RankContext
from .frontier import Frontier
from .termination import Exhaustion
from .transport import TAG_DATA, TAG_FRONTIER, TAG_SENTINEL, Backoff, FailureDetected, Inbox, Mailbox, Outbox

MAX_REJECTIONS = 3
PIPELINE = 3  # leases a worker may hold: a worker runs one, the next ones are already there
MAX_COMMIT_DELAY = 0.02  # seconds a RESULT may wait for others to share its round's barrier


@dataclass
class Outstanding:
    fence: Fence
    lease: dict
    priority: int


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


class MasterLoop:
    def __init__(self, ctx: RankContext):
        self.ctx = ctx
        self.gen = ctx.generation
        layout = ctx.membership.layout
        self.workers = layout.group_of(ctx.stable).workers  # group rank i + 1 is workers[i] (Split keyed by stable id)
        self.masters = layout.masters
        self.limit = ctx.policy.max_message_bytes
        self.barrier = Barrier(ctx.state.root)
        self.locks = ctx.wal.lock_file()  # the record locks of this master's rounds, one round at a time
        self.store = QueryStore(ctx.state.query_store, ctx.stable, self.gen, ctx.state.modes.snapshot,
                                ctx.state.modes.snapshot_dir, deferred=True)
        self.frontier = Frontier(ctx, self.masters)
        self.outbox = Outbox()
        self.ready: set[int] = set()  # workers that sent READY
        self.outstanding: dict[int, deque[Outstanding]] = {w: deque() for w in self.workers}
        self.progress_at: dict[int, float] = {}  # when each worker last made progress (for fencing)
        self.unaccounted: list[dict] = []  # done records not yet durable, counted after the next barrier
        self.pending: list[str] = []  # work whose manifests are durable, published in the next round
        self.rejections: dict[str, int] = {}
        self.dispatched = 0
        self.fenced: set[int] = set()
        self.waiting: list[tuple[int, dict, Outstanding]] = []  # accepted RESULTs for the next round
        self.oldest = 0.0  # when the oldest waiting RESULT (or pending manifest) arrived
        self.task_s = 0.0  # how long a task takes (moving average of the workers' reports)

    @property
    def committer(self) -> dict:
        return {"generation": self.gen, "master": self.ctx.stable}

    def prepare(self) -> None:
        self.frontier.prepare(self.committer, self._quarantine)
        self._send_frontier(self.frontier.outgoing)
        self.frontier.outgoing = []

    def _send_frontier(self, messages: list[tuple[int, bytes]]) -> None:
        for dest, payload in messages:
            self.outbox.send(self.ctx.master_comm, self.masters.index(dest), TAG_FRONTIER, payload, f"FRONTIER to {dest}")

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._serve()
        except FailureDetected:
            # done records of the last round are durable after this sync: count them (the
            # FRONTIER messages cannot go out any more; the next generation rebuilds from the corpus)
            self.barrier.sync()
            for record in self.unaccounted:
                self.frontier.account(record, limit=self.limit)
            self.unaccounted = []
            raise

    def _serve(self) -> None:
        ctx = self.ctx
        group, masters_comm = ctx.group_comm, ctx.master_comm
        data = {w: Mailbox(group, i + 1, TAG_DATA, self.limit) for i, w in enumerate(self.workers)}
        sentinels = {w: Inbox(group, i + 1, TAG_SENTINEL, 16).post() for i, w in enumerate(self.workers)}
        peers = [m for m in self.masters if m != ctx.stable]
        frontier = {m: Mailbox(masters_comm, self.masters.index(m), TAG_FRONTIER, self.limit) for m in peers}
        exhaustion = Exhaustion(ctx, self.masters, self.outbox)
        backoff = Backoff()
        stopping_since = None
        grace = ctx.policy.timeouts.shutdown_grace_s
        while True:
            ctx.check_revocation()
            for w, inbox in sentinels.items():
                if self._receive(inbox, w, f"failure sentinel of worker {w}") is not None:
                    ctx.log.limited("message-rejected", w, source=w, reason="data on the failure-sentinel tag")
            heard = False
            for w, inbox in data.items():
                message = self._receive(inbox, w, f"data from worker {w}")
                if message is not None:
                    heard = True
                    self._on_worker(w, message)
            for m, inbox in frontier.items():
                message = self._receive(inbox, m, f"frontier from master {m}")
                if message is not None:
                    heard = True
                    self.frontier.on_frontier(m, message, self.gen, self.limit)
            self.outbox.progress()
            now = time.time()
            self._fence_expired(now)
            if stopping_since is None and now >= ctx.deadline:
                stopping_since = now
                ctx.log.event("deadline", outstanding=self._held(), frontier=self.frontier.sched.pending)
            elif stopping_since is None and exhaustion.poll(self._status(), now):
                stopping_since, ctx.exhausted = now, True
                ctx.log.event("exhausted", totals=self.frontier.totals, remaining_s=ctx.deadline - now)
            stopping = stopping_since is not None
            progressed = self._round(dispatch=not stopping, now=now) or heard
            if stopping and (not self._held() or now - stopping_since > grace):
                break
            if progressed:
                backoff.reset()
            else:
                backoff.idle()
        self._settle()
        for queue in self.outstanding.values():
            for lost in queue:
                self.store.release(lost.fence.lease)
        ctx.log.event("master-stop", abandoned=self._held(), totals=self.frontier.totals, syncs=self.barrier.syncs,
                      frontier=self.frontier.sched.pending)
        reason = "exhausted" if ctx.exhausted else "deadline"
        for i, w in enumerate(self.workers):
            stop = envelope.encode("STOP", self.limit, generation=self.gen, reason=reason)
            self.outbox.send(group, i + 1, TAG_DATA, stop, f"STOP to worker {w}")
        while self.outbox.busy:
            ctx.check_revocation()
            self.outbox.progress()
            backoff.idle()
        for inbox in [*data.values(), *sentinels.values(), *frontier.values()]:
            inbox.cancel()
        exhaustion.cancel()

    def _status(self) -> Status:
        """Idle: nothing queued, leased, waiting to be committed or counted (core.termination)."""
        idle = not (self.frontier.sched.pending or self._held() or self.waiting or self.pending or self.unaccounted)
        return Status(idle, self.frontier.items_sent, self.frontier.items_received)

    def _receive(self, inbox: Inbox | Mailbox, source: int, where: str) -> bytes | None:
        try:
            return inbox.test(where)
        except ProtocolError as exc:
            self.ctx.log.limited("message-rejected", source, source=source, reason=str(exc))
            return None

    def _on_worker(self, worker: int, raw: bytes) -> None:
        """A READY marks the worker idle; a RESULT waits for a round's group commit."""
        try:
            message = envelope.decode(raw, self.limit)
            kind = message["type"]
            if kind == "READY":
                if message["generation"] != self.gen or message["worker"] != worker:
                    raise FenceError(f"READY for generation {message['generation']} from {message['worker']}")
                self.ready.add(worker)
                return
            if kind == "RESULT":
                queue = self.outstanding.get(worker)
                if not queue:
                    raise FenceError(f"RESULT from worker {worker}, which holds no lease")
                check_fence(queue[0].fence, message, worker, self.gen)  # a worker runs its leases in order
                now = time.time()
                self.progress_at[worker] = now
                if not self.waiting and not self.pending:
                    self.oldest = now
                self.waiting.append((worker, message, queue.popleft()))
                return
            raise ProtocolError(f"{kind} is not a worker message")
        except (ProtocolError, FenceError) as exc:
            self.ctx.log.limited("message-rejected", worker, source=worker, reason=str(exc))

    # -- one round of group commit --------------------------------------------------------

    def _due(self, dispatch: bool, now: float) -> bool:
        """Whether a round runs now (see the module docstring)."""
        if dispatch and self.frontier.sched.pending and any(
                w in self.ready and len(self.outstanding[w]) < PIPELINE - 1 for w in self.workers):
            return True
        if not self.waiting and not self.pending:
            return False
        return not dispatch or now - self.oldest >= min(MAX_COMMIT_DELAY, self.task_s / 2)

    def _round(self, dispatch: bool, now: float) -> bool:
        if not self._due(dispatch, now):
            if self.unaccounted and not self.waiting and not self.pending:
                self._settle()
            return False
        results, self.waiting = self.waiting, []
        with self.ctx.wal.batch(self.barrier, self.locks) as group:
            with self.store.transaction():
                staged = [s for s in (self._stage(group, *result) for result in results) if s is not None]
                published = self._publish_pending(group)
                work_out = self._lease_idle(group, published) if dispatch else []
            # this round's manifests and leases, the last round's claims and objects, earlier done records
            group.sync()
            self._account(self.unaccounted)
            self.unaccounted = []
            for target, payload, worker in work_out:
                self.outbox.send(self.ctx.group_comm, target, TAG_DATA, payload, f"WORK to {worker}")
                self.dispatched += 1
                if self.dispatched == 1:
                    self.ctx.log.event("first-work", worker=worker)
                self.ctx.injector.maybe("work", self.gen)
            if staged:
                self.ctx.injector.maybe("commit", self.gen)
            self._finish(group, published)
            self.pending = staged
            self.oldest = time.time()
        return True

    def _finish(self, group: GroupCommit, published: list[tuple[str, list[str] | None | bool]]) -> None:
        """Mark done the records whose claims and objects are durable (counted after the next barrier)."""
        for work, claimed in published:
            if claimed is not False:
                record = group.finish(work, claimed, self.committer)
                if claimed is not None:  # None: it was done already, by whoever counts it
                    self.unaccounted.append(record)

    def _settle(self) -> None:
        """Drain the pipeline: publish what is pending, make the last done records durable, count them."""
        if self.pending:
            with self.ctx.wal.batch(self.barrier, self.locks) as group, self.store.transaction():
                published = self._publish_pending(group)
                group.sync()
                self._finish(group, published)
            self.pending = []
        self.barrier.sync()
        self._account(self.unaccounted)
        self.unaccounted = []

    def _account(self, records: list[dict]) -> None:
        for record in records:
            self._send_frontier(self.frontier.account(record, limit=self.limit))
        self._send_frontier(self.frontier.outgoing)  # replays done while leasing
        self.frontier.outgoing = []

    def _stage(self, group: GroupCommit, worker: int, message: dict, held: Outstanding) -> str | None:
        """Verify a RESULT against its lease and staging and write its manifest (deferred); the
        work hash whose objects the publish phase takes."""
        fence = held.fence
        try:
            check_stats(message["stats"], self.ctx.policy.timeouts.lease_s)  # the worker's word, recorded only
            self.store.accept(message["generation"], message["shard"], message["lease"], fence.work_hash, worker)
            judged = self.frontier.sched.judge(distinct_objects(message["candidates"]))
            objects = [{"sha256": j.sha256, "length": j.length, "staging": staged_name(worker, fence.lease, j.sha256),
                        "novel": j.novel, "coverage": list(j.coverage), "hint": j.hint} for j in judged]
            manifest = {
                "generation": self.gen, "master": self.ctx.stable, "worker": worker, "shard": fence.shard,
                "lease": fence.lease, "input_hash": fence.input_hash, "work_hash": fence.work_hash,
                "objects": objects, "generated": len(objects),  # derived from what was staged (core.report)
                "findings": findings_of(message, time.time()), "stats": message["stats"], "error": message["error"],
            }
            group.begin(fence.work_hash, held.lease, manifest)  # checks every staged object first
        except (IntegrityError, FenceError, ProtocolError) as exc:
            self.store.release(fence.lease)
            self._requeue_rejected(fence.input_hash, held.priority, str(exc))
            self.ctx.log.limited("result-rejected", worker, worker=worker, lease=fence.lease, reason=str(exc))
            return None
        seconds = message["stats"].get("seconds", 0.0)
        self.task_s = seconds if not self.task_s else 0.8 * self.task_s + 0.2 * seconds
        for j in judged:  # learn the coverage now: the next round's results are judged before this round is counted
            self.frontier.sched.absorb(j.coverage)
        return fence.work_hash

    # -- poison inputs (core.poison) ------------------------------------------------------

    def _quarantine(self, lapsed: list[dict]) -> set[str]:
        """Settle, as a ``crash`` finding, every lapsed record whose leases killed ``poison_deaths``
        workers; the inputs settled. Runs before any work of the generation."""
        limit = self.ctx.policy.poison_deaths
        died = poison.deaths(self.ctx.snapshots.receipts())
        candidates = [r for r in lapsed if sum(lease["worker"] in died.get(lease["generation"], ())
                                               for lease in poison.record_leases(r)) >= limit]
        if not candidates:
            return set()
        settled, done = set(), []
        with self.ctx.wal.batch(self.barrier, self.locks) as group, self.store.transaction():
            for record in candidates:
                leases = poison.record_leases(record)
                running = {(lease["worker"], lease["generation"]): read_running(
                    self.ctx.state.root, lease["worker"], lease["generation"]) for lease in leases}
                strikes = poison.strikes(leases, died, running)
                if len(strikes) >= limit:
                    done.append(self._settle_poison(group, record, strikes))
                    settled.add(record["input_hash"])
            group.sync()  # the manifests are durable before their (empty) publication
            finished = [(work, group.publish(work)) for work in done]
            group.sync()
            self._finish(group, finished)
        return settled

    def _settle_poison(self, group: GroupCommit, record: dict, strikes: list[poison.Strike]) -> str:
        input_hash, me = record["input_hash"], self.ctx.stable
        token = self.store.issue(record["work_hash"], input_hash, me)
        lease = {"generation": self.gen, "master": me, "shard": self.store.shard, "token": token, "worker": me}
        group.lease(input_hash, self.ctx.executor_sha, lease)
        finding = {"kind": "crash", "signature": poison.SIGNATURE, "detail": poison.detail(strikes),
                   "sha256": input_hash, "time": time.time()}
        manifest = {
            "generation": self.gen, "master": me, "worker": me, "shard": self.store.shard, "lease": token,
            "input_hash": input_hash, "work_hash": record["work_hash"], "objects": [], "generated": 0,
            "findings": [finding], "stats": {}, "error": None,
            "quarantine": {"strikes": [s.to_json() for s in strikes]},
        }
        group.begin(record["work_hash"], lease, manifest)
        self.ctx.log.event("input-quarantined", input_hash=input_hash, strikes=len(strikes),
                           workers=[s.worker for s in strikes])
        return record["work_hash"]

    def _publish_pending(self, group: GroupCommit) -> list[tuple[str, list[str] | None | bool]]:
        """Claims and objects of the records whose manifests the last barrier made durable (deferred)."""
        return [(work, self._publish(group, work)) for work in self.pending]

    def _publish(self, group: GroupCommit, work: str) -> list[str] | None | bool:
        """Claims and objects of one record (deferred); False when integrity stops it (logged)."""
        try:
            return group.publish(work)
        except IntegrityError as exc:
            self.ctx.log.event("integrity-error", work_hash=work, error=str(exc))
            return False

    def _held(self) -> int:
        return sum(len(queue) for queue in self.outstanding.values())

    def _free_slots(self) -> list[int]:
        """Ready workers with room in their pipeline, emptiest first (one slot per entry)."""
        slots = []
        for depth in range(PIPELINE):
            slots += [w for w in self.workers if w in self.ready and len(self.outstanding[w]) == depth]
        return slots

    def _lease_idle(self, group: GroupCommit, published: list) -> list[tuple[int, bytes, int]]:
        """Fill every ready worker's pipeline with leases (deferred); the WORK messages to send.

        A ``committing`` record met on the way is replayed in this batch (its lock is held):
        its claims and objects join ``published`` and it is marked done with them.
        """
        out = []
        sched = self.frontier.sched
        for worker in self._free_slots():
            while (input_hash := sched.next_input()) is not None:
                payload = self._lease(group, worker, input_hash, published)
                if payload is not None:
                    out.append((self.workers.index(worker) + 1, payload, worker))
                    break
            if input_hash is None:
                break
        return out

    def _lease(self, group: GroupCommit, worker: int, input_hash: str, published: list) -> bytes | None:
        ctx = self.ctx
        work = work_hash(input_hash, ctx.executor_sha)
        priority = self.frontier.priority.get(input_hash, PRIORITY_UNIQUE)
        token = self.store.issue(work, input_hash, worker)
        lease = {"generation": self.gen, "master": ctx.stable, "shard": self.store.shard, "token": token, "worker": worker}
        try:
            group.lease(input_hash, ctx.executor_sha, lease)
        except AlreadyDone:
            self.store.release(token)
            return None
        except NeedsReplay:
            self.store.release(token)
            self.frontier.sched.forget(input_hash)
            if work not in self.pending and all(w != work for w, _ in published):
                published.append((work, self._publish(group, work)))
            return None
        except StoreError as exc:
            self.store.release(token)
            self._requeue_rejected(input_hash, priority, str(exc))
            ctx.log.event("lease-refused", input_hash=input_hash, reason=str(exc))
            return None
        except (FenceError, IntegrityError) as exc:
            self.store.release(token)
            self.frontier.sched.forget(input_hash)
            ctx.log.event("lease-refused", input_hash=input_hash, reason=str(exc))
            return None
        fence = Fence(self.gen, self.store.shard, token, work, input_hash, worker)
        if not self.outstanding[worker]:
            self.progress_at[worker] = time.time()
        self.outstanding[worker].append(Outstanding(fence, lease, priority))
        return envelope.encode("WORK", self.limit, **fence.fields(), hint=self.frontier.hints.get(input_hash))

    def _requeue_rejected(self, input_hash: str, priority: int, reason: str) -> None:
        count = self.rejections.get(input_hash, 0) + 1
        self.rejections[input_hash] = count
        if count < MAX_REJECTIONS:
            self.frontier.sched.requeue(input_hash, priority)
        else:
            self.ctx.log.event("input-dropped", input_hash=input_hash, rejections=count, reason=reason)

    def _fence_expired(self, now: float) -> None:
        """Kill a worker that holds a lease past ``timeouts.lease_s`` (e.g. SIGSTOPped).

        ULFM only detects processes that die; a stopped one would hold its lease, and block the
        next shrink, forever. Fencing it turns a hang into an ordinary failure that recovery
        handles. Only ranks on this master's host can be fenced; a remote one is reported.
        """
        limit = self.ctx.policy.timeouts.lease_s
        for worker, queue in self.outstanding.items():
            held_s = now - self.progress_at.get(worker, now)
            if not queue or worker in self.fenced or held_s <= limit:
                continue
            self.fenced.add(worker)
            peer, me = self.ctx.peers[worker], self.ctx.peers[self.ctx.stable]
            if peer["host"] != me["host"]:
                self.ctx.log.event("lease-expired", worker=worker, held_s=held_s, fenced=False,
                                   reason=f"worker runs on {peer['host']}; only local ranks can be fenced")
                continue
            self.ctx.log.event("lease-expired", worker=worker, held_s=held_s, fenced=True, pid=peer["pid"])
            try:
                os.kill(peer["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        self.store.close()
        self.barrier.close()
        self.locks.close()
        self.ctx.wal.staged.close()  # staged files kept for a publication that a later generation replays
