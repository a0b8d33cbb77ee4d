"""A master's frontier: what to analyze next, what it counted, where new inputs go.

:class:`FrontierQueue`: which input goes next, which of a result's candidates are novel,
which master owns a forwarded item (rendezvous ownership). :class:`Frontier`: the queue plus
the priorities and hints of inputs, the counts of durable done records, and the FRONTIER
messages that carry new inputs and coverage to their owners. Priorities, hints and coverage
come back from the done manifests, so nothing depends on the memory of a master that died.
Inputs of a ``crash``, ``hang``, ``oom`` or ``protocol`` finding are never queued (``core.finding``). Pure:
durable checks (is this work already done in the WAL?) stay with the caller.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .. import envelope
from ..coverage import is_branch_coverage
from ..finding import TERMINAL_KINDS
from .ownership import owner

PRIORITY_RECLAIMED = 4  # leased in an earlier generation and never settled: in flight when it ended
PRIORITY_SEED = 3
PRIORITY_NOVEL = 2
PRIORITY_UNIQUE = 1


@dataclass(frozen=True)
class Judged:
    sha256: str
    length: int
    coverage: tuple[int, ...]
    novel: bool
    hint: dict | None = None


@dataclass
class FrontierQueue:
    me: int
    masters: tuple[int, ...]
    coverage: set[int] = field(default_factory=set)
    edges: int = 0  # ids in ``coverage`` that are edges, not branch directions (kept by ``absorb``)
    lengths: dict[str, int] = field(default_factory=dict)  # of the inputs whose length a manifest told
    _queue: list[tuple[int, int, int, str]] = field(default_factory=list)
    _known: set[str] = field(default_factory=set)
    _seq: int = 0

    def owns(self, input_hash: str) -> bool:
        return owner(input_hash, self.masters) == self.me

    def offer(self, input_hash: str, priority: int) -> bool:
        """Queue an input this master owns and has not seen; True when queued."""
        if input_hash in self._known or not self.owns(input_hash):
            return False
        self._known.add(input_hash)
        self._push(input_hash, priority)
        return True

    def _push(self, input_hash: str, priority: int) -> None:
        """Higher priority first (inputs that added coverage before the others, as SymCC's fuzzing
        helper takes them), then shorter, then in the order offered."""
        self._seq += 1
        heapq.heappush(self._queue, (-priority, self.lengths.get(input_hash, 0), self._seq, input_hash))

    def forget(self, input_hash: str) -> None:
        """Mark an input as settled elsewhere (done in the WAL) so it is never queued again."""
        self._known.add(input_hash)

    def next_input(self) -> str | None:
        return heapq.heappop(self._queue)[3] if self._queue else None

    def requeue(self, input_hash: str, priority: int) -> None:
        """Put back an input whose lease was lost (worker failed) or could not be taken."""
        self._push(input_hash, priority)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def queued(self) -> list[str]:
        """The inputs queued, in no particular order."""
        return [entry[3] for entry in self._queue]

    def knows(self, input_hash: str) -> bool:
        """Whether the input was ever offered or settled (it is not queued by an offer again)."""
        return input_hash in self._known

    def judge(self, candidates: list[dict]) -> list[Judged]:
        """Deduplicate a result's candidates by content and mark those adding coverage as novel.

        Candidates are judged in order against the master's coverage plus what earlier
        candidates of the same result added, so two children adding the same edge count once.
        """
        seen: set[str] = set()
        local: set[int] = set()
        judged = []
        for c in candidates:
            if c["sha256"] in seen:
                continue
            seen.add(c["sha256"])
            ids = tuple(sorted(set(c["coverage"])))
            novel = any(i not in self.coverage and i not in local for i in ids)
            local.update(ids)
            judged.append(Judged(c["sha256"], c["length"], ids, novel, c.get("hint")))
        return judged

    def absorb(self, coverage_ids) -> set[int]:
        """Add coverage; returns the ids that were new."""
        new = set(coverage_ids) - self.coverage
        self.coverage |= new
        self.edges += sum(1 for c in new if not is_branch_coverage(c))
        return new

    def route(self, items: list[tuple[str, int]]) -> dict[int, list[tuple[str, int]]]:
        """Frontier items grouped by owning master; this master's own items are queued here."""
        forward: dict[int, list[tuple[str, int]]] = {}
        for input_hash, priority in items:
            dest = owner(input_hash, self.masters)
            if dest == self.me:
                self.offer(input_hash, priority)
            else:
                forward.setdefault(dest, []).append((input_hash, priority))
        return forward


def signatures(findings: list[dict]) -> set[tuple[str, str]]:
    """``(kind, signature)`` of finding records (a manifest's: the corpus holds an input of each)."""
    return {(f["kind"], f["signature"]) for f in findings}


