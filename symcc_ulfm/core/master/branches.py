"""The campaign's record of tried branches, and the edges on analyzed paths: facts through the masters.

Concolic work by edge, not by seed (``policy.concolic_order = "edge"``): no analysis worker should
try a branch that any worker of the campaign tried, and the master should lease first the inputs
whose paths touch what no analysis has been on.

**The record** (:class:`BranchRecord`) is a set of ids whose meaning is the analysis kind's
(``executors.base.Executor.learn``): for ``concolic`` a branch site with its occurrence on the path
and a direction (``executors.concolic.search``) that a run flipped (solved SAT, UNSAT or timed out)
or whose path took it; for ``symcc`` a bit of QSYM's coverage map file (``SYMCC_AFL_COVERAGE_MAP``). The master never interprets an id. A worker reports the ids its run
added in its RESULT (``tried``); the master records them in the result's manifest, so they are in
the WAL and a new master rebuilds the record from the done records (``Frontier.learn``); it merges
them when it counts the done record, forwards them to its peers in its FRONTIER messages, and hands
each analysis worker, with its next WORK, the ids it has not yet been sent (:meth:`BranchRecord.delta`).

**Size.** A message carries at most ``core.envelope.MAX_TRIED_IDS`` ids, and a WORK no more than a
fifth of the message limit holds (:func:`room`). A record larger than that reaches a worker over
several leases, the oldest ids first; until then the worker may try a branch again (redundant work,
never a wrong result). A worker's run that added more ids than a RESULT carries reports the first
ones; the others stay in that worker's own record (its executor's) and are tried by nobody else
only as far as they reach the campaign in later results.

**Analyzed edges** (:class:`Analyzed`): the coverage ids of every input an analysis kind's done
record settled, where the master knows the input's coverage (from the manifest that published it;
a seed's is not known). An input's *score* is the number of its coverage ids on no analyzed path:
the uncovered neighbourhood its analysis can still flip towards. Ids with hit classes count
separately (a loop run more often is a path the analysis has not been on), as AFL's map does.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..envelope import MAX_TRIED_IDS

ID_BYTES = 21  # what one id takes in a message at most: 19 digits, a comma, a byte of slack


def room(limit: int) -> int:
    """How many ids of the record a WORK under the message limit ``limit`` carries."""
    return max(0, min(MAX_TRIED_IDS, limit // 5 // ID_BYTES))


class BranchRecord:
    """The record of one master: every id merged so far in the order merged, and how far each worker
    was sent it in this generation (a new generation sends the whole record again)."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._order: list[int] = []
        self._sent: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, branch_id: int) -> bool:
        return branch_id in self._ids

    def merge(self, ids: Iterable[int]) -> list[int]:
        """Add ids; those that were new, in order."""
        new = []
        for branch_id in ids:
            if branch_id not in self._ids:
                self._ids.add(branch_id)
                self._order.append(branch_id)
                new.append(branch_id)
        return new

    def delta(self, worker: int, most: int) -> list[int]:
        """The next ids ``worker`` was not sent (at most ``most``); they count as sent."""
        start = self._sent.get(worker, 0)
        out = self._order[start:start + most]
        self._sent[worker] = start + len(out)
        return out


class Analyzed:
    """The coverage ids on analyzed paths, rebuilt in any order from the facts of done records: an
    input's coverage (the manifest that published it) and that an analysis settled it."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self._coverage: dict[str, tuple[int, ...]] = {}  # of inputs not analyzed yet, where known
        self._inputs: set[str] = set()

    def coverage(self, input_hash: str, ids: Iterable[int]) -> list[int]:
        """An input's coverage is known; the ids that became analyzed (when it was analyzed already)."""
        ids = tuple(ids)
        if input_hash in self._inputs:
            return self._add(ids)
        self._coverage.setdefault(input_hash, ids)
        return []

    def analyzed(self, input_hash: str) -> list[int]:
        """An analysis kind settled the input; the ids that became analyzed."""
        if input_hash in self._inputs:
            return []
        self._inputs.add(input_hash)
        return self._add(self._coverage.pop(input_hash, ()))

    def take(self, ids: Iterable[int]) -> None:
        """Analyzed ids a peer master counted."""
        self.ids.update(ids)

    def _add(self, ids: tuple[int, ...]) -> list[int]:
        new = [i for i in ids if i not in self.ids]
        self.ids.update(new)
        return new

    def score(self, input_hash: str) -> int | None:
        """The input's coverage ids on no analyzed path; None when its coverage is not known."""
        ids = self._coverage.get(input_hash)
        if ids is None:
            return None
        return sum(1 for i in ids if i not in self.ids)
