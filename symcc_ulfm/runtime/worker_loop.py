"""The worker loop: READY, then WORK -> run (or fuzz a slice) -> stage candidates -> RESULT, until STOP.

One generation of one worker, over any ``runtime.transport.Transport`` (``mpi.channels`` under
``mpiexec``, ``runtime.loopback`` in the protocol tests), like the master's driver.

The master keeps up to ``core.master.rounds.PIPELINE`` leases per worker, so the next WORK is usually queued
here before the RESULT of the current one leaves: the worker never idles through the master's
commit round. Leases run in the order they were sent.

A worker accepts only WORK of its current generation from its own master, reads the input by
hash from the corpus (verified), writes candidates into its own staging directory only, and
returns every candidate's SHA-256, length and coverage with the full fence, plus the findings:
every execution whose outcome was not ``ok`` (``executors.outcome``), with the SHA-256 of the
input that produced it (the lease's input, or a candidate staged with this result). Target
code runs in the executor's sandbox, never in this process; the lease being executed is noted
in the staging directory first (``running-<g>``), for ``core.master.poison`` should this rank die.
Past the deadline no lease is started: the queued ones go back to the master in a ``RETURN``.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable

from ..core import envelope
from ..core.budget import worker_give_up
from ..core.finding import MAX_PER_RESULT
from ..core.limits import MAX_OBJECT_BYTES
from ..core.master.report import MAX_COUNT, check_stats
from ..core.schedule import Phase
from ..core.slices import is_descriptor, slice_hash
from ..errors import IntegrityError, PolicyError, ProtocolError, SymccUlfmError
from ..executors import Fuzzer, Target
from ..store.durability import Barrier
from ..store.runlog import Event
from ..store.staging import WorkerStaging
from .adversary import adversary_mode, misbehave
from .backoff import Backoff
from .process_cpu import tree_cpu_seconds
from .rank_state import HeldExecutor, RankState
from .transport import DATA, Transport

MAX_LOGGED_INPUTS = 256  # of one OFFERED line


class WorkerLoop:
    def __init__(self, ctx: RankState, transport: Transport, clock: Callable[[], float] = time.time):
        self.ctx = ctx
        self.transport = transport
        self.clock = clock  # the wall time the give-up bound is checked against
        self.gen = ctx.generation
        self.limit = ctx.policy.max_message_bytes
        self.barrier = Barrier(ctx.state.root)
        self.staging = WorkerStaging(ctx.state.root, ctx.stable, ctx.state.modes.corpus, ctx.state.modes.snapshot_dir,
                                     self.barrier)
        self.master = ctx.membership.layout.master_of(ctx.stable)
        # the master's syncfs covers staged files only when it runs on the same host (kernel)
        self.sync_before_result = ctx.peers[self.master]["host"] != ctx.peers[ctx.stable]["host"]
        self.executed = 0
        ctx.held(ctx.kind)  # the rank's own executor (its sandbox), started now and kept across generations
        # the CPU this rank's processes had used when its last lease ended: measured in campaigns with worker
        # kinds (CPU per kind), where a lease is seconds long; not where the cost of one /proc pass per lease
        # (2 ms among 80 processes) would show in a short lease's overhead (the scaling studies')
        self.cpu_mark = tree_cpu_seconds() if ctx.policy.worker_kinds else None
        self.adversary = adversary_mode(ctx.stable) if self.gen == 0 else None
        self.give_up = worker_give_up(ctx.deadline, ctx.policy.timeouts)
        self.queue: deque[dict] = deque()  # leased WORK in the order the master sent it
        self.stopped = False
        self.reason = "no STOP from master in time"

    def start(self) -> None:
        """Tell the master this worker is ready."""
        ready = envelope.encode("READY", self.limit, generation=self.gen, worker=self.ctx.stable)
        self.transport.send(self.master, DATA, ready, "READY")

    def step(self) -> bool:
        """One turn: take what arrived, run the next lease; whether anything happened. Sets
        :attr:`stopped` (and :attr:`reason`) at STOP, or once no STOP came in time."""
        ctx, transport = self.ctx, self.transport
        transport.check()
        heard = False
        while (message := self._next_message()) is not None:  # take everything that arrived
            heard = True
            if message["type"] == "STOP":
                ctx.log.event("worker-stop", executed=self.executed, reason=message["reason"],
                              unstarted=len(self.queue))
                self.reason, self.stopped = message["reason"], True
                return True
            self.queue.append(message)
        transport.progress()
        if self.queue and self.clock() >= ctx.deadline:
            self._return_unstarted()
            return True
        if self.queue:
            work = self.queue.popleft()
            ctx.injector.maybe(Phase.WORK, self.gen)
            result = self._execute(work)
            if self.sync_before_result:
                self.barrier.sync()
            planned = (misbehave(self.adversary, self.executed, result, ctx.state.root, self.limit)
                       if self.adversary else None)
            for channel, payload in planned or [(DATA, result)]:
                transport.send(self.master, channel, payload, "RESULT")
            return True
        if self.clock() > self.give_up:
            ctx.log.event("worker-stop", executed=self.executed, reason=self.reason)
            self.stopped = True
            return True
        return heard

    def _return_unstarted(self) -> None:
        """Past the deadline, hand every lease not started back to the master (``RETURN``): it
        releases them instead of waiting for them, so the campaign ends about one execution after
        its deadline rather than a whole pipeline of them."""
        tokens = [work["lease"] for work in self.queue]
        self.queue.clear()
        message = envelope.encode("RETURN", self.limit, generation=self.gen, worker=self.ctx.stable, leases=tokens)
        self.transport.send(self.master, DATA, message, "RETURN")
        self.ctx.log.event("leases-returned", count=len(tokens))

    def finish(self) -> str:
        """Let the last sends complete (within the give-up bound), close; why the worker stopped."""
        backoff = Backoff(self.ctx.hot_rounds)
        while self.transport.busy and self.clock() < self.give_up:
            self.transport.check()
            self.transport.progress()
            backoff.idle()
        self.transport.close()
        self.staging.close()
        self.barrier.close()
        return self.reason

    def run(self) -> str:
        """Serve leases until STOP; the reason this worker stopped (its master's: ``deadline``,
        ``exhausted`` or ``budget``; or that no STOP came in time)."""
        backoff = Backoff(self.ctx.hot_rounds)
        self.start()
        while not self.stopped:
            if self.step():
                backoff.reset()
            else:
                backoff.idle()
        return self.finish()

    def _next_message(self) -> dict | None:
        """The next acceptable message from the master (WORK or STOP); rejected ones are logged."""
        ctx = self.ctx
        while True:
            try:
                raw = self.transport.receive(self.master, DATA, f"data from master {self.master}")
                if raw is None:
                    return None
                message = envelope.decode(raw, self.limit)
            except ProtocolError as exc:
                ctx.log.limited("message-rejected", self.master, source=self.master, reason=str(exc))
                continue
            if message["type"] == "STOP" or (
                message["type"] == "WORK" and message["generation"] == self.gen and message["worker"] == ctx.stable
            ):
                return message
            ctx.log.limited("message-rejected", self.master, source=self.master,
                          reason=f"{message['type']} of generation {message['generation']} is not my work")

    def _execute(self, work: dict) -> bytes:
        ctx = self.ctx
        fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
        started = time.perf_counter()
        candidates: list[dict] = []
        findings: list[dict] = []
        stats: dict[str, float] = {}
        tried: list[int] = []  # what the run added to the campaign's record of tried branches (edge order)
        error = None
        try:
            held = self._held_for(work)
        except PolicyError as exc:  # a slice of a kind this worker is not lent to
            held, error = None, _error_text(exc)
        if held is not None:
            ctx.check_executor(held)
            try:
                data = self._input(work, held)
                deaths = _deaths(held.executor)
                self.staging.mark_running(self.gen, work["lease"])
                try:
                    candidates, findings, stats, tried = self._analyze(work, data, held.executor)
                finally:
                    self.staging.mark_running(self.gen, None)
                stats["sandbox_deaths"] = _deaths(held.executor) - deaths
            except (IntegrityError, SymccUlfmError) as exc:
                error = _error_text(exc)
        stats["seconds"] = time.perf_counter() - started
        if self.cpu_mark is not None:
            self._count_cpu(stats)
        self.executed += 1
        try:
            return envelope.encode("RESULT", self.limit, **fence, candidates=candidates, findings=findings,
                                   stats=stats, error=error, tried=tried)
        except ProtocolError:
            ctx.log.event("result-truncated", candidates=len(candidates), reason="RESULT over the message limit")
        while True:
            stats["truncated"] = 1
            for c in candidates:
                c["coverage"] = []
            try:
                return envelope.encode("RESULT", self.limit, **fence, candidates=candidates, findings=findings,
                                       stats=stats, error=error)
            except ProtocolError:
                keep = len(candidates) // 2
                self.staging.discard(work["lease"], [c["sha256"] for c in candidates[keep:]])  # no RESULT names them
                candidates = candidates[:keep]
                named = {c["sha256"] for c in candidates} | {work["input_hash"]}
                findings = [f for f in findings if f["sha256"] in named]

    def _count_cpu(self, stats: dict[str, float]) -> None:
        """``cpu_seconds``, in a campaign with worker kinds: the CPU this rank and all it started
        used since its previous lease ended (or since its executor was up in this generation), so a
        fuzzer that runs on between slices is counted with the next slice and a worker's leases add
        up to all of its CPU time but that after its last one (``runtime.process_cpu``). An amount
        the master would refuse (more than a lease may take, ``core.master.report.check_stats``: a
        long wait, or many processes at once) is left out rather than lose the result, and logged."""
        now = tree_cpu_seconds()
        spent, self.cpu_mark = round(max(0.0, now - self.cpu_mark), 3), now
        try:
            check_stats({"cpu_seconds": spent}, self.ctx.policy.timeouts.lease_s)
        except ProtocolError as exc:
            self.ctx.log.limited("cpu-not-reported", "bound", reason=str(exc))
            return
        stats["cpu_seconds"] = spent

    def _held_for(self, work: dict) -> HeldExecutor:
        """The executor of the work's kind: the worker's own, or for a slice of the idle kind given
        to this analysis worker, the fuzzer it is lent to; before it analyzes, that fuzzer is paused."""
        hint = work["hint"]
        kind = hint["kind"] if is_descriptor(hint) else self.ctx.kind
        if kind == self.ctx.kind:
            self.ctx.pause_lent()
        return self.ctx.held(kind)

    def _input(self, work: dict, held: HeldExecutor) -> bytes:
        """The lease's input, read back from the corpus and verified; a fuzzer's slice has none
        (its hint is the slice's descriptor, which its input hash names)."""
        if is_descriptor(work["hint"]):
            if slice_hash(work["hint"]) != work["input_hash"]:
                raise IntegrityError(f"slice descriptor does not hash to the lease's input {work['input_hash'][:12]}")
            if isinstance(held.executor, Fuzzer):
                self._offer_corpus(held)
            return b""
        data = self.ctx.corpus.read(work["input_hash"])
        if self.executed == 0:
            self.ctx.log.event("corpus-read-verified", sha256=work["input_hash"], length=len(data))
        if self.ctx.policy.worker_kinds:  # for the hand-off times between kinds (evidence.timeline)
            self.ctx.log.event(Event.LEASE_START, input_hash=work["input_hash"])
        return data

    def _offer_corpus(self, held: HeldExecutor) -> None:
        """Before a fuzzer's slice: what the others published since the last one, read back and
        verified, shortest first (``executors.base.Fuzzer.offer``)."""
        fresh = [name for name in self.ctx.corpus.names() if name not in held.offered]
        held.offered.update(fresh)
        inputs = sorted((self.ctx.corpus.read(name) for name in fresh), key=len)
        if inputs:
            held.executor.offer(inputs)
            self.ctx.log.event(Event.OFFERED, count=len(fresh), inputs=fresh[:MAX_LOGGED_INPUTS], kind=held.kind)

    def _analyze(self, work: dict, data: bytes, executor: Target) -> tuple[list[dict], list[dict], dict[str, float],
                                                                           list[int]]:
        """Run the input (a fuzzer: fuzz the slice), stage and measure its distinct children;
        (candidates, findings, stats, the ids the run added to the campaign's record of tried
        branches). In edge order an analysis is first handed the ids of that record the WORK
        brought (``executors.base.Executor.learn``); a RESULT carries at most
        ``core.envelope.MAX_TRIED_IDS`` of what it added (``core.master.branches``)."""
        lease = work["lease"]
        hint = work["hint"]
        if not isinstance(executor, Fuzzer) and self.ctx.policy.concolic_order == "edge":
            executor.learn(work.get("tried", []))
        result = executor.fuzz(hint) if isinstance(executor, Fuzzer) else executor.run(data, hint)
        if isinstance(executor, Fuzzer) and isinstance(result.notes.get("settings"), dict):  # its process started
            self.ctx.log.event(Event.FUZZER_STARTED, kind=hint["kind"], started=result.notes.get("started"),
                               settings=result.notes["settings"])
        hints = result.hints or [None] * len(result.candidates)
        reaches = result.reaches or [()] * len(result.candidates)
        staged: dict[str, tuple[bytes, dict | None]] = {}
        solved: dict[str, set[int]] = {}  # branch directions each candidate was solved to take
        for child, hint, reached in zip(result.candidates, hints, reaches, strict=True):
            if len(child) > MAX_OBJECT_BYTES:  # no reader of the corpus would take it
                self.ctx.log.limited("candidate-dropped", "size", length=len(child), limit=MAX_OBJECT_BYTES)
                continue
            sha256, _ = self.staging.stage(lease, child)
            staged.setdefault(sha256, (child, hint))
            solved.setdefault(sha256, set()).update(reached)
        # coverage runs stop well before the master's lease timeout would fence this worker, and at
        # the deadline (a child not measured by then is kept with the directions it was solved for)
        budget = min(self.ctx.policy.timeouts.lease_s / 2 - result.seconds, self.ctx.deadline - self.clock())
        measured = executor.measure_many([child for child, _ in staged.values()], budget_s=max(0.0, budget))
        candidates = []
        reports = {}
        for (sha256, (child, hint)), m in zip(staged.items(), measured, strict=True):
            candidates.append({"sha256": sha256, "length": len(child), "hint": hint,
                               "coverage": sorted((m.coverage if m is not None else set()) | solved[sha256])})
            if m is not None and m.outcome.is_finding:
                reports.setdefault((m.outcome.kind, m.outcome.signature, sha256), m.outcome.report(sha256))
        for found in result.findings:
            sha256 = hashlib.sha256(found.data).hexdigest()
            if sha256 != work["input_hash"] and sha256 not in staged:  # e.g. an intermediate the engine ran
                self.staging.stage(lease, found.data)
                staged[sha256] = (found.data, None)
                candidates.append({"sha256": sha256, "length": len(found.data), "hint": None, "coverage": []})
            reports.setdefault((found.outcome.kind, found.outcome.signature, sha256), found.outcome.report(sha256))
        stats = {
            "generated": len(result.candidates),
            "executions": result.executions + sum(m is not None for m in measured),
            "solver_queries": result.solver_queries,
            "solver_seconds": result.solver_seconds,
            "run_seconds": result.seconds,
        }
        map_size = result.notes.get("map_size")  # a kind that measures with a coverage map says how large
        if type(map_size) is int and 0 < map_size <= MAX_COUNT:
            stats["map_size"] = map_size
        return candidates, list(reports.values())[:MAX_PER_RESULT], stats, result.tried[:envelope.MAX_TRIED_IDS]


def _error_text(exc: Exception) -> str:
    """The RESULT's ``error``: the exception's type and message, cut to what the envelope takes
    (an executor's message may quote a target's output at any length)."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= envelope.MAX_TEXT else text[:envelope.MAX_TEXT - 3] + "..."


def _deaths(executor: Target) -> int:
    return getattr(executor, "deaths", 0)
