"""The campaign runtime on every rank: start-up, generations, recovery, shutdown.

``run_campaign(state_dir)`` is what every rank runs, under ``mpiexec`` (via
``python -m symcc_ulfm.mpi.rank``) or on every ipyparallel engine at once. It returns a plain
dict (this rank's outcome) and raises only :class:`SymccUlfmError` subclasses.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from pathlib import Path

from mpi4py import MPI

from ..core import envelope
from ..core.budget import consumed_after, final_agreement_s
from ..core.canonical import canonical_json, sha256_hex
from ..core.master.termination import BUDGET, EXHAUSTED
from ..core.membership import initial_membership, resume
from ..core.modes import modes_from_env
from ..core.schedule import Phase
from ..errors import CapabilityError, CheckFailed, ProtocolError, SymccUlfmError
from ..runtime.backoff import Backoff, hot_rounds_for
from ..runtime.master_driver import MasterDriver
from ..runtime.worker_loop import WorkerLoop
from ..store.atomic import write_replace
from ..store.heartbeat import Heartbeat, last_sign_of_life
from ..store.joblock import RanksLock
from ..store.paths import StateDir
from ..store.policy_file import read_policy
from ..store.runlog import Event
from ..store.trust import check_layout
from .capability import compare, ft_enabled, probe, require_ulfm
from .channels import MpiTransport
from .context import RankContext
from .ft import ops_for
from .recovery import recover
from .requests import (
    TAG_CONTROL,
    FailureDetected,
    Mailbox,
    WaitTimeout,
    allgather_blobs,
    wait_request,
    warm_up,
)
from .watchdog import bounded

OUTCOME_FORMAT = "symcc-ulfm-outcome/1"
# outcome.json's status by why the last generation ended; a campaign with no group left is
# "stopped-too-few-members"
OUTCOME_STATUS = {"deadline": "deadline-reached", EXHAUSTED: "exhausted", BUDGET: "budget-reached"}
DEFAULT_STARTUP_S = 60.0
_BLOB_WIDTH = 8192


def start(state_root: Path, comm: MPI.Comm) -> RankContext:
    world = comm.Dup()
    world.Set_errhandler(MPI.ERRORS_RETURN)
    stable = world.Get_rank()
    ctx, early = _open(Path(state_root), world, stable)
    try:
        return _start(ctx, world, stable, early)
    except BaseException:
        if ctx is not None:  # an engine that lives on must not keep the job looking alive
            ctx.ranks_lock.release()
        raise


def _start(ctx: RankContext | None, world: MPI.Comm, stable: int, early: SymccUlfmError | None) -> RankContext:
    if ctx is not None:
        ctx.world_group = world.Get_group()
    # Every rank learns every rank's start-up problem, so they all fail closed together
    # instead of waiting for a rank that already gave up.
    log = ctx.log if ctx else None
    mine = f"{type(early).__name__}: {early}"[:4000] if early else ""
    reports = _exchange(world, mine.encode(), "start-up problem exchange", DEFAULT_STARTUP_S, log)
    others = [f"rank {r}: {b.decode()}" for r, b in enumerate(reports) if b]
    if others:
        _leave_together(world, DEFAULT_STARTUP_S, log)
    if early is not None:
        raise early
    if others:
        raise CapabilityError("another rank could not start: " + "; ".join(others))
    policy = ctx.policy
    policy_sha = sha256_hex(policy.to_bytes())
    host = socket.gethostname()
    ctx.log.event(Event.STARTUP, host=host, pid=os.getpid(), ulfm=policy.ulfm)

    facts = probe() if policy.ulfm else {"ulfm": False}
    problem = None
    executor_sha = deadlines_sha = None
    try:
        if policy.ulfm:
            require_ulfm(facts, stable)
        executor_sha = ctx.executor_sha
        deadlines_sha = ctx.deadlines.sha256
    except SymccUlfmError as exc:
        problem = f"{type(exc).__name__}: {exc}"
    blob = canonical_json(
        {"facts": facts, "policy": policy_sha, "executor": executor_sha, "deadlines": deadlines_sha, "host": host,
         "pid": os.getpid(), "opened_at": ctx.opened_at, "problem": problem}
    )
    exchanged = [json.loads(b) for b in _exchange(world, blob, "startup exchange", policy.timeouts.startup_s, ctx.log)]
    problems = [f"rank {r}: {e['problem']}" for r, e in enumerate(exchanged) if e["problem"]]
    if problems:
        _leave_together(world, policy.timeouts.startup_s, ctx.log)
        raise CapabilityError("; ".join(problems))
    compare([e["facts"] for e in exchanged], [e["policy"] for e in exchanged])
    if len({e["executor"] for e in exchanged}) != 1:
        raise CapabilityError(f"ranks disagree on the executor identity: {[e['executor'] for e in exchanged]}")
    if len({e["deadlines"] for e in exchanged}) != 1:
        raise CapabilityError(f"ranks read different deadline records: {[e['deadlines'] for e in exchanged]}")
    ctx.peers = [{"host": e["host"], "pid": e["pid"]} for e in exchanged]
    ctx.hot_rounds = hot_rounds_for(sum(e["host"] == host for e in exchanged), os.cpu_count() or 1)
    warm_up(world, "warm-up", policy.timeouts.startup_s, ctx.hot_rounds)
    ctx.log.event("capability", facts=facts, executor_sha256=executor_sha, ranks=world.Get_size())

    if world.Get_size() != policy.ranks:
        raise CapabilityError(f"the job has {world.Get_size()} ranks, the policy {policy.ranks}")
    if stable == 0:
        hosts = tuple(e["host"] for e in exchanged)
        if not ctx.snapshots.snapshot_path(0).exists():  # the seeds were published when the state was prepared
            membership = initial_membership(
                policy.ranks, policy.warm_spares, policy.workers_per_master, hosts, policy_sha, time.time(),
                policy.slots,
            )
            ctx.snapshots.write_generation0(membership)
        else:
            open_next_epoch(ctx, hosts, job_started=min(e["opened_at"] for e in exchanged))
    with bounded("generation 0 agreement", policy.timeouts.startup_s, ctx.log):
        if ctx.ops.agree(world, 1, "generation 0 agree") != 1:
            raise CapabilityError("generation 0 agreement failed")
    membership = ctx.snapshots.current()
    if membership.policy_sha256 != policy_sha:
        raise CapabilityError("the state directory belongs to a campaign with another policy")
    ctx.set_generation(membership)
    return ctx


def _open(state_root: Path, world: MPI.Comm, stable: int) -> tuple[RankContext | None, SymccUlfmError | None]:
    """This rank's context, holding its share of ``ranks.lock`` (``store.joblock``) before it
    writes anything, in a state directory whose layout holds no link or special file."""
    lock = None
    try:
        modes = modes_from_env(os.environ)
        policy, _ = read_policy(StateDir(state_root, modes))  # only reads: a state this rank cannot read fails here, named
        lock = RanksLock(state_root, modes.snapshot, DEFAULT_STARTUP_S)
        check_layout(state_root)
        ctx = RankContext.open(state_root, modes, policy, stable, world, ops_for(policy.ulfm))
        ctx.ranks_lock = lock
        return ctx, None
    except SymccUlfmError as exc:
        if lock is not None:
            lock.release()
        return None, exc


def _exchange(world: MPI.Comm, blob: bytes, where: str, seconds: float, log) -> list[bytes]:
    """One start-up allgather under a watchdog; a rank that dies meanwhile fails the start-up."""
    with bounded(where, seconds, log):
        try:
            return allgather_blobs(world, blob, _BLOB_WIDTH, where)
        except FailureDetected as exc:
            raise CapabilityError(f"a rank failed during the {where} ({exc}); nothing was started") from None


def _leave_together(world: MPI.Comm, seconds: float, log) -> None:
    """Synchronise before every rank leaves because an exchange showed the job cannot start.

    A rank that left as soon as its own allgather completed could strand a peer still waiting
    for that rank's last message: the peer then failed with a process-failure error instead of
    the reason, or waited until its watchdog. A fault-tolerant agreement (a barrier without
    ULFM, where the first exit ends the job anyway) returns only once every live rank has
    finished the exchange; its own outcome does not matter, since all ranks leave.
    """
    with bounded("start-up failure agreement", seconds, log), contextlib.suppress(MPI.Exception):
        if ft_enabled():
            world.Agree(0)
        else:
            world.Barrier()


def open_next_epoch(ctx: RankContext, hosts: tuple[str, ...], job_started: float) -> None:
    """A new job on an existing state directory: commit a resume receipt (``core.membership``).

    The budget the lost job used runs from its epoch's start to its last sign of life: its last
    log line or heartbeat (``store.heartbeat``), whichever is later, and at most the deadline in
    force for it (``core.deadlines``); lines of this job, all written after ``job_started``, do
    not count, and its heartbeats start after this.
    """
    previous = ctx.snapshots.current()
    last = last_sign_of_life(ctx.state.logs, before=job_started) or previous.epoch_started_at
    consumed = consumed_after(previous.consumed_s, previous.epoch_started_at, last,
                              ctx.deadlines.of_epoch(previous.epoch))
    nxt, receipt = resume(previous, time.time(), consumed, hosts)
    ctx.snapshots.commit(nxt, receipt)
    deadline_s = ctx.deadlines.of_epoch(nxt.epoch)
    ctx.log.event("resume", from_generation=previous.generation, epoch=nxt.epoch, consumed_s=consumed,
                  deadline_s=deadline_s, remaining_s=deadline_s - consumed)


def start_generation(ctx: RankContext) -> str:
    """Re-split the group and master communicators and agree before any work (DESIGN.md §6.7)."""
    mark = time.monotonic()
    membership = ctx.membership
    role = membership.role_of(ctx.stable)
    group = membership.layout.group_of(ctx.stable)
    ok = 1
    with bounded(f"generation {membership.generation} split", ctx.policy.timeouts.recovery_step_s, ctx.log):
        try:
            world = ctx.global_comm
            ctx.group_comm = world.Split(group.index if group else MPI.UNDEFINED, ctx.stable)
            ctx.master_comm = world.Split(0 if role == "master" else MPI.UNDEFINED, ctx.stable)
            ctx.final_comm = world.Dup()
            for comm in (ctx.group_comm, ctx.master_comm, ctx.final_comm):
                if comm != MPI.COMM_NULL:
                    comm.Set_errhandler(MPI.ERRORS_RETURN)
        except MPI.Exception as exc:
            ctx.log.event("split-failed", error_class=exc.Get_error_class())
            ok = 0
        if ctx.ops.agree(ctx.global_comm, ok, "generation agree") != 1:
            raise FailureDetected("generation agree: not every rank completed the re-split", 0)
    ctx.post_revocation_sentinel()
    ctx.clear_failed_scratch()
    ctx.log.event(
        Event.GENERATION_START, role=role, seconds=time.monotonic() - mark, layout_sha256=membership.layout.sha256,
        active=list(membership.active), spares=list(membership.spares), masters=list(membership.layout.masters),
        kind=ctx.kind if role == "worker" else None,
    )
    return role


def final_agreement(ctx: RankContext) -> None:
    """Every rank's last collective of a generation; spares post it as soon as the generation starts."""
    request, _ = ctx.ops.start_agree(ctx.final_comm, 1, "final agreement")
    bound = final_agreement_s(ctx.remaining(), ctx.policy.timeouts)
    try:
        wait_request(request, "final agreement", bound, watch=[ctx.revocation], hot_rounds=ctx.hot_rounds)
    except WaitTimeout as exc:
        ctx.log.event("final-agreement-timeout", error=str(exc))


