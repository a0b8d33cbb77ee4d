"""The mix of kinds (``--mix adaptive``): how many of a group's analysis slots are lent to its
fuzzer kind, found from what each kind yields rather than fixed by ``--worker-kinds``.

Pure: facts in (done records of the WAL), a decision out. The master decides when it gives out
leases in a round (a slice boundary); a slot the decision lends runs a slice of the fuzzer kind
(the idle kind, ``MasterConfig.idle_kind``) even while inputs are queued, and the decision, with
its inputs, goes into that slice's manifest (``mix``; the slice descriptor carries its SHA-256, so
it was fixed when the slice was leased). The oracle recomputes it with its own implementation
(``evidence.oracle.mix_checks``).

**Facts**, one per done record (:func:`fact_of`): its kind (the manifest's), its *new edges* (the
manifest's ``new_edges``: edges, not branch directions, that its kept objects added to the master's
coverage when it judged them; a record of an older WAL without it counts its novel objects) and
the *CPU seconds* it used (``stats.cpu_seconds``, the worker's process tree, else, in older WALs,
``stats.seconds``, the lease's wall time). Quarantine manifests are no measurement.

**Window** (:class:`KindYields`): the last ``WINDOW`` done records of each of the two kinds, the
campaign's analysis kind and the fuzzer kind it lends to, by count, not wall time: in the order
the master counts them during its generation, and, when a generation starts, rebuilt from every
done record of the WAL in (generation, work hash) order. ``stale``: the fuzzer kind's records
counted since the analysis kind's last one. The yield of a kind is the sum of its window's new
edges over the sum of its CPU seconds (at least ``MIN_CPU_S``).

**Rule** (:func:`decide`), for a group of ``A`` analysis and ``F`` fuzzer slots, ``previous`` of
them lent by the last decision (so ``keep = A - previous`` analyze):

1. *explore*: with fewer than ``MIN_SAMPLES`` analysis records in the window, or ``stale >=
   STALE_AFTER``, at least one slot analyzes (a measurement lease); with fewer than ``MIN_SAMPLES``
   fuzzer records nothing changes (its own slots measure it);
2. *yield*: ``want = (A + F) * y_a / (y_a + y_f)`` analysis slots, in proportion to the yields (no
   yield on either side: nothing changes); the count moves to ``round(want)`` (at most ``A``) only
   when ``|want - keep| > 0.5 + MARGIN`` (*band* otherwise: the hysteresis);
3. *floor*: while inputs that added coverage are queued, at least one slot analyzes.

The fuzzer slots always fuzz. The decision lends the last ``lent`` analysis workers of the group
(in its order). With ``A = F = 1`` the analysis slot is lent once the fuzzer yields more than
seven times as much per CPU-second (``want < 0.25``) and no input that added coverage waits, and
comes back once it yields less than 1.67 times as much (``want > 0.75``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..canonical import digest
from ..coverage import is_branch_coverage

MIX_RULE = "symcc-ulfm-mix/1"
WINDOW = 8  # done records per kind the yields are taken over
MIN_SAMPLES = 2  # records a kind's window needs before its yield is compared
STALE_AFTER = 2 * WINDOW  # fuzzer records since the analysis kind's last one that make it due a measurement
MARGIN = 0.25  # slots beyond the rounding point the wanted count must be before the mix moves (hysteresis)
MIN_CPU_S = 0.01  # the least CPU a window is taken to have used


@dataclass(frozen=True)
class Fact:
    work: str
    kind: str
    edges: int
    cpu_s: float

    def to_json(self) -> list:
        return [self.work, self.edges, self.cpu_s]


def fact_of(record: dict) -> Fact | None:
    """A done record's measurement (None for a quarantine: no work of a kind was done)."""
    manifest = record["manifest"]
    if "quarantine" in manifest:
        return None
    edges = manifest.get("new_edges")
    if edges is None:  # written before manifests counted new edges: its novel objects
        edges = sum(1 for obj in manifest["objects"] if obj["novel"])
    stats = manifest["stats"]
    cpu = stats.get("cpu_seconds", stats.get("seconds", 0.0))  # the lease's wall time where no CPU was measured
    return Fact(record["work_hash"], manifest["kind"], int(edges), float(cpu))


