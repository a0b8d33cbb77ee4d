"""The symbolic input: a ``bytes`` subclass whose elements are symbolic ints.

It *is* a bytes object holding the concrete input, so the target sees real data and C code that
takes a buffer keeps working. The Python-level protocol is modelled symbolically: indexing,
slicing (symbolic bounds are pinned), iteration, ``len``, ``==``/``!=``, ``in``, ``startswith``,
``endswith``, ``find``/``index``/``rfind``/``rindex`` and ``split`` with a separator (scans that
record one branch per position, as a C loop would), ``+`` and ``*``. Every other bytes method
(``decode``, ``hex``, ``lower``, ...) pins all symbolic elements and runs on the concrete value.

Known gap: C code that reads the buffer directly where the engine cannot intercept the call
(``b"".join([x])``, or ``memoryview(x)`` outside the target's module) sees the concrete bytes
without a pin. :mod:`.shadow` closes the common doors (``bytes``, ``bytearray``, ``memoryview``,
C functions of imported modules) for the target's own module; a child that diverges because of
such a gap is reported in ``notes["diverged"]`` when it is run.
"""

from __future__ import annotations

from . import expr as E
from .symbolic import SymBool, SymInt, concrete, wrap

_MODELLED = {"find", "index", "rfind", "rindex", "startswith", "endswith", "split"}
_CLASS_LEVEL = {"fromhex", "maketrans"}


def _elems_of(value) -> list | None:
    if isinstance(value, SymBytes):
        return value._e
    if isinstance(value, (bytes, bytearray, memoryview)):
        return list(bytes(value))
    return None


def _is_symbolic(elems) -> bool:
    return any(type(e) is SymInt for e in elems)


def _conjunction(parts) -> bool | SymBool:
    """``all(parts)`` without asking for the truth of symbolic parts (no branch recorded)."""
    nodes = []
    for part in parts:
        if isinstance(part, SymBool):
            nodes.append(part.node)
        elif not part:
            return False
    if not nodes:
        return True
    result = nodes[0]
    for node in nodes[1:]:
        result = E.make(E.BAND, (result, node))
    return wrap(result)


def _disjunction(parts) -> bool | SymBool:
    nodes = []
    for part in parts:
        if isinstance(part, SymBool):
            nodes.append(part.node)
        elif part:
            return True
    if not nodes:
        return False
    result = nodes[0]
    for node in nodes[1:]:
        result = E.make(E.BOR, (result, node))
    return wrap(result)


def concrete_deep(value):
    """Concretise symbolic ints/bools/bytes, also inside lists, tuples and dicts (one level)."""
    if isinstance(value, SymBytes):
        return value.concretize()
    if isinstance(value, (list, tuple)):
        return type(value)(concrete_deep(v) if isinstance(v, (SymBytes, SymInt, SymBool)) else v for v in value)
    if isinstance(value, dict):
        return {k: concrete_deep(v) for k, v in value.items()}
    return concrete(value)


