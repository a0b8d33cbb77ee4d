"""Symbolic ``str``: what ``bytes.decode`` gives a parser, and the str operations parsers use.

:class:`SymStr` is a ``str`` subclass holding the concrete text, whose elements are code points
(see :mod:`.seq` for the shared protocol: indexing, slicing, ``==``, ``in``, ``startswith``,
``find``, ``split``/``partition``/``splitlines``, the ``strip`` family, ``replace``, ``join``).
Here: ``lower``/``upper``, the ``is...`` tests, ``encode``, and the functions the shims route to:
:func:`decode` (numbers written as text are in :mod:`.numbers_as_text`).

Character classes are exact for every code point: a test becomes a disjunction of the code
point ranges (computed once from Python's own ``str`` methods) that intersect the element's
static interval. Case mapping is modelled for ASCII; a non-ASCII character is pinned and mapped
concretely, and the ASCII-ness of the others is one recorded branch (it is also what lets
``decode``/``encode`` with utf-8 keep ASCII characters symbolic while pinning the rest).
"""

from __future__ import annotations

import codecs
import functools
import sys
import unicodedata

from ..expressions import expr as E
from .conditions import concrete_value, conjunction, disjunction, in_ranges, is_symbolic, ite, negation
from .opaque import rendered
from .seq import SymSequence, concrete_deep, pin_unmodelled
from .symbolic import SymBool, SymInt, concrete
from .symbytes import SymBytes, ascii_lower, ascii_upper

_MODELLED = {"find", "index", "rfind", "rindex", "count", "startswith", "endswith", "split", "rsplit",
             "partition", "rpartition", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "replace",
             "splitlines", "join", "encode", "lower", "upper", "isdigit", "isdecimal", "isnumeric", "isalpha",
             "isalnum", "isspace", "isupper", "islower", "isascii"}
_CLASS_LEVEL = {"maketrans"}
_LINE_BREAKS = ((0x0A, 0x0D), (0x1C, 0x1E), (0x85, 0x85), (0x2028, 0x2029))
_SCOPES = (0x100, 0x10000, sys.maxunicode + 1)


def code_point_ranges(test: str, below: int = sys.maxunicode + 1) -> tuple[tuple[int, int], ...]:
    """Inclusive ranges of the code points ``c < below`` for which ``test`` holds on ``chr(c)``.

    Computed for the smallest of Latin-1, the BMP or all of Unicode that covers ``below`` (a text
    decoded from bytes rarely needs more than the first).
    """
    return _ranges(test, scope(below))


def scope(below: int) -> int:
    return next((s for s in _SCOPES if below <= s), _SCOPES[-1])


@functools.cache
def _ranges(test: str, scope: int) -> tuple[tuple[int, int], ...]:
    if test == "title":
        def holds(ch):
            return unicodedata.category(ch) == "Lt"
    else:
        method = getattr(str, test)

        def holds(ch):
            return method(ch)
    ranges, begin = [], None
    for cp in range(scope):
        if holds(chr(cp)):
            if begin is None:
                begin = cp
        elif begin is not None:
            ranges.append((begin, cp - 1))
            begin = None
    if begin is not None:
        ranges.append((begin, scope - 1))
    return tuple(ranges)


def char_class(e, test: str):
    """Whether code point ``e`` satisfies ``str.<test>`` (exact; a condition when ``e`` is symbolic)."""
    if not isinstance(e, SymInt):
        return getattr(str, test)(chr(e)) if test != "title" else unicodedata.category(chr(e)) == "Lt"
    lo, hi = e.node.lo, e.node.hi
    near = [(max(a, lo), min(b, hi)) for a, b in code_point_ranges(test, hi + 1) if a <= hi and b >= lo]
    return in_ranges(e, near)


def ascii_guard(elems: list) -> bool:
    """Record one branch "these symbolic elements are ASCII" for the elements that are so now.

    Returns whether every element is ASCII. Elements that are not are left to the caller (which
    pins them); the branch is only recorded where an element could leave the ASCII range.
    """
    conds = [e < 0x80 for e in elems if isinstance(e, SymInt) and e.node.hi >= 0x80 and e.node.val < 0x80]
    guard = conjunction(conds)
    if isinstance(guard, SymBool):
        bool(guard)
    return all(concrete_value(e) < 0x80 for e in elems)