def run_generation(ctx: RankContext) -> str:
    """This rank's role in one generation, over the MPI transport; why the generation ended: at the
    deadline (``deadline``), or by the masters' decision (``exhausted``, ``budget``:
    ``core.master.termination``)."""
    role = start_generation(ctx)
    if role == "master":
        driver = MasterDriver(ctx, MpiTransport(ctx))
        try:
            driver.prepare()
            reason = driver.run()
        finally:
            driver.close()
    elif role == "worker":
        reason = WorkerLoop(ctx, MpiTransport(ctx)).run()
    else:
        reason = wait_as_spare(ctx)
    final_agreement(ctx)
    return reason


def wait_as_spare(ctx: RankContext) -> str:
    """A warm spare waits on the global communicator until the deadline, a recovery, or the
    coordinator's notice that the campaign ends (the search is exhausted or the budget spent).

    It joins the final agreement only then: an agreement left pending while the others never
    enter it would be reported as incomplete by every rank at finalize. Returns why it stopped
    waiting (``exhausted``, ``budget`` or ``deadline``).
    """
    ctx.injector.maybe(Phase.IDLE, ctx.generation)
    notices = Mailbox(ctx.global_comm, MPI.ANY_SOURCE, TAG_CONTROL, ctx.policy.max_message_bytes)
    backoff = Backoff(ctx.hot_rounds)
    while time.time() < ctx.deadline:
        ctx.check_revocation()
        try:
            raw = notices.test("exhaustion notice")
            notice = envelope.decode(raw, ctx.policy.max_message_bytes) if raw is not None else None
        except ProtocolError as exc:
            ctx.log.limited("message-rejected", None, reason=str(exc))
            continue
        if notice is not None:
            if notice["type"] == "EXHAUSTED" and notice["generation"] == ctx.generation \
                    and notice["reason"] in (EXHAUSTED, BUDGET):
                return notice["reason"]
            else:
                ctx.log.limited("message-rejected", None, reason=f"{notice['type']} on the control tag of a spare")
        backoff.idle()
    return "deadline"


