"""A master's frontier: what to analyze next, what it counted, where new inputs go.

:class:`FrontierQueue`: which input goes next, which of a result's candidates are novel,
which master owns a forwarded item (rendezvous ownership). :class:`Frontier`: the queue plus
the priorities and hints of inputs, the counts of durable done records, and the FRONTIER
messages that carry new inputs and coverage to their owners. Priorities, hints and coverage
come back from the done manifests, so nothing depends on the memory of a master that died.
Inputs of a ``crash``, ``hang``, ``oom`` or ``protocol`` finding are never queued (``core.finding``). Pure:
durable checks (is this work already done in the WAL?) stay with the caller.

Two orders (``policy.concolic_order``). ``seed``: inputs that added coverage first, then the others,
shorter first, as SymCC's fuzzing helper takes them. ``edge``: seeds and reclaimed work first, then
the input whose coverage has the most ids on no analyzed path (its *score*, ``core.master.branches``),
then shorter; a score is computed again when the input comes up (it only falls as analyses are
counted), and an input whose score is 0 is not analyzed but *skipped*: every edge of its path was on
an analyzed path already. The decision is a function of the done records alone (the analyzed edges
only grow), so a master that rebuilds the queue after a failure skips the same inputs again; the
master logs each (``input-skipped``) and counts them (``skipped``). In ``edge`` order the frontier
also keeps the campaign's record of tried branches (``core.master.branches.BranchRecord``) and
FRONTIER messages carry its new ids, the newly analyzed edges and each forwarded input's coverage.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import ProtocolError
from .. import envelope
from ..coverage import is_branch_coverage
from ..finding import TERMINAL_KINDS
from .branches import Analyzed, BranchRecord
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
    # edge order: an input's score (None: not known), see the module docstring; None: seed order
    scorer: Callable[[str], int | None] | None = None
    skipped: list[str] = field(default_factory=list)  # inputs found with a score of 0, for the master to log
    _queue: list[tuple] = field(default_factory=list)  # (rank..., seq, priority, input)
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

    def _rank(self, input_hash: str, priority: int) -> tuple:
        """Seed order: higher priority first (inputs that added coverage before the others, as
        SymCC's fuzzing helper takes them), then shorter. Edge order: seeds, reclaimed work and
        inputs of unknown coverage first, then the higher score, then shorter."""
        length = self.lengths.get(input_hash, 0)
        if self.scorer is None:
            return -priority, length
        score = self.scorer(input_hash)
        if score is None or priority >= PRIORITY_SEED:
            return 0, 0, length
        return 1, -score, length

    def _push(self, input_hash: str, priority: int) -> None:
        """Queued by :meth:`_rank`, then in the order offered."""
        self._seq += 1
        heapq.heappush(self._queue, (*self._rank(input_hash, priority), self._seq, priority, input_hash))

    def forget(self, input_hash: str) -> None:
        """Mark an input as settled elsewhere (done in the WAL) so it is never queued again."""
        self._known.add(input_hash)

    def next_input(self) -> str | None:
        """The next input to analyze. In edge order an input whose score fell since it was queued
        goes back in its new place, and one whose score is 0 is skipped (:attr:`skipped`)."""
        while self._queue:
            entry = heapq.heappop(self._queue)
            priority, input_hash = entry[-2], entry[-1]
            if self.scorer is None:
                return input_hash
            rank = self._rank(input_hash, priority)
            if rank[0] == 1 and rank[1] == 0:
                self.skipped.append(input_hash)
            elif rank != entry[:len(rank)]:
                self._push(input_hash, priority)
            else:
                return input_hash
        return None

    def requeue(self, input_hash: str, priority: int) -> None:
        """Put back an input whose lease was lost (worker failed) or could not be taken."""
        self._push(input_hash, priority)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def queued(self) -> list[str]:
        """The inputs queued, in no particular order."""
        return [entry[-1] for entry in self._queue]

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
    def __init__(self, me: int, masters: tuple[int, ...], generation: int, limit: int, order: str = "seed"):
        self.me = me
        self.masters = masters
        self.generation = generation
        self.limit = limit
        self.queue = FrontierQueue(me, masters)
        self.by_edge = order == "edge"
        self.branches = BranchRecord()  # the campaign's record of tried branches (edge order)
        self.analyzed = Analyzed()  # the coverage on analyzed paths (edge order)
        if self.by_edge:
            self.queue.scorer = self.analyzed.score
        self.priority: dict[str, int] = {}
        self.hints: dict[str, dict | None] = {}
        # findings whose input the corpus holds (learned, accounted, or marked by a result being committed)
        self.signatures: set[tuple[str, str]] = set()
        self.totals = {"analyzed": 0, "slices": 0, "generated": 0, "unique": 0, "novel": 0, "findings": 0,
                       "dropped": 0, "skipped": 0}
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
        self._facts(record, [o for o in record["manifest"]["objects"] if o["sha256"] in claimed])
        self.signatures |= signatures(record["manifest"]["findings"])
        return terminal(record["manifest"])

    def _facts(self, record: dict, objects: list[dict]) -> tuple[list[int], list[int]]:
        """Edge order: a done record's facts for the record of tried branches and the analyzed
        edges; the ids that were new to each."""
        if not self.by_edge:
            return [], []
        manifest = record["manifest"]
        analyzed = []
        for obj in objects:
            analyzed += self.analyzed.coverage(obj["sha256"], obj["coverage"])
        if manifest["slice"] is None:  # an input analyzed, not a fuzzer's slice
            analyzed += self.analyzed.analyzed(record["input_hash"])
        return self.branches.merge(manifest.get("tried", ())), analyzed

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
        coverage_of = {o["sha256"]: o["coverage"] for o in objects}
        tried, analyzed = self._facts(record, objects)
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
            if m == self.me or (m not in forward and not new_coverage and not tried and not analyzed):
                continue
            items = [{"input_hash": h, "priority": p, "hint": self.hints.get(h), "length": self.queue.lengths[h]}
                     for h, p in forward.get(m, [])]
            self.items_sent += bool(items)
            out.append((m, self._message(items, sorted(new_coverage), coverage_of, tried, sorted(analyzed))))
        return line, out

    def _message(self, items: list[dict], coverage: list[int], coverage_of: dict[str, list[int]], tried: list[int],
                 analyzed: list[int]) -> bytes:
        """A FRONTIER message; in edge order with the facts of ``core.master.branches`` and each
        item's coverage, left out when they would not fit the message limit (the peer then orders
        those inputs first and its workers may try those branches again: never wrong)."""
        plain = {"generation": self.generation, "master": self.me, "items": items, "coverage": coverage}
        if self.by_edge:
            edged = [{**item, "coverage": list(coverage_of[item["input_hash"]])} for item in items]
            try:
                return envelope.encode("FRONTIER", self.limit, **{**plain, "items": edged}, tried=tried,
                                       analyzed=analyzed)
            except ProtocolError:
                pass
        return envelope.encode("FRONTIER", self.limit, **plain)

    def take(self, message: dict) -> None:
        """A peer's FRONTIER message (checked by the caller): its coverage and the inputs it hands over."""
        self.queue.absorb(message["coverage"])
        if self.by_edge:
            self.branches.merge(message.get("tried", []))
            self.analyzed.take(message.get("analyzed", []))
        self.items_received += bool(message["items"])
        for item in message["items"]:
            self.hints[item["input_hash"]] = item["hint"]
            self.queue.lengths[item["input_hash"]] = item["length"]
            if self.by_edge and "coverage" in item:
                self.analyzed.coverage(item["input_hash"], item["coverage"])
            self.queue.offer(item["input_hash"], item["priority"])
