"""The master loop: lease, dispatch, verify, commit, forward frontier.

One generation of one master. Before any work it replays the WAL's ``committing`` records it
owns, reclaims lapsed leases and rebuilds its frontier from the corpus; then it serves
READY/RESULT from its workers and FRONTIER from its peers until the deadline, waits (bounded)
for outstanding results, stops its workers and joins the final agreement.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from ..core import envelope
from ..core.envelope import Fence, check_fence
from ..core.scheduler import PRIORITY_NOVEL, PRIORITY_SEED, PRIORITY_UNIQUE, MasterScheduler
from ..errors import FenceError, IntegrityError, ProtocolError, StoreError
from ..store.corpus import SEED_OWNER
from ..store.querystore import QueryStore
from ..store.staging import read_staged, staged_name
from ..store.wal import AlreadyDone, NeedsReplay, work_hash
from .context import RankContext
from .transport import TAG_DATA, TAG_FRONTIER, TAG_SENTINEL, Backoff, Inbox, Outbox

MAX_REJECTIONS = 3


@dataclass
class Outstanding:
    fence: Fence
    lease: dict
    priority: int
    since: float


class MasterLoop:
    def __init__(self, ctx: RankContext):
        self.ctx = ctx
        self.gen = ctx.generation
        layout = ctx.membership.layout
        self.group = layout.group_of(ctx.stable)
        self.workers = self.group.workers  # group rank i + 1 is workers[i] (Split keyed by stable id)
        self.masters = layout.masters
        self.limit = ctx.policy.max_message_bytes
        self.sched = MasterScheduler(ctx.stable, self.masters)
        self.store = QueryStore(
            ctx.state.query_store, ctx.stable, self.gen, ctx.state.modes.snapshot, ctx.state.modes.snapshot_dir
        )
        self.outbox = Outbox()
        self.idle: list[int] = []
        self.outstanding: dict[int, Outstanding] = {}
        self.priority: dict[str, int] = {}
        self.hints: dict[str, dict | None] = {}
        self.rejections: dict[str, int] = {}
        self.dispatched = 0
        self.fenced: set[int] = set()
        self.totals = {"analyzed": 0, "generated": 0, "unique": 0, "novel": 0}

    # -- generation start ----------------------------------------------------------------

    def prepare(self) -> None:
        """Replay committing records, reclaim lapsed leases, rebuild the frontier (in that order)."""
        mark = time.monotonic()
        corpus = self.ctx.corpus
        records = self._trusted_records()
        replayed = 0
        for record in records:
            if record["state"] == "committing" and self.sched.owns(record["input_hash"]):
                replayed += self._replay(record["work_hash"])
        records = self._trusted_records() if replayed else records
        reclaimed = 0
        settled: set[str] = set()
        for record in records:
            if record["state"] == "done":
                settled.add(record["input_hash"])
                claimed = set(record["done"]["claimed"])
                for obj in record["manifest"]["objects"]:
                    if obj["sha256"] in claimed:
                        self.priority[obj["sha256"]] = PRIORITY_NOVEL if obj["novel"] else PRIORITY_UNIQUE
                        self.hints[obj["sha256"]] = obj["hint"]
                        self.sched.absorb(obj["coverage"])
            elif record["state"] == "leased" and record["lease"]["generation"] < self.gen:
                if self.sched.owns(record["input_hash"]):
                    reclaimed += 1
        for name in settled:
            self.sched.forget(name)
        for name in corpus.names():
            if name not in settled:
                default = PRIORITY_SEED if corpus.claim_owner(name) == SEED_OWNER else PRIORITY_UNIQUE
                self.sched.offer(name, self.priority.get(name, default))
        self.ctx.log.event(
            "master-ready",
            replayed=replayed,
            reclaimed=reclaimed,
            frontier=self.sched.pending,
            seconds=time.monotonic() - mark,
            workers=list(self.workers),
            masters=list(self.masters),
        )

    def _trusted_records(self) -> list[dict]:
        records = []
        for work, record, problem in self.ctx.wal.scan():
            if problem is not None:
                self.ctx.log.event("integrity-error", work_hash=work, error=str(problem))
            else:
                records.append(record)
        return records

    def _replay(self, work: str) -> int:
        """Replay one committing record; an integrity error leaves it committing (never overwritten)."""
        try:
            done = self.ctx.wal.replay_commit_once(work, {"generation": self.gen, "master": self.ctx.stable})
        except IntegrityError as exc:
            self.ctx.log.event("integrity-error", work_hash=work, error=str(exc))
            return 0
        self._account(done, replayed=True)
        return 1

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        ctx = self.ctx
        group, masters_comm = ctx.group_comm, ctx.master_comm
        data = {w: Inbox(group, i + 1, TAG_DATA, self.limit).post() for i, w in enumerate(self.workers)}
        sentinels = {w: Inbox(group, i + 1, TAG_SENTINEL, 16).post() for i, w in enumerate(self.workers)}
        peers = [m for m in self.masters if m != ctx.stable]
        frontier = {m: Inbox(masters_comm, self.masters.index(m), TAG_FRONTIER, self.limit).post() for m in peers}
        backoff = Backoff()
        stopping_since = None
        grace = ctx.policy.timeouts.shutdown_grace_s
        while True:
            progressed = False
            ctx.check_revocation()
            for w, inbox in sentinels.items():
                if self._receive(inbox, w, f"failure sentinel of worker {w}") is not None:
                    ctx.log.event("message-rejected", source=w, reason="data on the failure-sentinel tag")
            for w, inbox in data.items():
                message = self._receive(inbox, w, f"data from worker {w}")
                if message is not None:
                    progressed = True
                    self._on_worker(w, message)
            for m, inbox in frontier.items():
                message = self._receive(inbox, m, f"frontier from master {m}")
                if message is not None:
                    progressed = True
                    self._on_frontier(m, message)
            self.outbox.progress()
            now = time.time()
            self._fence_expired(now)
            if stopping_since is None and now >= ctx.deadline:
                stopping_since = now
                ctx.log.event("deadline", outstanding=len(self.outstanding), frontier=self.sched.pending)
            if stopping_since is None:
                progressed |= self._dispatch()
            elif not self.outstanding or now - stopping_since > grace:
                break
            if progressed:
                backoff.reset()
            else:
                backoff.idle()
        for lost in self.outstanding.values():
            self.store.release(lost.fence.lease)
        ctx.log.event("master-stop", abandoned=len(self.outstanding), totals=self.totals, frontier=self.sched.pending)
        for i, w in enumerate(self.workers):
            self.outbox.send(group, i + 1, TAG_DATA, envelope.encode("STOP", self.limit, generation=self.gen,
                                                                    reason="deadline"), f"STOP to worker {w}")
        while self.outbox.busy:
            ctx.check_revocation()
            self.outbox.progress()
            backoff.idle()
        for inbox in [*data.values(), *sentinels.values(), *frontier.values()]:
            inbox.cancel()

    def _receive(self, inbox: Inbox, source: int, where: str) -> bytes | None:
        try:
            return inbox.test(where)
        except ProtocolError as exc:
            self.ctx.log.event("message-rejected", source=source, reason=str(exc))
            return None

    # -- handlers ------------------------------------------------------------------------

    def _on_worker(self, worker: int, raw: bytes) -> None:
        try:
            message = envelope.decode(raw, self.limit)
            kind = message["type"]
            if kind == "READY":
                if message["generation"] != self.gen or message["worker"] != worker:
                    raise FenceError(f"READY for generation {message['generation']} from {message['worker']}")
                if worker not in self.idle and worker not in self.outstanding:
                    self.idle.append(worker)
            elif kind == "RESULT":
                self._on_result(worker, message)
                self.idle.append(worker)
            else:
                raise ProtocolError(f"{kind} is not a worker message")
        except (ProtocolError, FenceError) as exc:
            self.ctx.log.event("message-rejected", source=worker, reason=str(exc))

    def _on_result(self, worker: int, message: dict) -> None:
        held = self.outstanding.get(worker)
        if held is None:
            raise FenceError(f"RESULT from worker {worker}, which holds no lease")
        check_fence(held.fence, message, worker, self.gen)
        del self.outstanding[worker]
        fence = held.fence
        try:
            self.store.accept(message["generation"], message["shard"], message["lease"], fence.work_hash, worker)
            objects = []
            for judged in self.sched.judge(message["candidates"]):
                staged = staged_name(worker, fence.lease, judged.sha256)
                read_staged(self.ctx.state.root, staged, judged.sha256, judged.length)
                objects.append({"sha256": judged.sha256, "length": judged.length, "staging": staged,
                                "novel": judged.novel, "coverage": list(judged.coverage), "hint": judged.hint})
        except (IntegrityError, FenceError) as exc:
            self.store.release(fence.lease)
            self._requeue_rejected(fence.input_hash, held.priority, str(exc))
            self.ctx.log.event("result-rejected", worker=worker, lease=fence.lease, reason=str(exc))
            return
        manifest = {
            "generation": self.gen, "master": self.ctx.stable, "worker": worker, "shard": fence.shard,
            "lease": fence.lease, "input_hash": fence.input_hash, "work_hash": fence.work_hash,
            "objects": objects, "generated": max(len(objects), int(message["stats"].get("generated", 0))),
            "stats": message["stats"],
            "error": message["error"],
        }
        wal = self.ctx.wal
        wal.begin_commit(fence.work_hash, held.lease, manifest)
        self.ctx.injector.maybe("commit", self.gen)
        try:
            done = wal.replay_commit_once(fence.work_hash, {"generation": self.gen, "master": self.ctx.stable})
        except IntegrityError as exc:
            self.ctx.log.event("integrity-error", work_hash=fence.work_hash, error=str(exc))
            return
        self._account(done, replayed=False)

    def _account(self, record: dict, replayed: bool) -> None:
        """Count a done record, learn its coverage and route its new objects as frontier."""
        claimed = set(record["done"]["claimed"])
        objects = [o for o in record["manifest"]["objects"] if o["sha256"] in claimed]
        novel = [o for o in objects if o["novel"]]
        new_coverage: set[int] = set()
        for obj in objects:
            new_coverage |= self.sched.absorb(obj["coverage"])
            self.hints[obj["sha256"]] = obj["hint"]
        self.sched.forget(record["input_hash"])
        manifest = record["manifest"]
        self.totals["analyzed"] += 1
        self.totals["generated"] += manifest["generated"]
        self.totals["unique"] += len(objects)
        self.totals["novel"] += len(novel)
        self.ctx.log.event(
            "commit", work_hash=record["work_hash"], worker=manifest["worker"], generated=manifest["generated"],
            unique=len(objects), novel=len(novel), replayed=replayed,
            executions=manifest["stats"].get("executions", 0), edges=len(self.sched.coverage),
        )
        items = [(o["sha256"], PRIORITY_NOVEL if o["novel"] else PRIORITY_UNIQUE) for o in objects]
        forward = self.sched.route(items)
        for m in self.masters:
            if m == self.ctx.stable or (m not in forward and not new_coverage):
                continue
            payload = envelope.encode(
                "FRONTIER", self.limit, generation=self.gen, master=self.ctx.stable,
                items=[{"input_hash": h, "priority": p, "hint": self.hints.get(h)} for h, p in forward.get(m, [])],
                coverage=sorted(new_coverage),
            )
            self.outbox.send(self.ctx.master_comm, self.masters.index(m), TAG_FRONTIER, payload, f"FRONTIER to {m}")

    def _on_frontier(self, source: int, raw: bytes) -> None:
        try:
            message = envelope.decode(raw, self.limit)
            if message["type"] != "FRONTIER" or message["generation"] != self.gen or message["master"] != source:
                raise FenceError(f"{message['type']} of generation {message['generation']} from master {source}")
        except (ProtocolError, FenceError) as exc:
            self.ctx.log.event("message-rejected", source=source, reason=str(exc))
            return
        self.sched.absorb(message["coverage"])
        for item in message["items"]:
            self.hints[item["input_hash"]] = item["hint"]
            self.sched.offer(item["input_hash"], item["priority"])

    def _fence_expired(self, now: float) -> None:
        """Kill a worker that holds a lease past ``timeouts.lease_s`` (e.g. SIGSTOPped).

        ULFM only detects processes that die; a stopped one would hold its lease, and block the
        next shrink, forever. Fencing it turns a hang into an ordinary failure that recovery
        handles. Only ranks on this master's host can be fenced; a remote one is reported.
        """
        limit = self.ctx.policy.timeouts.lease_s
        for worker, held in self.outstanding.items():
            if worker in self.fenced or now - held.since <= limit:
                continue
            self.fenced.add(worker)
            peer, me = self.ctx.peers[worker], self.ctx.peers[self.ctx.stable]
            if peer["host"] != me["host"]:
                self.ctx.log.event("lease-expired", worker=worker, held_s=now - held.since, fenced=False,
                                   reason=f"worker runs on {peer['host']}; only local ranks can be fenced")
                continue
            self.ctx.log.event("lease-expired", worker=worker, held_s=now - held.since, fenced=True, pid=peer["pid"])
            try:
                os.kill(peer["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _requeue_rejected(self, input_hash: str, priority: int, reason: str) -> None:
        count = self.rejections.get(input_hash, 0) + 1
        self.rejections[input_hash] = count
        if count < MAX_REJECTIONS:
            self.sched.requeue(input_hash, priority)
        else:
            self.ctx.log.event("input-dropped", input_hash=input_hash, rejections=count, reason=reason)

    def _dispatch(self) -> bool:
        progressed = False
        while self.idle:
            input_hash = self.sched.next_input()
            if input_hash is None:
                return progressed
            worker = self.idle.pop(0)
            if not self._lease(worker, input_hash):
                self.idle.insert(0, worker)
                continue
            progressed = True
        return progressed

    def _lease(self, worker: int, input_hash: str) -> bool:
        ctx = self.ctx
        work = work_hash(input_hash, ctx.executor_sha)
        token = self.store.issue(work, input_hash, worker)
        lease = {"generation": self.gen, "master": ctx.stable, "shard": self.store.shard, "token": token, "worker": worker}
        try:
            ctx.wal.lease(input_hash, ctx.executor_sha, lease)
        except AlreadyDone:
            self.store.release(token)
            return False
        except NeedsReplay:
            self.store.release(token)
            self._replay(work)
            self.sched.forget(input_hash)
            return False
        except StoreError as exc:
            self.store.release(token)
            self._requeue_rejected(input_hash, self.priority.get(input_hash, PRIORITY_UNIQUE), str(exc))
            ctx.log.event("lease-refused", input_hash=input_hash, reason=str(exc))
            return False
        except (FenceError, IntegrityError) as exc:
            self.store.release(token)
            self.sched.forget(input_hash)
            ctx.log.event("lease-refused", input_hash=input_hash, reason=str(exc))
            return False
        fence = Fence(self.gen, self.store.shard, token, work, input_hash, worker)
        priority = self.priority.get(input_hash, PRIORITY_UNIQUE)
        self.outstanding[worker] = Outstanding(fence, lease, priority, time.time())
        payload = envelope.encode("WORK", self.limit, **fence.fields(), hint=self.hints.get(input_hash))
        self.outbox.send(ctx.group_comm, self.workers.index(worker) + 1, TAG_DATA, payload, f"WORK to {worker}")
        self.dispatched += 1
        if self.dispatched == 1:
            ctx.log.event("first-work", worker=worker)
        ctx.injector.maybe("work", self.gen)
        return True

    def close(self) -> None:
        self.store.close()