def write_outcome(ctx: RankContext, status: str) -> dict:
    outcome = {
        "format": OUTCOME_FORMAT,
        "status": status,
        "final_generation": ctx.generation,
        "started_at": ctx.membership.started_at,
        "ended_at": time.time(),
        "deadline_s": ctx.deadlines.of_epoch(ctx.membership.epoch),
        "epoch": ctx.membership.epoch,
        "policy_sha256": ctx.membership.policy_sha256,
        "writer": ctx.stable,
    }
    if ctx.stable == min(ctx.membership.live):
        write_replace(ctx.state.outcome, canonical_json(outcome), ctx.state.modes.snapshot)
    return outcome


def run_campaign(state_root: str | Path, comm: MPI.Comm | None = None, finalize: bool = False) -> dict:
    """Run this rank's part of the campaign; returns {stable, role, generation, status}.

    ``finalize`` (the mpiexec entry point) ends MPI with a bounded ``MPI_Finalize``; ipyparallel
    engines keep MPI alive and leave it False.
    """
    ctx = start(Path(state_root), comm or MPI.COMM_WORLD)
    heartbeat = Heartbeat(ctx.state.heartbeat(ctx.stable), ctx.state.modes.snapshot).start()
    try:
        return _run(ctx, finalize)
    except BaseException as exc:
        _record(ctx, exc)
        raise
    finally:
        with contextlib.suppress(SymccUlfmError):
            ctx.log.flush_limited()
        heartbeat.stop()
        ctx.close_executor()
        ctx.ranks_lock.release()  # after the last write of this rank to the state


