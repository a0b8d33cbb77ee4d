"""Splitting, stripping and replacing of a symbolic sequence (part of :class:`.seq.SymSequence`).

Each method examines positions as the C loop it stands for would, one recorded branch per
position, and builds its results with the subclass's ``_build``; the concrete results follow
Python's own rules (``split`` with no separator splits on runs of whitespace and keeps the rest's
outer whitespace when ``maxsplit`` stops it, as ``str.split`` does).
"""

from __future__ import annotations

from .conditions import disjunction, in_ranges
from .symbolic import concrete


class SplitMethods:
    """The splitting, stripping and replacing methods of :class:`.seq.SymSequence`."""

    # -- splitting -----------------------------------------------------------------------------------
    def _space(self, e):
        return in_ranges(e, self._whitespace)

    def split(self, sep=None, maxsplit=-1):
        maxsplit = concrete(maxsplit)
        if sep is None:
            return self._split_space(maxsplit)
        needle = self._needle(sep)
        if not needle:
            raise ValueError("empty separator")
        pieces, begin = [], 0
        while maxsplit < 0 or len(pieces) < maxsplit:
            pos = self.find(sep, begin)
            if pos < 0:
                break
            pieces.append(self[begin:pos])
            begin = pos + len(needle)
        pieces.append(self[begin:])
        return pieces

    def _split_space(self, maxsplit: int) -> list:
        pieces, pos, n = [], 0, len(self._e)
        while True:
            while pos < n and self._space(self._e[pos]):
                pos += 1
            if pos == n:
                return pieces
            if 0 <= maxsplit <= len(pieces):  # the rest, its trailing whitespace kept (as str.split)
                pieces.append(self._build(self._e[pos:n]))
                return pieces
            begin = pos
            while pos < n and not self._space(self._e[pos]):
                pos += 1
            pieces.append(self._build(self._e[begin:pos]))

    def rsplit(self, sep=None, maxsplit=-1):
        maxsplit = concrete(maxsplit)
        if maxsplit < 0:
            return self.split(sep)
        if sep is None:
            return self._rsplit_space(maxsplit)
        needle = self._needle(sep)
        if not needle:
            raise ValueError("empty separator")
        pieces, end = [], len(self._e)
        while len(pieces) < maxsplit:
            pos = self.rfind(sep, 0, end)
            if pos < 0:
                break
            pieces.append(self._build(self._e[pos + len(needle):end]))
            end = pos
        pieces.append(self._build(self._e[:end]))
        return pieces[::-1]

    def _rsplit_space(self, maxsplit: int) -> list:
        pieces, pos = [], len(self._e)
        while True:
            while pos > 0 and self._space(self._e[pos - 1]):
                pos -= 1
            if pos == 0:
                return pieces[::-1]
            if len(pieces) >= maxsplit:  # the rest, its leading whitespace kept (as str.rsplit)
                pieces.append(self._build(self._e[0:pos]))
                return pieces[::-1]
            end = pos
            while pos > 0 and not self._space(self._e[pos - 1]):
                pos -= 1
            pieces.append(self._build(self._e[pos:end]))

    def partition(self, sep):
        needle = self._needle(sep)
        if not needle:
            raise ValueError("empty separator")
        pos = self.find(sep)
        if pos < 0:
            return self, self._build([]), self._build([])
        return self._build(self._e[:pos]), self._build(needle), self[pos + len(needle):]

    def rpartition(self, sep):
        needle = self._needle(sep)
        if not needle:
            raise ValueError("empty separator")
        pos = self.rfind(sep)
        if pos < 0:
            return self._build([]), self._build([]), self
        return self._build(self._e[:pos]), self._build(needle), self[pos + len(needle):]

    # -- stripping -----------------------------------------------------------------------------------
    def _strip_test(self, chars):
        if chars is None:
            return self._space
        theirs = self._needle(chars)
        return lambda e: disjunction(e == c for c in theirs)

    def _stripped(self, chars, left: bool, right: bool):
        test = self._strip_test(chars)
        begin, end = 0, len(self._e)
        if left:
            while begin < end and test(self._e[begin]):
                begin += 1
        if right:
            while end > begin and test(self._e[end - 1]):
                end -= 1
        return self._build(self._e[begin:end])

    def strip(self, chars=None):
        return self._stripped(chars, True, True)

    def lstrip(self, chars=None):
        return self._stripped(chars, True, False)

    def rstrip(self, chars=None):
        return self._stripped(chars, False, True)

    def removeprefix(self, prefix):
        needle = self._needle(prefix)
        return self._build(self._e[len(needle):]) if needle and self.startswith(prefix) else self

    def removesuffix(self, suffix):
        needle = self._needle(suffix)
        return self._build(self._e[:-len(needle)]) if needle and self.endswith(suffix) else self

    def replace(self, old, new, count=-1):
        old_e, new_e = self._needle(old), self._needle(new)
        count = concrete(count)
        if not old_e:
            slots = len(self._e) + 1
            limit = slots if count < 0 else min(count, slots)
            out: list = []
            for i in range(slots):
                if i < limit:
                    out.extend(new_e)
                if i < len(self._e):
                    out.append(self._e[i])
            return self._build(out)
        out, pos, done, n = [], 0, 0, len(self._e)
        while pos <= n - len(old_e) and (count < 0 or done < count):
            if self._window(pos, old_e):
                out.extend(new_e)
                pos += len(old_e)
                done += 1
            else:
                out.append(self._e[pos])
                pos += 1
        out.extend(self._e[pos:])
        return self._build(out)

    def splitlines(self, keepends=False):
        keepends = bool(concrete(keepends))
        breaks = self._line_breaks()
        lines, begin, pos, n = [], 0, 0, len(self._e)
        while pos < n:
            e = self._e[pos]
            if in_ranges(e, breaks):
                end = pos + 1
                if e == 0x0D and end < n and self._e[end] == 0x0A:
                    end += 1
                lines.append(self._build(self._e[begin:end if keepends else pos]))
                begin = pos = end
            else:
                pos += 1
        if begin < n:
            lines.append(self[begin:])
        return lines

    def _line_breaks(self) -> tuple[tuple[int, int], ...]:
        raise NotImplementedError