def new_edges(coverage: Iterable[Iterable[int]], known: set[int]) -> int:
    """Edges (not branch directions) of ``coverage`` not in ``known``: what a result adds."""
    return len({i for ids in coverage for i in ids if i not in known and not is_branch_coverage(i)})


def yield_of(window: Iterable[Fact]) -> float:
    facts = list(window)
    return sum(f.edges for f in facts) / max(sum(f.cpu_s for f in facts), MIN_CPU_S)


@dataclass
class KindYields:
    """The trailing windows of the analysis kind and the fuzzer kind (see the module docstring)."""

    analysis: str
    fuzzer: str
    recent: dict[str, deque] = field(default_factory=dict)
    stale: int = 0

    def __post_init__(self):
        self.recent = {self.analysis: deque(maxlen=WINDOW), self.fuzzer: deque(maxlen=WINDOW)}

    def observe(self, record: dict) -> None:
        """One done record, in the order the master counts them."""
        fact = fact_of(record)
        if fact is None or fact.kind not in self.recent:
            return
        self.recent[fact.kind].append(fact)
        self.stale = 0 if fact.kind == self.analysis else self.stale + 1

    def restore(self, records: Iterable[dict]) -> None:
        """Rebuild from the WAL's done records alone (a new generation, after a failure)."""
        self.__post_init__()
        self.stale = 0
        done = [r for r in records if r["state"] == "done"]
        for record in sorted(done, key=lambda r: (r["manifest"]["generation"], r["work_hash"])):
            self.observe(record)


@dataclass(frozen=True)
class Decision:
    lent: int  # analysis slots lent to the fuzzer kind
    reason: str  # explore, yield, band, unmeasured, floor, no-yield
    inputs: dict  # what it was decided from, as the manifest records it

    def to_json(self) -> dict:
        return {**self.inputs, "lent": self.lent, "reason": self.reason}

    @property
    def sha256(self) -> str:
        """What the slice descriptor carries (``core.slices``)."""
        return digest(self.to_json())


def decide(yields: KindYields, analysis_slots: int, fuzzer_slots: int, previous: int, novel_queued: bool) -> Decision:
    """How many of ``analysis_slots`` are lent (the rule of the module docstring)."""
    a, f = list(yields.recent[yields.analysis]), list(yields.recent[yields.fuzzer])
    inputs = {"rule": MIX_RULE, "analysis": yields.analysis, "fuzzer": yields.fuzzer,
              "slots": [analysis_slots, fuzzer_slots], "previous": previous, "novel_queued": novel_queued,
              "stale": yields.stale, "window": {yields.analysis: [x.to_json() for x in a],
                                                yields.fuzzer: [x.to_json() for x in f]}}
    keep = analysis_slots - min(max(previous, 0), analysis_slots)
    if len(a) < MIN_SAMPLES or yields.stale >= STALE_AFTER:
        count, reason = max(keep, 1), "explore"
    elif len(f) < MIN_SAMPLES:
        count, reason = keep, "unmeasured"
    else:
        y_a, y_f = yield_of(a), yield_of(f)
        if y_a + y_f == 0:
            count, reason = keep, "no-yield"
        else:
            want = (analysis_slots + fuzzer_slots) * y_a / (y_a + y_f)
            if abs(want - keep) > 0.5 + MARGIN:
                count, reason = int(want + 0.5), "yield"
            else:
                count, reason = keep, "band"
    if novel_queued and count < 1:
        count, reason = 1, "floor"
    count = min(count, analysis_slots)
    return Decision(analysis_slots - count, reason, inputs)


def lent_workers(analysts: list[int], lent: int) -> frozenset[int]:
    """The workers a decision lends: the last ``lent`` analysis workers of the group, in its order."""
    return frozenset(analysts[len(analysts) - lent:]) if lent > 0 else frozenset()


def previous_decision(records: Iterable[dict], master: int) -> int:
    """The slots lent by this master's latest recorded decision in the WAL (highest generation, then
    slice sequence number); 0 when it recorded none."""
    latest = max(((r["manifest"]["generation"], r["manifest"]["slice"]["seq"], r["manifest"]["mix"]["lent"])
                  for r in records if r["state"] == "done" and r["manifest"].get("mix") is not None
                  and r["manifest"]["master"] == master), default=None)
    return 0 if latest is None else latest[2]
