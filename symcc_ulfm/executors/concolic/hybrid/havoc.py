"""The hybrid half of the concolic executor: havoc mutations run concretely after a symbolic run.

A symbolic run is precise but slow; a concrete execution of a parser is a few hundred microseconds.
As QSYM and SymCC pair a concolic engine with AFL, :meth:`~..executor.ConcolicExecutor.run` spends
a bounded share of its own time (options ``mutate_share``, ``mutations``; or a fixed count of
executions, ``mutate_clock`` off) on a few prefixes of its input (:func:`truncations`: a text that
ends inside a value) and then on AFL-style *havoc* mutants of its input and of the inputs it found
(:class:`Mutator`: bit and byte flips, interesting values, arithmetic, chunk deletion, insertion,
duplication and overwrite, truncation, interesting values in the last 32 bytes (trailers found by
seeking from the end), deletion and copying of *delimited* chunks (from a byte to a later
occurrence of the same byte: an XML element, a line, a quoted string, which random chunks rarely
cut exactly), splices with other known inputs, and dictionary words inserted, overwritten or
appended), measures each with the executor's own concrete path (the same tracer and classification
as ``measure``), and keeps only those that reach an edge new to the executor's process
(:func:`hybrid`; hit counts alone do not count: a mutant is a new queue entry, and the queue must
not fill with loop-count variants).

The dictionary (:func:`dictionary`) is what the symbolic run saw the input compared with:
constant strings and bytes of ``==``, ``find``/``startswith``/``split`` separators and dict/set
keys (:func:`..expressions.path.token`), the operands of comparisons with opaque values
(:mod:`..values.opaque`), and the integer constants of the recorded branch conditions in the
encodings an input would hold them in (libFuzzer's comparison tracing, fed by the engine's own
record), with the literals and samples of the regular expressions the input was matched against
(:func:`.module_words.regex_words`). A second pool, the words of the target's own modules
(:mod:`.module_words`), is drawn from in :data:`CONSTANT_SHARE` of the dictionary edits.

Everything random comes from the :class:`random.Random` passed in (the executor seeds it from
the input's SHA-256 and its ``mutate_seed`` option): the same input, options and process
history give the same mutants.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ....core.coverage import edge_of
from ..expressions import expr as E
from ..expressions import path as P
from .module_words import regex_words

INTERESTING_8 = (0, 1, 16, 32, 64, 100, 127, 128, 255, 0x80 - 1, 0xFF - 1)
INTERESTING_16 = (0, 128, 255, 256, 512, 1000, 1024, 4096, 0x7FFF, 0x8000, 0xFFFF, 0xFF7F)
INTERESTING_32 = (0, 1, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFF7F)
TEXT_BYTES = b" \t\r\n0123456789:;,.=-+/\\\"'<>[]{}()@#%&?!*_|~azAZ"
MAX_WORDS = 256
CONSTANT_SHARE = 0.3  # share of dictionary edits that take a target module's constant (see Mutator)
MAX_TRUNCATIONS = 16  # prefixes of a run's input measured before its havoc mutants (truncations)
_CONDITION_NODES = 64  # nodes examined per recorded branch condition for integer constants


def _int_words(value: int) -> list[bytes]:
    if 0 <= value <= 255:
        return [bytes((value,))]
    words = [str(value).encode()]
    for width in (2, 4, 8):
        try:
            words.append(value.to_bytes(width, "little", signed=value < 0))
            words.append(value.to_bytes(width, "big", signed=value < 0))
            break
        except OverflowError:
            continue
    return words


def _word(value) -> list[bytes]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return _int_words(int(value))
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray)) and 0 < len(value) <= P.MAX_TOKEN_LENGTH:
        return [bytes(value)]
    return []


def _constants(node: E.Node) -> Iterable[int]:
    """Integer constants compared in one branch condition (a bounded walk of its top)."""
    stack, seen = [node], 0
    while stack and seen < _CONDITION_NODES:
        current = stack.pop()
        seen += 1
        if current.op in (E.EQ, E.LT, E.LE):
            for arg in current.args:
                if arg.op == E.CONST:
                    yield arg.val
        if current.op in (E.NOT, E.BAND, E.BOR, E.EQ, E.LT, E.LE):
            stack.extend(reversed(current.args))


def dictionary(entries: Sequence, compares: Sequence, tokens: Iterable, patterns: Iterable = ()) -> list[bytes]:
    """The words a run's record suggests, in a deterministic order, at most :data:`MAX_WORDS`:
    tokens, comparison operands, the words of the patterns matched against the input, and the
    integer constants of branch conditions."""
    words: dict[bytes, None] = {}

    def add(value) -> None:
        for word in _word(value):
            if len(words) < MAX_WORDS:
                words.setdefault(word, None)

    for value in tokens:
        add(value)
    for _site, left, right in compares:
        add(left)
        add(right)
    for pattern, flags in patterns:
        for word in regex_words(pattern, flags):
            add(word)
    for kind, node, _site in entries:
        if kind == P.BRANCH and len(words) < MAX_WORDS:
            for value in _constants(node):
                add(value)
    return list(words)


class Mutator:
    """AFL-style havoc: a stack of 1, 2, 4 or 8 random edits of one input (see the module docstring).

    ``words`` are the run's dictionary, ``constants`` the target modules' words
    (:mod:`.module_words`); a dictionary edit takes a constant with probability
    :data:`CONSTANT_SHARE` when there are both, so that the run's words keep priority.
    """

    def __init__(self, rng: random.Random, words: Sequence[bytes] = (), max_length: int = 4096,
                 constants: Sequence[bytes] = ()):
        self.rng = rng
        self.words = list(words)
        self.constants = list(constants)
        self.max_length = max_length
        self._ops = [self._flip_bit, self._set_byte, self._interesting, self._arith, self._text_byte,
                     self._delete, self._insert, self._duplicate, self._overwrite, self._truncate,
                     self._tail_interesting, self._delimited_edit]
        if self.words or self.constants:
            self._ops += [self._word_insert, self._word_overwrite, self._word_insert, self._word_overwrite,
                          self._word_append]

    def havoc(self, data: bytes, partners: Sequence[bytes] = ()) -> bytes:
        rng = self.rng
        buf = bytearray(data)
        if partners and rng.random() < 0.15:
            self._splice(buf, rng.choice(partners))
        for _ in range(1 << rng.randrange(4)):
            rng.choice(self._ops)(buf)
        if len(buf) > self.max_length:
            del buf[self.max_length:]
        return bytes(buf)

    # -- edits (each leaves ``buf`` a valid bytearray, possibly empty) ---------------------------
    def _pos(self, buf: bytearray) -> int:
        return self.rng.randrange(len(buf))

    def _flip_bit(self, buf: bytearray) -> None:
        if buf:
            buf[self._pos(buf)] ^= 1 << self.rng.randrange(8)

    def _set_byte(self, buf: bytearray) -> None:
        if buf:
            buf[self._pos(buf)] = self.rng.randrange(256)

    def _text_byte(self, buf: bytearray) -> None:
        if buf:
            buf[self._pos(buf)] = self.rng.choice(TEXT_BYTES)

    def _interesting(self, buf: bytearray) -> None:
        rng = self.rng
        width = rng.choice((1, 2, 4))
        if len(buf) < width:
            return
        table = {1: INTERESTING_8, 2: INTERESTING_16, 4: INTERESTING_32}[width]
        pos = rng.randrange(len(buf) - width + 1)
        buf[pos:pos + width] = rng.choice(table).to_bytes(width, rng.choice(("little", "big")))

    def _arith(self, buf: bytearray) -> None:
        if buf:
            pos = self._pos(buf)
            buf[pos] = (buf[pos] + self.rng.choice((-1, 1)) * self.rng.randint(1, 35)) & 0xFF

    def _chunk(self, buf: bytearray) -> tuple[int, int]:
        start = self._pos(buf)
        return start, start + self.rng.randint(1, min(32, len(buf) - start))

    def _delete(self, buf: bytearray) -> None:
        if len(buf) > 1:
            start, stop = self._chunk(buf)
            del buf[start:stop]

    def _insert(self, buf: bytearray) -> None:
        rng = self.rng
        pos = rng.randint(0, len(buf))
        fill = rng.choice(TEXT_BYTES) if rng.random() < 0.5 else rng.randrange(256)
        buf[pos:pos] = bytes((fill,)) * rng.randint(1, 8)

    def _duplicate(self, buf: bytearray) -> None:
        if buf:
            start, stop = self._chunk(buf)
            pos = self.rng.randint(0, len(buf))
            buf[pos:pos] = buf[start:stop]

    def _overwrite(self, buf: bytearray) -> None:
        if len(buf) > 1:
            start, stop = self._chunk(buf)
            pos = self.rng.randrange(len(buf) - (stop - start) + 1)
            buf[pos:pos + stop - start] = buf[start:stop]

    def _delimited(self, buf: bytearray) -> tuple[int, int] | None:
        """A chunk from a random position to the 1st..4th next occurrence of the byte there (an
        element from its ``<`` to the next sibling's, a line, a quoted string, a list item), or None."""
        if not buf:
            return None
        start = self._pos(buf)
        stop = start
        for _ in range(self.rng.randint(1, 4)):
            stop = buf.find(buf[start], stop + 1)
            if stop < 0:
                return None
        return start, stop

    def _delimited_edit(self, buf: bytearray) -> None:
        """Delete a delimited chunk, or copy it before another occurrence of its first byte (one
        that may be elsewhere in the structure: a key copied into a list)."""
        chunk = self._delimited(buf)
        if chunk is None:
            return
        start, stop = chunk
        if self.rng.random() < 0.5:
            del buf[start:stop]
            return
        pos = buf.find(buf[start], self._pos(buf))
        pos = pos if pos >= 0 else buf.find(buf[start])
        buf[pos:pos] = buf[start:stop]

    def _truncate(self, buf: bytearray) -> None:
        """Cut the input at a random position (the end of text inside a value)."""
        if buf:
            del buf[self._pos(buf):]

    def _tail_interesting(self, buf: bytearray) -> None:
        """An interesting value within the last 32 bytes (trailers read by seeking from the end)."""
        rng = self.rng
        width = rng.choice((1, 2, 4, 8))
        if len(buf) < width:
            return
        pos = len(buf) - width - rng.randrange(min(32, len(buf)) - width + 1)
        value = rng.choice((*INTERESTING_8, len(buf), len(buf) - 1, len(buf) - 32)) % (1 << (8 * width))
        buf[pos:pos + width] = value.to_bytes(width, rng.choice(("little", "big")))

    def _word(self) -> bytes:
        if self.constants and (not self.words or self.rng.random() < CONSTANT_SHARE):
            return self.rng.choice(self.constants)
        return self.rng.choice(self.words)

    def _word_insert(self, buf: bytearray) -> None:
        pos = self.rng.randint(0, len(buf))
        buf[pos:pos] = self._word()

    def _word_append(self, buf: bytearray) -> None:
        buf += self._word()

    def _word_overwrite(self, buf: bytearray) -> None:
        word = self._word()
        if len(buf) >= len(word):
            pos = self.rng.randint(0, len(buf) - len(word))
            buf[pos:pos + len(word)] = word
        else:
            buf[:] = word

    def _splice(self, buf: bytearray, other: bytes) -> None:
        if not buf or not other:
            return
        cut = self.rng.randint(0, len(buf))
        buf[cut:] = other[self.rng.randint(0, len(other)):]


@dataclass
class Hybrid:
    """What one mutation phase produced."""

    kept: list[bytes] = field(default_factory=list)  # mutants that reached an edge new to the process
    findings: list[tuple[object, bytes]] = field(default_factory=list)  # (Outcome, input), one per new signature
    executions: int = 0
    cut: bool = False  # the clock ended the phase before its count (see hybrid)
    new_coverage: int = 0  # edges first reached by a kept mutant
    seconds: float = 0.0  # the phase's duration (set by the executor)
    words: int = 0  # dictionary size (set by the executor)
    text_children: int = 0  # text-comparison input-to-state children measured first (set by the executor)
    regex_children: int = 0  # regex input-to-state children measured next (set by the executor)


def truncations(data: bytes) -> list[bytes]:
    """The prefixes of ``data`` cut at every position, or for a longer input at half of
    :data:`MAX_TRUNCATIONS` evenly spaced positions and at each of the last half as many bytes
    (a text ending inside its last value), shortest first, the empty input included. Havoc cuts
    at random positions too; this is the cheap deterministic part (every run pays for it)."""
    if len(data) <= MAX_TRUNCATIONS:
        cuts = range(len(data))
    else:
        half = MAX_TRUNCATIONS // 2
        cuts = sorted({len(data) * k // half for k in range(half)} | set(range(len(data) - half, len(data))))
    return [data[:cut] for cut in cuts]


def hybrid(measure: Callable, mutator: Mutator, bases: Sequence[bytes], partners: Sequence[bytes],
           covered: set[int], reported: set[tuple[str, str]], *, until: float, limit: int,
           first: Sequence[bytes] = (), at_least: int = 0, deadline: float = float("inf"),
           clock: Callable[[], float] = time.monotonic) -> Hybrid:
    """Measure ``first`` (such as :func:`truncations`), then havoc mutants of ``bases`` and of the
    mutants kept on the way, up to ``limit`` in all and until ``clock() >= until`` (the first
    ``at_least`` of them until ``deadline``: a count that does not depend on the machine's load;
    ``until = deadline`` and ``at_least = limit`` make it exactly ``limit`` unless ``deadline`` comes
    first); keep those with an edge not in ``covered`` (edge ids, updated), and report a finding for
    each (kind, signature) not in ``reported`` (updated). ``cut`` reports that the clock ended it
    before ``limit`` (the pool running dry, or ``4 * limit`` attempts spent on repeated mutants, does
    not count)."""
    out = Hybrid()
    pool = [b for b in bases]
    tried: set[bytes] = set(bases)
    attempts = 0
    scheduled = iter(first)
    while pool and out.executions < limit and attempts < 4 * limit:
        now = clock()
        if now >= until and (out.executions >= at_least or now >= deadline):
            out.cut = True
            break
        attempts += 1
        mutant = next(scheduled, None)
        if mutant is None:
            mutant = mutator.havoc(mutator.rng.choice(pool), partners)
        if mutant in tried:
            continue
        tried.add(mutant)
        measured = measure(mutant)
        out.executions += 1
        outcome = measured.outcome
        if outcome.is_finding and (outcome.kind, outcome.signature) not in reported:
            reported.add((outcome.kind, outcome.signature))
            out.findings.append((outcome, mutant))
        new = {edge_of(c) for c in measured.coverage} - covered
        if new:
            covered.update(new)
            out.new_coverage += len(new)
            out.kept.append(mutant)
            if not outcome.terminal:
                pool.append(mutant)
    return out


__all__ = ["Hybrid", "Mutator", "dictionary", "hybrid", "truncations"]