def terminal(manifest: dict) -> set[str]:
    """Inputs of the manifest's terminal findings (``core.finding``): never expanded further."""
    return {f["sha256"] for f in manifest["findings"] if f["kind"] in TERMINAL_KINDS}


class Frontier:
    def __init__(self, me: int, masters: tuple[int, ...], generation: int, limit: int):
        self.me = me
        self.masters = masters
        self.generation = generation
        self.limit = limit
        self.queue = FrontierQueue(me, masters)
        self.priority: dict[str, int] = {}
        self.hints: dict[str, dict | None] = {}
        # findings whose input the corpus holds (learned, accounted, or marked by a result being committed)
        self.signatures: set[tuple[str, str]] = set()
        self.totals = {"analyzed": 0, "slices": 0, "generated": 0, "unique": 0, "novel": 0, "findings": 0,
                       "dropped": 0}
        self.items_sent = 0  # FRONTIER messages that carried inputs, sent and received (core.master.termination)
        self.items_received = 0

    def priority_of(self, input_hash: str) -> int:
        return self.priority.get(input_hash, PRIORITY_UNIQUE)

    def learn(self, record: dict) -> set[str]:
        """Priorities, hints and coverage of a done record; the inputs it says must not be queued."""
        claimed = set(record["done"]["claimed"])
        for obj in record["manifest"]["objects"]:
            if obj["sha256"] in claimed:
                self.queue.lengths[obj["sha256"]] = obj["length"]
                self.priority[obj["sha256"]] = PRIORITY_NOVEL if obj["novel"] else PRIORITY_UNIQUE
                self.hints[obj["sha256"]] = obj["hint"]
                self.queue.absorb(obj["coverage"])
        self.signatures |= signatures(record["manifest"]["findings"])
        return terminal(record["manifest"])

    def account(self, record: dict) -> tuple[dict, list[tuple[int, bytes]]]:
        """Count a durable done record, learn its coverage, route its new objects.

        Returns the fields of its ``commit`` log line and the FRONTIER messages for peer masters
        (their new inputs and the new coverage). A record is a replay when it was marked done
        by another master or generation than the one that wrote its manifest.
        """
        manifest, done = record["manifest"], record["done"]
        replayed = (manifest["master"], manifest["generation"]) != (done["master"], done["generation"])
        claimed = set(done["claimed"])
        objects = [o for o in manifest["objects"] if o["sha256"] in claimed]
        novel = [o for o in objects if o["novel"]]
        stopped = terminal(manifest)
        self.signatures |= signatures(manifest["findings"])
        for name in stopped:
            self.queue.forget(name)
        new_coverage: set[int] = set()
        for obj in objects:
            new_coverage |= self.queue.absorb(obj["coverage"])
            self.queue.lengths[obj["sha256"]] = obj["length"]
            self.hints[obj["sha256"]] = obj["hint"]
            self.priority[obj["sha256"]] = PRIORITY_NOVEL if obj["novel"] else PRIORITY_UNIQUE
        self.queue.forget(record["input_hash"])
        sliced = manifest["slice"] is not None  # a fuzzer's slice, not an input analyzed
        self.totals["slices" if sliced else "analyzed"] += 1
        self.totals["generated"] += manifest["generated"]
        self.totals["dropped"] += len(manifest["dropped"])
        self.totals["unique"] += len(objects)
        self.totals["novel"] += len(novel)
        self.totals["findings"] += len(manifest["findings"])
        line = {"work_hash": record["work_hash"], "worker": manifest["worker"], "kind": manifest["kind"],
                "slice": sliced, "generated": manifest["generated"], "dropped": len(manifest["dropped"]),
                "unique": len(objects), "novel": len(novel), "replayed": replayed,
                "findings": len(manifest["findings"]), "executions": manifest["stats"].get("executions", 0),
                "edges": self.queue.edges}
        forward = self.queue.route([(o["sha256"], self.priority[o["sha256"]]) for o in objects
                                    if o["sha256"] not in stopped])
        out = []
        for m in self.masters:
            if m == self.me or (m not in forward and not new_coverage):
                continue
            items = [{"input_hash": h, "priority": p, "hint": self.hints.get(h), "length": self.queue.lengths[h]}
                     for h, p in forward.get(m, [])]
            self.items_sent += bool(items)
            out.append((m, envelope.encode("FRONTIER", self.limit, generation=self.generation, master=self.me,
                                           items=items, coverage=sorted(new_coverage))))
        return line, out

    def take(self, message: dict) -> None:
        """A peer's FRONTIER message (checked by the caller): its coverage and the inputs it hands over."""
        self.queue.absorb(message["coverage"])
        self.items_received += bool(message["items"])
        for item in message["items"]:
            self.hints[item["input_hash"]] = item["hint"]
            self.queue.lengths[item["input_hash"]] = item["length"]
            self.queue.offer(item["input_hash"], item["priority"])
