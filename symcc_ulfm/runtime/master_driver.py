"""The master's driver: performs what ``core.master.machine`` decides and feeds back the facts.

One generation of one master, over any ``transport.Transport``. Each :meth:`MasterDriver.step`
polls the failure sentinels, the workers' and the peer masters' messages and feeds each as an
event, then a tick; every instruction is carried out here (WAL, QueryStore, corpus, sends,
failure injection, fencing) and every log line written for an instruction carries the id of
the event that caused it (``stimulus``). A detected failure (``transport.PeerFailure``) is fed
as an event too, so the done records that are durable are counted before recovery.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable

from ..core.master import events as ev
from ..core.master.fields import MasterConfig
from ..core.master.machine import MasterState
from ..core.master.termination import Status
from ..errors import FenceError, IntegrityError, ProtocolError, StoreError
from ..executors import is_fuzzer
from ..store.durability import Barrier
from ..store.querystore import QueryStore
from ..store.record import work_hash
from ..store.staging import read_running, staged_name
from ..store.wal import AlreadyDone, GroupCommit, NeedsReplay
from .backoff import Backoff
from .exhaustion import Exhaustion
from .rank_state import RankState
from .transport import DATA, FRONTIER, SENTINEL, PeerFailure, Transport


class MasterDriver:
    def __init__(self, ctx: RankState, transport: Transport, clock: Callable[[], float] = time.time):
        self.ctx = ctx
        self.transport = transport
        self.clock = clock  # the wall time every event carries
        self.gen = ctx.generation
        layout = ctx.membership.layout
        self.workers = layout.group_of(ctx.stable).workers
        self.masters = layout.masters
        self.limit = ctx.policy.max_message_bytes
        self.barrier = Barrier(ctx.state.root)
        self.locks = ctx.wal.lock_file()  # the record locks of this master's rounds, one round at a time
        self.store = QueryStore(ctx.state.query_store, ctx.stable, self.gen, ctx.state.modes.snapshot,
                                ctx.state.modes.snapshot_dir, deferred=True)
        self.state = MasterState(MasterConfig(
            me=ctx.stable, generation=self.gen, workers=tuple(self.workers), masters=tuple(self.masters),
            limit=self.limit, lease_s=ctx.policy.timeouts.lease_s, deadline=ctx.deadline,
            grace_s=ctx.policy.timeouts.shutdown_grace_s, peers=dict(enumerate(ctx.peers)),
            poison_deaths=ctx.policy.poison_deaths, executor=ctx.policy.executor, executor_sha=ctx.executor_sha,
            kinds={w: layout.kind_of(w) for w in self.workers if layout.kind_of(w)},
            fuzzers=frozenset(k for k in ctx.policy.kinds if is_fuzzer(k)), slice_s=ctx.policy.slice_s,
            keep=ctx.policy.keep, idle_kind=ctx.lent_kind, stop_after=ctx.policy.stop_after,
            order=ctx.policy.concolic_order, mix=ctx.policy.mix))
        self.exhaustion = Exhaustion(ctx, tuple(self.masters), transport, clock)
        self.peer_masters = [m for m in self.masters if m != ctx.stable]
        self._batch = contextlib.ExitStack()  # the open group commit's record locks
        self._transaction = contextlib.ExitStack()  # the open QueryStore transaction
        self.group: GroupCommit | None = None
        self._perform = {
            ev.Log: self._log, ev.Scan: self._scan, ev.Replay: self._replay, ev.ReadDeaths: self._read_deaths,
            ev.ReadMarkers: self._read_markers,
            ev.ListCorpus: self._list_corpus, ev.PollExhaustion: self._poll, ev.OpenBatch: self._open_batch,
            ev.Accept: self._accept, ev.WriteManifest: self._write_manifest, ev.Release: self._release,
            ev.Publish: self._publish, ev.Lease: self._lease, ev.Barrier: self._sync, ev.MarkDone: self._mark_done,
            ev.CloseBatch: self._close_batch, ev.Send: self._send, ev.Forward: self._forward,
            ev.Inject: self._inject, ev.Kill: self._kill, ev.Stop: self._stop,
        }
        self.stopped = False

    def feed(self, event: ev.Event) -> None:
        """Handle an event, perform its instructions, feed back the fact the last one found; an
        exception leaves no group commit or transaction open."""
        try:
            while event is not None:
                fact = None
                for instruction in self.state.handle(event):
                    fact = self._perform[type(instruction)](instruction)
                event = fact
        except BaseException:
            self._transaction.__exit__(*sys.exc_info())
            self._batch.__exit__(*sys.exc_info())
            self.group = None
            raise

    # -- the loop ------------------------------------------------------------------------------

    def prepare(self) -> None:
        self.feed(ev.Start(self.clock()))

    def run(self) -> str:
        """Serve until stopped, then let the last sends complete; why it stopped (``deadline``, or
        ``exhausted`` or ``budget``: ``core.master.termination``). A failure is counted, then raised."""
        backoff = Backoff(self.ctx.hot_rounds)
        try:
            while not self.stopped:
                if self.step():
                    backoff.reset()
                elif not self.stopped:
                    backoff.idle()
            while self.transport.busy:
                self.transport.check()
                self.transport.progress()
                backoff.idle()
        except PeerFailure:
            self.feed(ev.Failed(self.clock()))
            raise
        self.transport.close()
        return self.state.reason

    def step(self) -> bool:
        """One turn of the loop; whether anything arrived or a round of group commit ran."""
        self.transport.check()
        for w in self.workers:  # a failure raises; data, which nobody sends there, is refused
            self._receive(w, SENTINEL, f"failure sentinel of worker {w}")
        heard = False
        for w in self.workers:
            message = self._receive(w, DATA, f"data from worker {w}")
            if message is not None:
                heard = True
                self.feed(ev.FromWorker(self.clock(), w, message))
        for m in self.peer_masters:
            message = self._receive(m, FRONTIER, f"frontier from master {m}")
            if message is not None:
                heard = True
                self.feed(ev.FromMaster(self.clock(), m, message))
        self.transport.progress()
        rounds = self.state.rounds
        self.feed(ev.Tick(self.clock()))
        return heard or self.state.rounds != rounds

    def _receive(self, source: int, channel: str, where: str) -> bytes | None:
        try:
            return self.transport.receive(source, channel, where)
        except ProtocolError as exc:
            self.feed(ev.Refused(self.clock(), source, str(exc)))
            return None

    # -- instructions -----------------------------------------------------------------------------

    def _log(self, instruction: ev.Log) -> None:
        if instruction.key is ev.NOT_LIMITED:
            self.ctx.log.event(instruction.event, stimulus=instruction.stimulus, **instruction.fields)
        else:
            self.ctx.log.limited(instruction.event, instruction.key, stimulus=instruction.stimulus, **instruction.fields)

    def _scan(self, instruction: ev.Scan) -> ev.Scanned:
        records, problems = [], []
        for work, record, problem in self.ctx.wal.scan():
            if problem is not None:
                problems.append((work, str(problem)))
            else:
                records.append(record)
        return ev.Scanned(self.clock(), tuple(records), tuple(problems))

    def _replay(self, instruction: ev.Replay) -> ev.Replayed:
        """Replay one committing record; an integrity error leaves it committing (never overwritten)."""
        try:
            done = self.ctx.wal.replay_commit_once(instruction.work, self.state.committer)
        except IntegrityError as exc:
            return ev.Replayed(self.clock(), instruction.work, None, str(exc))
        return ev.Replayed(self.clock(), instruction.work, done)

    def _list_corpus(self, instruction: ev.ListCorpus) -> ev.Listed:
        corpus = self.ctx.corpus
        return ev.Listed(self.clock(), tuple((name, corpus.is_seed(name)) for name in corpus.names()))

    def _poll(self, instruction: ev.PollExhaustion) -> ev.Polled:
        status = Status(instruction.idle, instruction.sent, instruction.received, instruction.satisfied)
        return ev.Polled(self.clock(), self.exhaustion.poll(status, instruction.now, instruction.stimulus))

    def _open_batch(self, instruction: ev.OpenBatch) -> None:
        self.group = self._batch.enter_context(self.ctx.wal.batch(self.barrier, self.locks))
        self._transaction.enter_context(self.store.transaction())

    def _close_batch(self, instruction: ev.CloseBatch) -> None:
        self._transaction.close()
        self._batch.close()
        self.group = None

    def _sync(self, instruction: ev.Barrier) -> ev.Synced:
        self._transaction.close()
        self.barrier.sync()
        return ev.Synced(self.clock(), self.barrier.syncs)

    def _accept(self, instruction: ev.Accept) -> ev.Accepted:
        try:
            self.store.accept(instruction.generation, instruction.shard, instruction.token, instruction.work,
                              instruction.worker)
        except (IntegrityError, FenceError, ProtocolError) as exc:
            return ev.Accepted(self.clock(), str(exc))
        return ev.Accepted(self.clock())

    def _write_manifest(self, instruction: ev.WriteManifest) -> ev.Committing:
        manifest = instruction.manifest
        objects = [{**o, "staging": staged_name(manifest["worker"], manifest["lease"], o["sha256"])}
                   for o in manifest["objects"]]
        try:
            self.group.begin(instruction.work, instruction.lease, {**manifest, "objects": objects})  # checks every staged object
        except (IntegrityError, FenceError, ProtocolError) as exc:
            return ev.Committing(self.clock(), str(exc))
        return ev.Committing(self.clock())

    def _release(self, instruction: ev.Release) -> None:
        self.store.release(instruction.token)

    def _publish(self, instruction: ev.Publish) -> ev.Published:
        try:
            claimed = self.group.publish(instruction.work)
        except IntegrityError as exc:
            return ev.Published(self.clock(), instruction.work, None, str(exc))
        return ev.Published(self.clock(), instruction.work, claimed)

    def _lease(self, instruction: ev.Lease) -> ev.Leased:
        ctx, worker, input_hash = self.ctx, instruction.worker, instruction.input_hash
        executor_sha = ctx.executor_sha_of(instruction.kind or ctx.policy.executor)
        work = work_hash(input_hash, executor_sha)
        token = self.store.issue(work, input_hash, worker)
        lease = {"generation": self.gen, "master": ctx.stable, "shard": self.store.shard, "token": token, "worker": worker}
        try:
            self.group.lease(input_hash, executor_sha, lease)
        except AlreadyDone:
            outcome, error = "done", None
        except NeedsReplay:
            outcome, error = "committing", None
        except StoreError as exc:
            outcome, error = "retry", str(exc)
        except (FenceError, IntegrityError) as exc:
            outcome, error = "refused", str(exc)
        else:
            outcome, error = "leased", None
        return ev.Leased(self.clock(), outcome, work, token, self.store.shard, lease, error)

    def _mark_done(self, instruction: ev.MarkDone) -> ev.Done:
        return ev.Done(self.clock(), self.group.finish(instruction.work, instruction.claimed, self.state.committer))

    def _send(self, instruction: ev.Send) -> None:
        self.transport.send(instruction.worker, DATA, instruction.payload, instruction.what)

    def _forward(self, instruction: ev.Forward) -> None:
        self.transport.send(instruction.master, FRONTIER, instruction.payload, f"FRONTIER to {instruction.master}")

    def _inject(self, instruction: ev.Inject) -> None:
        self.ctx.injector.maybe(instruction.phase, self.gen, stimulus=instruction.stimulus)

    def _stop(self, instruction: ev.Stop) -> None:
        self.stopped = True

    def _kill(self, instruction: ev.Kill) -> None:
        """ULFM only detects processes that die; a stopped one would hold its lease, and block the
        next shrink, forever. Fencing turns a hang into an ordinary failure that recovery handles."""
        try:
            os.kill(instruction.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _read_deaths(self, instruction: ev.ReadDeaths) -> ev.DeathsRead:
        return ev.DeathsRead(self.clock(), tuple(self.ctx.snapshots.receipts()))

    def _read_markers(self, instruction: ev.ReadMarkers) -> ev.MarkersRead:
        root = self.ctx.state.root
        return ev.MarkersRead(self.clock(), tuple(((worker, generation), read_running(root, worker, generation))
                                                  for worker, generation in instruction.pairs))

    def close(self) -> None:
        self.store.close()
        self.barrier.close()
        self.locks.close()
        self.ctx.wal.staged.close()  # staged files kept for a publication that a later generation replays
