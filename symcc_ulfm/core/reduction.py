"""Input reduction (pure): delta debugging, then byte simplification, under a test budget.

:class:`Reducer` shrinks ``data`` while ``keeps(candidate)`` stays true (the caller's test: the
candidate, executed contained, still gives the finding's signature). First Zeller and
Hildebrandt's *ddmin* over byte chunks: the input is cut into ``n`` chunks; removing one chunk
(a complement) or keeping only one is tried, in order; the first that keeps the signature is
taken (``n`` then shrinks by one, or restarts at 2), else ``n`` doubles, until chunks are single
bytes. Then every byte that is not already ``FILL`` is replaced by it, one at a time, left to
right, where the signature survives (what afl-tmin calls normalisation): a smaller alphabet is
easier to read. Every candidate is tested at most once (a cache by content) and at most
``max_tests`` tests run in all, so a reduction is deterministic for a deterministic test and
bounded for any.
"""

from __future__ import annotations

from collections.abc import Callable

FILL = 0x30  # "0", afl-tmin's choice: printable, and not a byte parsers usually treat specially


class Reducer:
    def __init__(self, keeps: Callable[[bytes], bool], max_tests: int):
        if type(max_tests) is not int or max_tests < 1:
            raise ValueError(f"max_tests {max_tests!r}: expected a positive integer")
        self._keeps = keeps
        self.max_tests = max_tests
        self.tests = 0
        self._seen: dict[bytes, bool] = {}

    @property
    def exhausted(self) -> bool:
        return self.tests >= self.max_tests

    def keeps(self, candidate: bytes) -> bool:
        """The (cached) test of ``candidate``; False once the budget is spent."""
        known = self._seen.get(candidate)
        if known is not None:
            return known
        if self.exhausted:
            return False
        self.tests += 1
        kept = self._seen[candidate] = bool(self._keeps(candidate))
        return kept

    def ddmin(self, data: bytes) -> bytes:
        n = 2
        while len(data) >= 2 and not self.exhausted:
            size = -(-len(data) // n)
            starts = range(0, len(data), size)
            taken = None
            for start in starts:
                complement = data[:start] + data[start + size:]
                if self.keeps(complement):
                    taken, n = complement, max(n - 1, 2)
                    break
            if taken is None and n > 2:
                for start in starts:
                    subset = data[start:start + size]
                    if self.keeps(subset):
                        taken, n = subset, 2
                        break
            if taken is not None:
                data = taken
            elif n >= len(data):
                break
            else:
                n = min(2 * n, len(data))
        if len(data) == 1 and self.keeps(b""):
            data = b""
        return data

    def simplify(self, data: bytes) -> bytes:
        for pos in range(len(data)):
            if self.exhausted:
                break
            if data[pos] != FILL:
                candidate = data[:pos] + bytes([FILL]) + data[pos + 1:]
                if self.keeps(candidate):
                    data = candidate
        return data

    def reduce(self, data: bytes) -> bytes:
        """ddmin, then byte simplification (module docstring)."""
        return self.simplify(self.ddmin(bytes(data)))