class SymStr(SymSequence, str):
    """Text carrying one expression per code point; see the module docstring."""

    def __new__(cls, text: str, elems: list, length: E.Node | None = None):
        self = super().__new__(cls, text)
        self._e = elems
        self._len = length
        return self

    @classmethod
    def _build(cls, elems: list, length=None) -> str:
        node = length.node if isinstance(length, SymInt) else None
        text = "".join(chr(concrete_value(e)) for e in elems)
        return cls(text, elems, node) if node is not None or is_symbolic(elems) else text

    @classmethod
    def _elems(cls, value) -> list | None:
        if isinstance(value, SymStr):
            return value._e
        if isinstance(value, str):
            return [ord(c) for c in value]
        return None

    def _unit(self, e):
        return self._build([e])

    def _plain(self) -> str:
        return str.__getitem__(self, slice(None))

    def _space(self, e):
        return char_class(e, "isspace")

    def _line_breaks(self):
        return _LINE_BREAKS

    def _needle(self, sub) -> list:
        theirs = self._elems(sub)
        if theirs is None:
            raise TypeError(f"must be str, not {type(sub).__name__}")
        return theirs

    def __str__(self) -> str:
        return self

    def __repr__(self) -> str:
        return rendered(repr(self._plain()), self)

    def __format__(self, spec: str) -> str:
        return rendered(format(self._plain(), spec), self)

    def __rmod__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return rendered(other % self._plain(), self)

    def __int__(self) -> int:
        """Only reached from C code outside the instrumented modules: ``int(s)`` on the pinned text."""
        return int(self.concretize())

    def encode(self, encoding: str = "utf-8", errors: str = "strict"):
        return encode(self, encoding, errors)

    def _mapped(self, ascii_map, name: str):
        ascii_guard(self._e)
        out: list = []
        for e in self._e:
            if concrete_value(e) < 0x80:
                out.append(ascii_map(e))
            else:
                out.extend(ord(c) for c in getattr(str, name)(chr(concrete(e))))
        return self._build(out)

    def lower(self):
        return self._mapped(ascii_lower, "lower")

    def upper(self):
        return self._mapped(ascii_upper, "upper")

    def _all(self, test: str):
        if not self._e:
            return False
        return conjunction(char_class(e, test) for e in self._e)

    def isdigit(self):
        return self._all("isdigit")

    def isdecimal(self):
        return self._all("isdecimal")

    def isnumeric(self):
        return self._all("isnumeric")

    def isalpha(self):
        return self._all("isalpha")

    def isalnum(self):
        return self._all("isalnum")

    def isspace(self):
        return self._all("isspace")

    def isascii(self):
        return conjunction(e < 0x80 for e in self._e)

    def _cased(self, own: str, other: str):
        """str.isupper/islower: no character of the other case (or titlecase), at least one of its own."""
        none_other = conjunction(negation(disjunction((char_class(e, other), char_class(e, "title"))))
                                 for e in self._e)
        some_own = disjunction(char_class(e, own) for e in self._e)
        return conjunction((none_other, some_own))

    def isupper(self):
        return self._cased("isupper", "islower")

    def islower(self):
        return self._cased("islower", "isupper")


pin_unmodelled(SymStr, str, _MODELLED | _CLASS_LEVEL, "character")


# -- codecs ----------------------------------------------------------------------------------------
def _codec(encoding) -> str | None:
    try:
        name = codecs.lookup(encoding).name
    except (LookupError, TypeError):
        return None
    return {"ascii": "ascii", "iso8859-1": "latin-1", "utf-8": "utf-8"}.get(name)


def decode(data: SymBytes, encoding="utf-8", errors="strict"):
    """``data.decode(encoding, errors)`` with symbolic characters (ascii, latin-1, utf-8)."""
    codec, errors = _codec(concrete_deep(encoding)), concrete_deep(errors)
    raw = data._plain()
    if codec is None or not isinstance(errors, str):
        return bytes.decode(data.concretize(), concrete_deep(encoding), errors)
    elems = data._e
    if codec == "latin-1":
        return SymStr._build(list(elems), SymInt(data._len) if data._len is not None else None)
    if codec == "ascii" and errors in ("surrogateescape", "replace"):
        high = (lambda e: e + 0xDC00) if errors == "surrogateescape" else (lambda e: 0xFFFD)
        out = [ite(e < 0x80, e, high(e)) for e in elems]
        return SymStr._build(out, SymInt(data._len) if data._len is not None else None)
    try:
        bytes.decode(raw, codec, errors)
    except UnicodeDecodeError:
        every = conjunction(e < 0x80 for e in elems)
        if isinstance(every, SymBool):
            bool(every)  # recorded as not taken: its negation is the all-ASCII child that decodes
        for e in elems:
            if concrete_value(e) >= 0x80:
                concrete(e)
        raise
    ascii_guard(elems)
    out: list = []
    run: list = []
    for e in elems + [0]:
        if concrete_value(e) < 0x80:
            if run:
                out.extend(ord(c) for c in bytes(concrete(x) for x in run).decode(codec, errors))
                run = []
            out.append(e)
        else:
            run.append(e)
    same = all(concrete_value(e) < 0x80 for e in elems) and data._len is not None
    return SymStr._build(out[:-1], SymInt(data._len) if same else None)


def encode(text: SymStr, encoding="utf-8", errors="strict"):
    """``text.encode(encoding, errors)`` with symbolic bytes (ascii, latin-1, utf-8)."""
    codec, errors = _codec(concrete_deep(encoding)), concrete_deep(errors)
    plain = text._plain()
    if codec is None or not isinstance(errors, str):
        return str.encode(text.concretize(), concrete_deep(encoding), errors)
    limit = 0x100 if codec == "latin-1" else 0x80
    conds = [e < limit for e in text._e if isinstance(e, SymInt) and e.node.hi >= limit and e.node.val < limit]
    guard = conjunction(conds)
    try:
        str.encode(plain, codec, errors)
    except UnicodeEncodeError:
        text.concretize()
        raise
    if isinstance(guard, SymBool):
        bool(guard)
    out: list = []
    for e in text._e:
        if concrete_value(e) < limit:
            out.append(e)
        else:
            out.extend(chr(concrete(e)).encode(codec, errors))
    return SymBytes._build(out, SymInt(text._len) if text._len is not None and codec != "utf-8" else None)


__all__ = ["SymStr", "char_class", "decode", "encode"]


SymBytes.text = sys.modules[__name__]