class SymBytes(bytes):
    """Input bytes carrying expressions; see the module docstring for what is modelled."""

    def __new__(cls, data: bytes, elems: list):
        self = super().__new__(cls, data)
        self._e = elems
        return self

    @classmethod
    def from_input(cls, data: bytes) -> SymBytes:
        return cls(data, [SymInt(E.var(i, b)) for i, b in enumerate(data)])

    @classmethod
    def from_elements(cls, elems) -> bytes:
        """Like ``bytes(elems)``; the 0..255 range check is a recorded branch for symbolic elements."""
        elems = list(elems)
        for e in elems:
            if isinstance(e, (SymInt, SymBool)) and not (0 <= e <= 255):
                raise ValueError("bytes must be in range(0, 256)")
        return cls._make(bytes(concrete_value(e) for e in elems), elems)

    @classmethod
    def _make(cls, data: bytes, elems: list) -> bytes:
        return cls(data, elems) if _is_symbolic(elems) else data

    def concretize(self) -> bytes:
        for e in self._e:
            if type(e) is SymInt:
                concrete(e)
        return bytes.__getitem__(self, slice(None))

    def __bytes__(self) -> bytes:
        return self.concretize()

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step == 1:
                cut = slice(start, stop)
                return self._make(bytes.__getitem__(self, cut), self._e[cut])
            picked = range(start, stop, step)
            whole = bytes.__getitem__(self, slice(None))
            return self._make(bytes(whole[i] for i in picked), [self._e[i] for i in picked])
        try:
            return self._e[key]
        except IndexError:
            raise IndexError("index out of range") from None

    def __iter__(self):
        return iter(self._e)

    def __hash__(self) -> int:
        return hash(self.concretize())

    def __eq__(self, other):
        theirs = _elems_of(other)
        if theirs is None:
            return NotImplemented
        if len(theirs) != len(self._e):
            return False
        return _conjunction(a == b for a, b in zip(self._e, theirs, strict=True))

    def __ne__(self, other):
        same = self.__eq__(other)
        if same is NotImplemented:
            return same
        return _not(same)

    def __contains__(self, item):
        theirs = _elems_of(item)
        if theirs is None:
            if not isinstance(item, (int, SymInt, SymBool)):
                raise TypeError(f"a bytes-like object is required, not '{type(item).__name__}'")
            return _disjunction(e == item for e in self._e)
        if not theirs:
            return True
        return _disjunction(self._window(p, theirs) for p in range(len(self._e) - len(theirs) + 1))

    def __add__(self, other):
        theirs = _elems_of(other)
        if theirs is None:
            return NotImplemented
        return self._make(bytes.__add__(bytes.__getitem__(self, slice(None)), bytes(other)), self._e + theirs)

    def __radd__(self, other):
        theirs = _elems_of(other)
        if theirs is None:
            return NotImplemented
        return self._make(bytes(other) + bytes.__getitem__(self, slice(None)), theirs + self._e)

    def __mul__(self, count):
        count = concrete(count)
        return self._make(bytes.__getitem__(self, slice(None)) * count, self._e * count)

    __rmul__ = __mul__

    def __str__(self) -> str:
        return str(self.concretize())

    def __repr__(self) -> str:
        return repr(self.concretize())

    def _window(self, pos: int, sub: list):
        return _conjunction(self._e[pos + k] == sub[k] for k in range(len(sub)))

    def _needle(self, sub) -> list:
        theirs = _elems_of(sub)
        if theirs is None:
            if isinstance(sub, (int, SymInt)):
                return [sub]
            raise TypeError(f"argument should be integer or bytes-like object, not '{type(sub).__name__}'")
        return theirs

    def _scan(self, sub, start, end, reverse: bool) -> int:
        needle = self._needle(sub)
        start, end = concrete(start), concrete(end)
        if not needle:
            method = bytes.rfind if reverse else bytes.find
            return method(self.concretize(), b"", start, end)
        begin, stop, _ = slice(start, end).indices(len(self))
        positions = range(begin, stop - len(needle) + 1)
        for pos in reversed(positions) if reverse else positions:
            if self._window(pos, needle):
                return pos
        return -1

    def find(self, sub, start=None, end=None) -> int:
        return self._scan(sub, start, end, reverse=False)

    def rfind(self, sub, start=None, end=None) -> int:
        return self._scan(sub, start, end, reverse=True)

    def index(self, sub, start=None, end=None) -> int:
        pos = self._scan(sub, start, end, reverse=False)
        if pos < 0:
            raise ValueError("subsection not found")
        return pos

    def rindex(self, sub, start=None, end=None) -> int:
        pos = self._scan(sub, start, end, reverse=True)
        if pos < 0:
            raise ValueError("subsection not found")
        return pos

    def _affix(self, affix, start, end, at_end: bool):
        if isinstance(affix, tuple):
            return _disjunction(self._affix(one, start, end, at_end) for one in affix)
        needle = _elems_of(affix)
        if needle is None:
            name = "endswith" if at_end else "startswith"
            raise TypeError(f"{name} first arg must be bytes or a tuple of bytes, not {type(affix).__name__}")
        begin, stop, _ = slice(concrete(start), concrete(end)).indices(len(self))
        if stop - begin < len(needle):
            return False
        return self._window(stop - len(needle) if at_end else begin, needle)

    def startswith(self, prefix, start=None, end=None):
        return self._affix(prefix, start, end, at_end=False)

    def endswith(self, suffix, start=None, end=None):
        return self._affix(suffix, start, end, at_end=True)

    def split(self, sep=None, maxsplit=-1):
        if sep is None:
            return self.concretize().split(None, concrete(maxsplit))
        needle = self._needle(sep)
        if not needle:
            raise ValueError("empty separator")
        maxsplit = concrete(maxsplit)
        pieces, begin = [], 0
        while maxsplit < 0 or len(pieces) < maxsplit:
            pos = self.find(sep, begin)
            if pos < 0:
                break
            pieces.append(self[begin:pos])
            begin = pos + len(needle)
        pieces.append(self[begin:])
        return pieces


def _not(value):
    if isinstance(value, SymBool):
        return wrap(E.negate(value.node))
    return not value


def concrete_value(e) -> int:
    """The concrete value of an element without recording anything (used to build the concrete twin)."""
    if isinstance(e, SymInt):
        return e.node.val
    if isinstance(e, SymBool):
        return int(e.node.val)
    return e


def _pinned_method(name: str):
    method = getattr(bytes, name)

    def pinned(self, *args, **kwargs):
        args = [concrete_deep(a) for a in args]
        kwargs = {k: concrete_deep(v) for k, v in kwargs.items()}
        return method(self.concretize(), *args, **kwargs)

    pinned.__name__ = name
    pinned.__doc__ = f"bytes.{name} on the concretised value (every symbolic byte is pinned)."
    return pinned


for _name in dir(bytes):
    if not _name.startswith("_") and _name not in _MODELLED and _name not in _CLASS_LEVEL:
        setattr(SymBytes, _name, _pinned_method(_name))
for _name in ("__mod__", "__rmod__", "__lt__", "__le__", "__gt__", "__ge__", "__getnewargs__"):
    setattr(SymBytes, _name, _pinned_method(_name))