def _record(ctx: RankContext, exc: BaseException) -> None:
    """Log why this rank ends abnormally, as far as the log can still be written."""
    try:
        ctx.log.event("rank-error", error=f"{type(exc).__name__}: {exc}"[:2000],
                      exit_code=getattr(exc, "exit_code", 70))
        ctx.log.sync()
    except SymccUlfmError:
        pass  # the log is what failed (a full disk): the job output still carries the reason


def _run(ctx: RankContext, finalize: bool) -> dict:
    while True:
        if not ctx.membership.layout.groups:
            # e.g. the only rank left after its host lost every other one: no master and worker
            write_outcome(ctx, "stopped-too-few-members")
            ctx.log.event("campaign-stopped", reason="fewer than one master and one worker left",
                          active=list(ctx.membership.active))
            ctx.log.sync()
            raise CheckFailed(f"generation {ctx.generation} has {len(ctx.membership.active)} active endpoint(s): "
                              "a campaign needs at least one master and one worker; stopping with state intact")
        try:
            reason = run_generation(ctx)
            break
        except FailureDetected as exc:
            ctx.log.event("failure-detected", where=exc.where, error_class=exc.error_class)
            recover(ctx, exc)
    outcome = write_outcome(ctx, OUTCOME_STATUS.get(reason, "deadline-reached"))
    ctx.log.event("campaign-end", status=outcome["status"], generation=ctx.generation)
    ctx.log.sync()
    if finalize:
        finalize_bounded(ctx.policy.timeouts.finalize_s, ctx.log)
    return {"stable": ctx.stable, "role": ctx.membership.role_of(ctx.stable), "generation": ctx.generation,
            "status": outcome["status"]}


def finalize_bounded(timeout_s: float, log=None) -> str:
    """MPI_Finalize with a watchdog: a hung finalize is recorded and the process still ends."""

    def hung():
        if log is not None:
            log.event("finalize-hung", timeout_s=timeout_s)
            log.sync()
        os._exit(0)

    timer = threading.Timer(timeout_s, hung)
    timer.daemon = True
    timer.start()
    MPI.Finalize()
    timer.cancel()
    if log is not None:
        log.event("finalize-done")
    return "finalized"
