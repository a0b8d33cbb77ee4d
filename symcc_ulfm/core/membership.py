"""Membership transitions: generation-0 snapshot, recovery plans, receipts, spare promotion.

Everything here is deterministic in its inputs (no clock: the campaign start time is passed
in), so every survivor computes byte-identical snapshots and receipts and can check the one
the writer stored.

Epochs: a campaign runs as one or more *epochs*, one per job. Epoch 0 starts with generation
0; when a whole job is lost and ``launch --resume`` starts a new one, a *resume* receipt opens
the next epoch and records the budget earlier epochs used (``consumed_s``); how that bounds
the epoch is ``core.budget``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import MembershipConflict, ScheduleError
from .canonical import Canonical
from .layout import Layout, compute_layout
from .schedule import FailureEvent, Phase

SNAPSHOT_FORMAT = "symcc-ulfm-snapshot/1"
PREPARE_FORMAT = "symcc-ulfm-prepare/1"
RECEIPT_FORMAT = "symcc-ulfm-receipt/1"


@dataclass(frozen=True)
class Membership(Canonical):
    """The global membership snapshot of one generation."""

    generation: int
    ranks: int
    budget: int
    workers_per_master: int
    active: tuple[int, ...]
    spares: tuple[int, ...]
    failed: tuple[int, ...]
    hosts: tuple[str, ...]
    policy_sha256: str
    started_at: float
    previous_sha256: str | None = None
    epoch: int = 0
    epoch_started_at: float | None = None
    consumed_s: float = 0.0
    worker_kinds: tuple[str, ...] = ()  # the kind of each worker slot (core.kinds); () = the executor
    layout: Layout = field(init=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "layout", compute_layout(self.generation, self.active, self.workers_per_master,
                                                          self.worker_kinds))
        if self.epoch_started_at is None:
            object.__setattr__(self, "epoch_started_at", self.started_at)

    @property
    def live(self) -> tuple[int, ...]:
        return tuple(sorted(self.active + self.spares))

    def role_of(self, stable: int) -> str:
        if stable in self.spares:
            return "spare"
        if stable in self.layout.masters:
            return "master"
        if stable in self.layout.workers:
            return "worker"
        return "failed" if stable in self.failed else "idle"

    def to_json(self) -> dict:
        return {
            "format": SNAPSHOT_FORMAT,
            "generation": self.generation,
            "ranks": self.ranks,
            "budget": self.budget,
            "workers_per_master": self.workers_per_master,
            "active": list(self.active),
            "spares": list(self.spares),
            "failed": list(self.failed),
            "hosts": list(self.hosts),
            "policy_sha256": self.policy_sha256,
            "started_at": self.started_at,
            "previous_sha256": self.previous_sha256,
            "layout_sha256": self.layout.sha256,
            "epoch": self.epoch,
            "epoch_started_at": self.epoch_started_at,
            "consumed_s": self.consumed_s,
            **({"worker_kinds": list(self.worker_kinds)} if self.worker_kinds else {}),
        }


    @classmethod
    def from_json(cls, value: dict) -> Membership:
        """Rebuild a snapshot; the caller compares ``layout_sha256`` with the stored layout."""
        if value.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"not a snapshot: format {value.get('format')!r}")
        snap = cls(
            generation=value["generation"],
            ranks=value["ranks"],
            budget=value["budget"],
            workers_per_master=value["workers_per_master"],
            active=tuple(value["active"]),
            spares=tuple(value["spares"]),
            failed=tuple(value["failed"]),
            hosts=tuple(value["hosts"]),
            policy_sha256=value["policy_sha256"],
            started_at=value["started_at"],
            previous_sha256=value["previous_sha256"],
            epoch=value["epoch"],
            epoch_started_at=value["epoch_started_at"],
            consumed_s=value["consumed_s"],
            worker_kinds=tuple(value.get("worker_kinds", ())),
        )
        if snap.layout.sha256 != value["layout_sha256"]:
            raise ValueError("snapshot layout_sha256 does not match its active set")
        return snap


def initial_membership(
    ranks: int, warm_spares: int, workers_per_master: int, hosts: tuple[str, ...], policy_sha256: str, started_at: float,
    worker_kinds: tuple[str, ...] = (),
) -> Membership:
    """Generation 0: the highest ``warm_spares`` stable ranks wait as spares; ``worker_kinds``
    (``core.kinds.slot_kinds``) is kept by every later generation."""
    budget = ranks - warm_spares
    return Membership(
        generation=0,
        ranks=ranks,
        budget=budget,
        workers_per_master=workers_per_master,
        active=tuple(range(budget)),
        spares=tuple(range(budget, ranks)),
        failed=(),
        hosts=tuple(hosts),
        policy_sha256=policy_sha256,
        started_at=started_at,
        worker_kinds=tuple(worker_kinds),
    )


@dataclass(frozen=True)
class Prepare(Canonical):
    """A durable recovery plan: the agreed missing set of ``previous_generation``."""

    generation: int
    previous_sha256: str
    missing: tuple[int, ...]

    def to_json(self) -> dict:
        return {
            "format": PREPARE_FORMAT,
            "generation": self.generation,
            "previous_generation": self.generation - 1,
            "previous_sha256": self.previous_sha256,
            "missing": list(self.missing),
        }



RECEIPT_KINDS = ("recovery", "resume")


@dataclass(frozen=True)
class Receipt(Canonical):
    """Commits generation ``generation``.

    A *recovery* receipt says who went missing and who was promoted; a *resume* receipt opens
    a new epoch after the whole job was lost (``missing``/``promoted`` empty, every stable rank
    re-admitted in the initial split) and records when and with how much budget used.
    """

    generation: int
    previous_sha256: str
    missing: tuple[int, ...]
    promoted: tuple[int, ...]
    snapshot_sha256: str
    layout_sha256: str
    kind: str = "recovery"
    resumed_at: float | None = None
    consumed_s: float | None = None

    def to_json(self) -> dict:
        return {
            "format": RECEIPT_FORMAT,
            "kind": self.kind,
            "generation": self.generation,
            "previous_generation": self.generation - 1,
            "previous_sha256": self.previous_sha256,
            "missing": list(self.missing),
            "promoted": list(self.promoted),
            "snapshot_sha256": self.snapshot_sha256,
            "layout_sha256": self.layout_sha256,
            "resumed_at": self.resumed_at,
            "consumed_s": self.consumed_s,
        }



def discover_missing(previous: Membership, survivors: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """Old members minus survivors: the application-level failure fact."""
    survivor_set = set(survivors)
    unknown = survivor_set - set(previous.live)
    if unknown:
        raise MembershipConflict(f"survivors {sorted(unknown)} are not members of generation {previous.generation}")
    return tuple(sorted(set(previous.live) - survivor_set))


def plan(previous: Membership, missing: tuple[int, ...], existing: Prepare | None = None) -> Prepare:
    """The prepare record for ``missing``; an existing pending plan must be compatible.

    Compatible means the existing plan's missing set is contained in the new one (failures that
    happened during discovery only add to it); anything else is a state fork and fails closed.
    """
    if not missing:
        raise MembershipConflict("a recovery plan needs at least one missing endpoint")
    prepared = Prepare(previous.generation + 1, previous.sha256, tuple(sorted(missing)))
    if existing is not None:
        if existing.previous_sha256 != prepared.previous_sha256 or existing.generation != prepared.generation:
            raise MembershipConflict(
                f"pending plan for generation {existing.generation} is based on another snapshot"
            )
        if not set(existing.missing) <= set(prepared.missing):
            raise MembershipConflict(
                f"pending plan says missing {list(existing.missing)}, discovery says {list(prepared.missing)}"
            )
    return prepared


def commit(previous: Membership, prepared: Prepare) -> tuple[Membership, Receipt]:
    """Apply a plan: drop the missing, refill the active budget from the lowest warm spares."""
    missing = set(prepared.missing)
    active = [r for r in previous.active if r not in missing]
    spares = [r for r in previous.spares if r not in missing]
    need = max(0, previous.budget - len(active))
    promoted = tuple(spares[:need])
    nxt = replace(
        previous,
        generation=previous.generation + 1,
        active=tuple(sorted(active + list(promoted))),
        spares=tuple(spares[len(promoted) :]),
        failed=tuple(sorted(set(previous.failed) | missing)),
        previous_sha256=previous.sha256,
    )
    receipt = Receipt(
        generation=nxt.generation,
        previous_sha256=previous.sha256,
        missing=prepared.missing,
        promoted=promoted,
        snapshot_sha256=nxt.sha256,
        layout_sha256=nxt.layout.sha256,
    )
    return nxt, receipt


def resume(
    previous: Membership, resumed_at: float, consumed_s: float, hosts: tuple[str, ...]
) -> tuple[Membership, Receipt]:
    """Open the next epoch: all stable ranks of the new job, in the initial active/spare split."""
    spares = previous.ranks - previous.budget
    nxt = replace(
        previous,
        generation=previous.generation + 1,
        active=tuple(range(previous.budget)),
        spares=tuple(range(previous.budget, previous.budget + spares)),
        failed=(),
        hosts=tuple(hosts),
        previous_sha256=previous.sha256,
        epoch=previous.epoch + 1,
        epoch_started_at=resumed_at,
        consumed_s=consumed_s,
    )
    receipt = Receipt(
        generation=nxt.generation,
        previous_sha256=previous.sha256,
        missing=(),
        promoted=(),
        snapshot_sha256=nxt.sha256,
        layout_sha256=nxt.layout.sha256,
        kind="resume",
        resumed_at=resumed_at,
        consumed_s=consumed_s,
    )
    return nxt, receipt


def predict(
    ranks: int, warm_spares: int, workers_per_master: int, schedule: tuple[FailureEvent, ...]
) -> list[Receipt]:
    """Receipts a schedule leads to; raises ScheduleError for a schedule that cannot happen.

    All events of generation G (including ``@recovery`` ones, absorbed by the second shrink)
    end up in the single receipt of generation G+1.
    """
    current = initial_membership(ranks, warm_spares, workers_per_master, (), "", 0.0)
    receipts: list[Receipt] = []
    by_generation: dict[int, list[FailureEvent]] = {}
    for event in schedule:
        by_generation.setdefault(event.generation, []).append(event)
    for generation in sorted(by_generation):
        events = by_generation[generation]
        if generation != current.generation:
            raise ScheduleError(
                "failure_schedule",
                f"generation {generation} is never reached: generation {current.generation} has no failure",
            )
        for event in events:
            _check_event(current, event, events)
        nxt, receipt = commit(current, plan(current, tuple(e.rank for e in events)))
        if len(nxt.layout.groups) == 0:
            raise ScheduleError(
                "failure_schedule",
                f"after generation {generation} only {len(nxt.active)} active endpoint(s) remain; "
                "a campaign needs at least one master and one worker",
            )
        receipts.append(receipt)
        current = nxt
    return receipts


def _check_event(current: Membership, event: FailureEvent, events: list[FailureEvent]) -> None:
    where = f"event {event}"
    if event.rank >= current.ranks:
        raise ScheduleError("failure_schedule", f"{where}: rank {event.rank} is outside 0..{current.ranks - 1}")
    if event.rank not in current.live:
        raise ScheduleError("failure_schedule", f"{where}: rank {event.rank} is already dead in generation {event.generation}")
    role = current.role_of(event.rank)
    if event.phase == Phase.IDLE and role != "spare":
        raise ScheduleError("failure_schedule", f"{where}: @idle needs a warm spare; rank {event.rank} is a {role}")
    if event.phase == Phase.COMMIT and role != "master":
        raise ScheduleError("failure_schedule", f"{where}: @commit needs a master; rank {event.rank} is a {role}")
    if event.phase == Phase.WORK and role not in ("master", "worker"):
        raise ScheduleError("failure_schedule", f"{where}: @work needs an active rank; rank {event.rank} is a {role}")
    if event.phase == Phase.RECOVERY and all(e.phase == Phase.RECOVERY for e in events):
        raise ScheduleError(
            "failure_schedule", f"{where}: @recovery needs another failure in generation {event.generation} to recover from"
        )
