"""The worker loop: READY, then WORK -> run the executor -> stage candidates -> RESULT, until STOP.

The master keeps up to ``master.PIPELINE`` leases per worker, so the next WORK is usually queued
here before the RESULT of the current one leaves: the worker never idles through the master's
commit round. Leases run in the order they were sent.

A worker accepts only WORK of its current generation from its own master, reads the input by
hash from the corpus (verified), writes candidates into its own staging directory only, and
returns every candidate's SHA-256, length and coverage with the full fence.
"""

from __future__ import annotations

import time
from collections import deque

from ..core import envelope
from ..errors import IntegrityError, ProtocolError, SymccUlfmError
from ..store.atomic import Barrier
from ..store.staging import WorkerStaging
from .adversary import is_adversary, misbehave
from .context import RankContext
from .transport import TAG_DATA, Backoff, Mailbox, Outbox


class WorkerLoop:
    def __init__(self, ctx: RankContext):
        self.ctx = ctx
        self.gen = ctx.generation
        self.limit = ctx.policy.max_message_bytes
        self.barrier = Barrier(ctx.state.root)
        self.staging = WorkerStaging(ctx.state.root, ctx.stable, ctx.state.modes.corpus, ctx.state.modes.snapshot_dir,
                                     self.barrier)
        self.master = ctx.membership.layout.master_of(ctx.stable)
        # the master's syncfs covers staged files only when it runs on the same host (kernel)
        self.sync_before_result = ctx.peers[self.master]["host"] != ctx.peers[ctx.stable]["host"]
        self.executed = 0
        self.adversary = is_adversary(ctx.stable) and self.gen == 0

    def run(self) -> None:
        ctx = self.ctx
        inbox = Mailbox(ctx.group_comm, 0, TAG_DATA, self.limit)
        outbox = Outbox()
        outbox.send(ctx.group_comm, 0, TAG_DATA, envelope.encode("READY", self.limit, generation=self.gen,
                                                                 worker=ctx.stable), "READY")
        backoff = Backoff()
        give_up = ctx.deadline + ctx.policy.timeouts.shutdown_grace_s + ctx.policy.timeouts.recovery_step_s
        queue: deque[dict] = deque()  # leased WORK in the order the master sent it
        stopped = False
        while not stopped:
            ctx.check_revocation()
            while (message := self._next_message(inbox)) is not None:  # take everything that arrived
                backoff.reset()
                if message["type"] == "STOP":
                    ctx.log.event("worker-stop", executed=self.executed, reason=message["reason"],
                                  unstarted=len(queue))
                    stopped = True
                    break
                queue.append(message)
            outbox.progress()
            if queue and not stopped:
                work = queue.popleft()
                ctx.injector.maybe("work", self.gen)
                result = self._execute(work)
                if self.sync_before_result:
                    self.barrier.sync()
                planned = misbehave(self.executed, result, ctx.state.root, self.limit) if self.adversary else None
                for tag, payload in planned or [(TAG_DATA, result)]:
                    outbox.send(ctx.group_comm, 0, tag, payload, "RESULT")
                continue
            if not stopped and time.time() > give_up:
                ctx.log.event("worker-stop", executed=self.executed, reason="no STOP from master in time")
                break
            if not stopped:
                backoff.idle()
        while outbox.busy and time.time() < give_up:
            ctx.check_revocation()
            outbox.progress()
            backoff.idle()
        inbox.cancel()
        self.staging.close()
        self.barrier.close()

    def _next_message(self, inbox: Mailbox) -> dict | None:
        """The next acceptable message from the master (WORK or STOP); rejected ones are logged."""
        ctx = self.ctx
        while True:
            try:
                raw = inbox.test(f"data from master {self.master}")
                if raw is None:
                    return None
                message = envelope.decode(raw, self.limit)
            except ProtocolError as exc:
                ctx.log.event("message-rejected", source=self.master, reason=str(exc))
                continue
            if message["type"] == "STOP" or (
                message["type"] == "WORK" and message["generation"] == self.gen and message["worker"] == ctx.stable
            ):
                return message
            ctx.log.event("message-rejected", source=self.master,
                          reason=f"{message['type']} of generation {message['generation']} is not my work")

    def _execute(self, work: dict) -> bytes:
        ctx = self.ctx
        fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
        started = time.perf_counter()
        candidates: list[dict] = []
        stats: dict[str, float] = {}
        error = None
        try:
            data = ctx.corpus.read(work["input_hash"])
            if self.executed == 0:
                ctx.log.event("corpus-read-verified", sha256=work["input_hash"], length=len(data))
            outcome = ctx.executor.run(data, work["hint"])
            hints = outcome.hints or [None] * len(outcome.candidates)
            seen = set()
            measure_until = time.perf_counter() + ctx.policy.timeouts.lease_s / 2
            for child, hint in zip(outcome.candidates, hints, strict=True):
                sha256, _ = self.staging.stage(work["lease"], child)
                if sha256 in seen:
                    continue
                seen.add(sha256)
                # Coverage runs stop well before the master's lease timeout would fence this worker.
                coverage = sorted(ctx.executor.coverage(child)) if time.perf_counter() < measure_until else []
                candidates.append({"sha256": sha256, "length": len(child), "coverage": coverage, "hint": hint})
            stats = {
                "generated": len(outcome.candidates),
                "executions": outcome.executions,
                "solver_queries": outcome.solver_queries,
                "solver_seconds": outcome.solver_seconds,
                "run_seconds": outcome.seconds,
            }
        except (IntegrityError, SymccUlfmError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        stats["seconds"] = time.perf_counter() - started
        self.executed += 1
        try:
            return envelope.encode("RESULT", self.limit, **fence, candidates=candidates, stats=stats, error=error)
        except ProtocolError:
            ctx.log.event("result-truncated", candidates=len(candidates), reason="RESULT over the message limit")
        while True:
            stats["truncated"] = 1
            for c in candidates:
                c["coverage"] = []
            try:
                return envelope.encode("RESULT", self.limit, **fence, candidates=candidates, stats=stats, error=error)
            except ProtocolError:
                keep = len(candidates) // 2
                self.staging.discard(work["lease"], [c["sha256"] for c in candidates[keep:]])  # no RESULT names them
                candidates = candidates[:keep]
