"""A master's frontier: the priority queue of inputs it owns, its coverage, where items go.

Which input goes next, which of a result's candidates are novel, which master owns a
forwarded item (rendezvous ownership). Pure: durable checks (is this work already done in the
WAL?) stay with the caller.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

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
    _queue: list[tuple[int, int, str]] = field(default_factory=list)
    _known: set[str] = field(default_factory=set)
    _seq: int = 0

    def owns(self, input_hash: str) -> bool:
        return owner(input_hash, self.masters) == self.me

    def offer(self, input_hash: str, priority: int) -> bool:
        """Queue an input this master owns and has not seen; True when queued."""
        if input_hash in self._known or not self.owns(input_hash):
            return False
        self._known.add(input_hash)
        self._seq += 1
        heapq.heappush(self._queue, (-priority, self._seq, input_hash))
        return True

    def forget(self, input_hash: str) -> None:
        """Mark an input as settled elsewhere (done in the WAL) so it is never queued again."""
        self._known.add(input_hash)

    def next_input(self) -> str | None:
        return heapq.heappop(self._queue)[2] if self._queue else None

    def requeue(self, input_hash: str, priority: int) -> None:
        """Put back an input whose lease was lost (worker failed) or could not be taken."""
        self._seq += 1
        heapq.heappush(self._queue, (-priority, self._seq, input_hash))

    @property
    def pending(self) -> int:
        return len(self._queue)

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
