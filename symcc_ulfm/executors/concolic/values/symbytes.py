"""The symbolic input: a ``bytes`` subclass whose elements are symbolic ints.

It *is* a bytes object holding the concrete input, so the target sees real data and C code that
takes a buffer keeps working. The Python-level protocol is modelled symbolically (see
:mod:`.seq` for what bytes share with str): indexing (reading past the end is a branch on the
input's length), slicing, iteration, ``==``, ``in``, the scans (``find``, ``index``, ``count``,
``split``, ``partition``, ``strip`` ...), ``+``/``*``/``join``, ``decode`` (ascii, latin-1, utf-8;
see :mod:`.symstr`), ``hex``, ``lower``/``upper`` and the ``is...`` tests. Every other bytes method
pins all symbolic elements and runs on the concrete value.

Known gap: C code that reads the buffer directly where the engine cannot intercept the call (a
C method of another object, such as ``re`` pattern methods captured before the run) sees the
concrete bytes without a pin; :mod:`..tracing.shadow` closes the common doors for the modules it
instruments, and a child that diverges because of such a gap is reported in
``notes["diverged"]`` when it is run.
"""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

from ..expressions import expr as E
from .conditions import concrete_value, conjunction, disjunction, in_ranges, is_symbolic, ite, negation
from .opaque import opaque, rendered
from .seq import SymSequence, concrete_deep, pin_unmodelled
from .symbolic import SymBool, SymInt

_MODELLED = {"find", "index", "rfind", "rindex", "count", "startswith", "endswith", "split", "rsplit",
             "partition", "rpartition", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "replace",
             "splitlines", "join", "decode", "hex", "lower", "upper", "isdigit", "isalpha", "isalnum",
             "isspace", "isupper", "islower", "isascii"}
_CLASS_LEVEL = {"fromhex", "maketrans"}
ASCII_SPACE = ((9, 13), (32, 32))
ASCII_DIGIT = ((0x30, 0x39),)
ASCII_UPPER = ((0x41, 0x5A),)
ASCII_LOWER = ((0x61, 0x7A),)


def _elems_of(value) -> list | None:
    if isinstance(value, SymBytes):
        return value._e
    if isinstance(value, (bytes, bytearray, memoryview)):
        return list(bytes(value))
    return None


def hex_digit(nibble):
    """The ASCII code of a lowercase hex digit for a value 0..15."""
    return ite(nibble < 10, nibble + 0x30, nibble + 0x57)


def ascii_lower(e):
    return ite(in_ranges(e, ASCII_UPPER), e + 0x20, e)


def ascii_upper(e):
    return ite(in_ranges(e, ASCII_LOWER), e - 0x20, e)


class SymBytes(SymSequence, bytes):
    text: ClassVar[ModuleType]  # :mod:`.symstr` (built on this module), set when it is imported

    """Input bytes carrying expressions; see the module docstring for what is modelled."""

    _whitespace = ASCII_SPACE

    def __new__(cls, data: bytes, elems: list, length: E.Node | None = None):
        self = super().__new__(cls, data)
        self._e = elems
        self._len = length
        return self

    @classmethod
    def from_input(cls, data: bytes) -> SymBytes:
        return cls(data, [SymInt(E.var(i, b)) for i, b in enumerate(data)], E.length(len(data)))

    @classmethod
    def from_elements(cls, elems) -> bytes:
        """Like ``bytes(elems)``; the 0..255 range check is a recorded branch for symbolic elements."""
        elems = list(elems)
        for e in elems:
            if isinstance(e, (SymInt, SymBool)) and not (0 <= e <= 255):
                raise ValueError("bytes must be in range(0, 256)")
        return cls._build([e.as_int() if isinstance(e, SymBool) else e for e in elems])

    @classmethod
    def _build(cls, elems: list, length=None) -> bytes:
        node = length.node if isinstance(length, SymInt) else None
        data = bytes(concrete_value(e) for e in elems)
        return cls(data, elems, node) if node is not None or is_symbolic(elems) else data

    @classmethod
    def _elems(cls, value) -> list | None:
        return _elems_of(value)

    def _unit(self, e):
        return e

    def _plain(self) -> bytes:
        return bytes.__getitem__(self, slice(None))

    def _line_breaks(self):
        return ((10, 10), (13, 13))

    def __bytes__(self) -> bytes:
        return self.concretize()

    def __contains__(self, item):
        if isinstance(item, (int, SymInt, SymBool)):
            if not (0 <= item <= 255):
                raise ValueError("byte must be in range(0, 256)")
            return disjunction(e == item for e in self._e)
        if _elems_of(item) is None:
            raise TypeError(f"a bytes-like object is required, not '{type(item).__name__}'")
        return super().__contains__(item)

    def _needle(self, sub) -> list:
        if isinstance(sub, (int, SymInt)):
            return [sub]
        theirs = _elems_of(sub)
        if theirs is None:
            raise TypeError(f"argument should be integer or bytes-like object, not '{type(sub).__name__}'")
        return theirs

    def __str__(self) -> str:
        return rendered(str(self._plain()), self)

    def __repr__(self) -> str:
        return rendered(repr(self._plain()), self)

    def __rmod__(self, other):
        if not isinstance(other, (bytes, bytearray)):
            return NotImplemented
        return opaque(other % self.concretize())

    def decode(self, encoding: str = "utf-8", errors: str = "strict"):
        return self.text.decode(self, encoding, errors)

    def hex(self, *args):
        if args:
            return bytes.hex(self.concretize(), *(concrete_deep(a) for a in args))
        digits: list = []
        for e in self._e:
            digits.extend((hex_digit(e >> 4), hex_digit(e & 0xF)))
        return self.text.SymStr._build(digits)

    def lower(self):
        return self._build([ascii_lower(e) for e in self._e])

    def upper(self):
        return self._build([ascii_upper(e) for e in self._e])

    def _all(self, ranges):
        if not self._e:
            return False
        return conjunction(in_ranges(e, ranges) for e in self._e)

    def isdigit(self):
        return self._all(ASCII_DIGIT)

    def isalpha(self):
        return self._all(ASCII_UPPER + ASCII_LOWER)

    def isalnum(self):
        return self._all(ASCII_DIGIT + ASCII_UPPER + ASCII_LOWER)

    def isspace(self):
        return self._all(ASCII_SPACE)

    def isascii(self):
        return conjunction(e < 0x80 for e in self._e)

    def _cased(self, own, other):
        """bytes.isupper/islower: no character of the other case, at least one of its own."""
        if not self._e:
            return False
        none_other = conjunction(negation(in_ranges(e, other)) for e in self._e)
        some_own = disjunction(in_ranges(e, own) for e in self._e)
        return conjunction((none_other, some_own))

    def isupper(self):
        return self._cased(ASCII_UPPER, ASCII_LOWER)

    def islower(self):
        return self._cased(ASCII_LOWER, ASCII_UPPER)


pin_unmodelled(SymBytes, bytes, _MODELLED | _CLASS_LEVEL, "byte")


SymInt.bytes_type = SymBytes
