"""Numbers written as text, symbolically: ``int(text, base)``, ``bytes.fromhex``, ``chr`` and
``ord`` over symbolic str and bytes (the builtins shims of :mod:`..models.builtinslib` call these).

The value is an expression of the input's code units and the syntax is branches, following
CPython's grammar; the concrete result, or the exception, always comes from Python itself, and
where the model and Python disagree the text is pinned and Python's answer kept.
"""

from __future__ import annotations

import functools
import sys
import unicodedata

from ..expressions import expr as E
from .conditions import concrete_value, conjunction, disjunction, in_ranges, ite
from .seq import SymSequence
from .symbolic import SymInt, concrete
from .symbytes import ASCII_SPACE, SymBytes
from .symstr import SymStr, char_class, code_point_ranges, scope

INT_DIGITS_LIMIT = 4300  # CPython's default limit on the digits int() converts
_ALL_DIGITS_MAX = 64  # longest text after the sign and prefix whose digits are also asked for at once


@functools.cache
def _zeros(below: int) -> tuple[int, ...]:
    """Code points of the decimal digit zero of every script (each run of ten digits starts at one)."""
    return tuple(z for first, last in code_point_ranges("isdecimal", below) for z in range(first, last + 1, 10)
                 if unicodedata.decimal(chr(z), -1) == 0)


def _digit(e, base: int):
    """(is a digit of ``base``, its value) for code point ``e``."""
    top = e.node.hi + 1 if isinstance(e, SymInt) else e + 1
    decimal = [(z, z + min(base, 10) - 1) for z in _zeros(scope(top))]
    letters = []
    if base > 10:
        letters = [(0x61, 0x61 + base - 11), (0x41, 0x41 + base - 11)]
    if isinstance(e, SymInt):
        lo, hi = e.node.lo, e.node.hi
        decimal = [r for r in decimal if r[0] <= hi and r[1] >= lo]
    else:
        decimal = [r for r in decimal if r[0] <= e <= r[1]]
    is_digit = in_ranges(e, decimal + letters)
    value = e - 0x37
    value = ite(e >= 0x61, e - 0x57, value)
    for zero, last in decimal:
        value = ite(in_ranges(e, ((zero, last),)), e - zero, value)
    return is_digit, value


def to_int(text, base=10):
    """``int(text, base)`` for a SymStr or SymBytes: the value is symbolic, the syntax is branches.

    Follows CPython's grammar (whitespace, sign, ``0x``/``0o``/``0b`` prefix for bases 16/8/2,
    digits); underscores, base 0 and texts longer than Python's digit limit are concretised. The
    concrete result (or the exception) always comes from Python's own ``int``.
    """
    base = concrete(base)
    plain = text._plain()
    try:
        real, error = int(plain, base), None
    except (ValueError, TypeError) as exc:
        real, error = None, exc
    elems = text._e
    if (not isinstance(base, int) or not 2 <= base <= 36 or len(elems) > INT_DIGITS_LIMIT
            or any(concrete_value(e) == 0x5F for e in elems)):
        text.concretize()
        if error is not None:
            raise error
        return real
    if isinstance(text, SymBytes):
        def space(e):
            return in_ranges(e, ASCII_SPACE)
    else:
        def space(e):
            return char_class(e, "isspace")
    n, pos = len(elems), 0
    while pos < n and space(elems[pos]):
        pos += 1
    negative = False
    if pos < n and elems[pos] == 0x2D:
        negative, pos = True, pos + 1
    elif pos < n and elems[pos] == 0x2B:
        pos += 1
    prefix = {16: (0x78, 0x58), 8: (0x6F, 0x4F), 2: (0x62, 0x42)}.get(base)
    if prefix and pos + 1 < n and conjunction(
            (elems[pos] == 0x30, disjunction(elems[pos + 1] == c for c in prefix))):
        pos += 2
        if not (pos < n and _digit(elems[pos], base)[0]):
            pos -= 1  # "0x" with no digit after it: only the "0" is a digit (and then "x" is an error)
    start, value = pos, 0
    if error is not None and 1 < n - start <= _ALL_DIGITS_MAX:
        every = conjunction([_digit(e, base)[0] for e in elems[start:]])
        if not concrete_value(every):
            # a text int() rejects: recorded (not taken) so that its negation writes every digit at
            # once; char by char, each child would fail inside int() like its parent, with no new
            # coverage to prefer it
            bool(every)
    while pos < n:
        ok, digit = _digit(elems[pos], base)
        if not ok:
            break
        value = value * base + digit
        pos += 1
    if pos == n and pos > start and isinstance(text._len, E.Node) and SymInt(text._len) > n:
        pass  # not taken: the digits ran to the end of the input, whose negation is a longer number
    valid = pos > start
    while pos < n and space(elems[pos]):
        pos += 1
    valid = valid and pos == n
    if valid != (error is None) or (valid and concrete_value(-value if negative else value) != real):
        text.concretize()  # the model disagrees with Python: keep Python's answer, honestly pinned
        if error is not None:
            raise error
        return real
    if error is not None:
        raise error
    return -value if negative else value


def fromhex(text):
    """``bytes.fromhex(text)`` for a SymStr: whitespace between pairs, two hex digits per byte."""
    elems, n, pos, out = text._e, len(text._e), 0, []
    try:
        real, error = bytes.fromhex(text._plain()), None
    except ValueError as exc:
        real, error = None, exc
    while True:
        while pos < n and in_ranges(elems[pos], ASCII_SPACE):
            pos += 1
        if pos >= n:
            break
        hi_ok, hi = _digit(elems[pos], 16)
        if not (hi_ok and elems[pos] < 0x80 and pos + 1 < n):
            break
        lo_ok, lo = _digit(elems[pos + 1], 16)
        if not (lo_ok and elems[pos + 1] < 0x80):
            break
        out.append(hi * 16 + lo)
        pos += 2
    done = pos >= n
    if done != (error is None) or (done and bytes(concrete_value(e) for e in out) != real):
        text.concretize()
        if error is not None:
            raise error
        return real
    if error is not None:
        raise error
    return SymBytes._build(out)


def chr_of(code):
    """``chr(code)`` for a SymInt: the range check is a branch, the character keeps the expression."""
    if not (0 <= code <= sys.maxunicode):
        raise ValueError("chr() arg not in range(0x110000)")
    return SymStr._build([code])


def ord_of(char):
    """``ord(char)`` for a one-character SymStr or SymBytes: its element."""
    if isinstance(char, SymSequence):
        if len(char._e) != 1:
            kind = "string" if isinstance(char, str) else "bytes"
            raise TypeError(f"ord() expected a character, but {kind} of length {len(char._e)} found")
        return char._e[0]
    return ord(char)
