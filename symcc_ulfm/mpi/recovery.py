"""Recovery, in exactly the order of DESIGN.md §6.

1. (caller) a data-plane error or a sentinel completing with an error is detected;
2. revoke the global, group, master and final-agreement communicators so nobody stays blocked;
3. shrink first; allgather of stable ids (fixed width); missing = old members - survivors;
   Agree on it;
4. durable, idempotent prepare of the missing set (the lowest survivor writes, the others
   compute the same plan);
5. a second shrink on a new context plus a second allgather (attestation): a failure during
   discovery changes the survivor set and restarts discovery from the new communicator (the
   plan only grows, which ``prepare`` accepts as compatible);
6. Agree, then the lowest survivor commits the receipt of generation g+1 (with the promotion
   of the lowest warm spares, decided by the pure core); a last Agree makes it durable for
   everyone before anyone reads it back and checks it.
7-8. (caller) re-split, Agree, replay ``committing``, reclaim leases, resume.

Every collective is entered by all survivors at the same logical point: a local error becomes
a ``0`` flag in the next Agree, so the whole group retries together (``ft.py`` explains why).
Each attempt is bounded by a watchdog; attempts by ``timeouts.recovery_retries``.
"""

from __future__ import annotations

import time

from ..core.membership import commit, discover_missing, plan
from ..core.schedule import Phase
from ..errors import MembershipConflict, RecoveryTimeout, StoreError
from ..store.runlog import Event
from .context import RankContext
from .requests import FailureDetected, allgather_ints
from .watchdog import bounded

_DURABLE, _SAME = 1, 2  # bits of the attestation agreement


class _Retry(Exception):
    """The survivors agreed that this attempt did not complete."""


def recover(ctx: RankContext, cause: FailureDetected) -> None:
    started = time.monotonic()
    ctx.log.event(Event.RECOVERY_START, cause=cause.where, error_class=cause.error_class)
    for comm in (ctx.global_comm, ctx.group_comm, ctx.master_comm, ctx.final_comm):
        ctx.ops.revoke(comm)
    ctx.injector.overdue(ctx.generation)
    timeouts = ctx.policy.timeouts
    common = ctx.global_comm  # every survivor holds it, so every retry shrinks it again
    for attempt in range(1, timeouts.recovery_retries + 1):
        steps: dict[str, float] = {}
        try:
            with bounded(f"recovery attempt {attempt}", 6 * timeouts.recovery_step_s, ctx.log):
                base, receipt = _attempt(ctx, common, steps)
        except (_Retry, FailureDetected) as exc:
            ctx.log.event("recovery-retry", attempt=attempt, error=str(exc), steps=steps)
            continue
        ctx.global_comm = base
        ctx.log.event(
            Event.RECOVERY_DONE, missing=list(receipt.missing) if receipt else [],
            promoted=list(receipt.promoted) if receipt else [], attempts=attempt,
            seconds=time.monotonic() - started, steps=steps,
        )
        return
    raise RecoveryTimeout(f"recovery of generation {ctx.generation} did not complete in {attempt} attempts")


def _step(steps: dict[str, float], name: str, mark: float) -> float:
    now = time.monotonic()
    steps[name] = steps.get(name, 0.0) + now - mark
    return now


def _attempt(ctx: RankContext, base, steps: dict[str, float]):
    ops = ctx.ops
    old = ctx.snapshots.current()
    if old.generation > ctx.generation:
        ctx.set_generation(old)  # an earlier attempt committed before a later step failed
    old = ctx.membership
    mark = time.monotonic()
    first = ops.shrink(base, "recovery shrink")
    mark = _step(steps, "shrink", mark)

    ok, survivors = _gather(ctx, first, "recovery discovery")
    # an injected death during recovery comes once every survivor has left the shrink (the
    # allgather completed here): Open MPI 5.0.11 can crash a rank that a failure meets inside
    # MPIX_Comm_shrink, which would add deaths nobody scheduled
    ctx.injector.maybe(Phase.RECOVERY, old.generation)
    missing = discover_missing(old, survivors) if ok else ()
    _agree_or_retry(ctx, first, int(ok), "recovery agree")
    mark = _step(steps, "discovery", mark)
    if not missing:
        ctx.log.event("recovery-spurious", reason="every member survived; same generation on a new communicator")
        return first, None

    writer = min(survivors)
    try:
        prepared = ctx.snapshots.prepare(old, missing) if ctx.stable == writer else plan(old, missing)
        ok = 1
    except (StoreError, MembershipConflict) as exc:
        ctx.log.event("recovery-prepare-failed", error=str(exc))
        ok = 0
    mark = _step(steps, "prepare", mark)

    second = ops.shrink(first, "recovery second shrink")
    attested_ok, attested = _gather(ctx, second, "recovery attestation")
    same = attested_ok and sorted(attested) == sorted(survivors)
    # two bits, so that every survivor learns which step failed: a plan the writer could not
    # make durable (a full disk) stops them all at once instead of sending them round again
    agreed = ops.agree(second, (_DURABLE if ok else 0) | (_SAME if same else 0), "recovery attestation agree")
    if not agreed & _DURABLE:
        raise StoreError(f"the recovery plan could not be made durable by rank {writer}; every survivor stops, "
                         "failing closed (the state stays resumable)")
    if not agreed & _SAME:
        ctx.log.event("recovery-restart", reason="survivors changed during discovery",
                      survivors=sorted(survivors), attested=sorted(attested))
        raise _Retry("survivors changed during discovery")
    mark = _step(steps, "attest", mark)

    nxt, receipt = commit(old, prepared)
    ok = 1
    if ctx.stable == writer:
        try:
            ctx.snapshots.commit(nxt, receipt)
        except (StoreError, MembershipConflict) as exc:
            ctx.log.event("recovery-receipt-failed", error=str(exc))
            ok = 0
    if ops.agree(second, ok, "recovery receipt agree") != 1:
        raise StoreError("the receipt could not be committed; failing closed")
    stored = ctx.snapshots.current()
    if stored.sha256 != nxt.sha256:
        raise MembershipConflict(
            f"stored generation {stored.generation} ({stored.sha256[:12]}) is not the computed "
            f"generation {nxt.generation} ({nxt.sha256[:12]})"
        )
    ctx.set_generation(nxt)
    _step(steps, "receipt", mark)
    return second, receipt


def _gather(ctx: RankContext, comm, where: str) -> tuple[bool, list[int]]:
    try:
        return True, allgather_ints(comm, ctx.stable, where)
    except FailureDetected as exc:
        ctx.log.event("recovery-collective-failed", where=where, error_class=exc.error_class)
        return False, []


def _agree_or_retry(ctx: RankContext, comm, flag: int, where: str) -> None:
    if ctx.ops.agree(comm, flag, where) != 1:
        raise _Retry(f"{where}: not every survivor completed the step")
