"""What symbolic ``bytes`` and ``str`` share: a sequence of symbolic code units.

:class:`SymSequence` is a mixin for :class:`.symbytes.SymBytes` and :class:`.symstr.SymStr`. Both
are subclasses of the real type holding the concrete value (so C code that reads the buffer
sees real data), plus ``_e``, one element per code unit (a byte or a code point: an ``int`` or a
:class:`.symbolic.SymInt`), and ``_len``, the expression of their length when it depends on the
input's length (see :func:`length_of`), else None.

The scanning methods (``find``, ``in``, ``split``, ``strip`` ...) record one branch per position
they examine, as the C loop they stand for would. The concrete result is always computed by the
same rule as Python's; a subclass supplies the unit type (an ``int`` for bytes, a one-character
string for str), the whitespace and character-class predicates, and how a result is built.
Splitting, stripping and replacing are in :mod:`.split_strip_replace`; conditions over elements that
record no branch (``all``, ``any``, ranges, ``ite``) in :mod:`.conditions`.
"""

from __future__ import annotations

from ..expressions import expr as E
from ..expressions import path as P
from .conditions import conjunction, disjunction, ite, negation
from .opaque import opaque
from .split_strip_replace import SplitMethods
from .symbolic import SymBool, SymInt, concrete


def length_of(obj):
    """``len(obj)``: a SymInt when the length depends on the input's length, else an int."""
    node = getattr(obj, "_len", None) if isinstance(obj, SymSequence) else None
    return SymInt(node) if isinstance(node, E.Node) else len(obj)


def slice_length(total, start: int, stop: int | None):
    """Length of ``x[start:stop]`` (start >= 0, stop None or >= 0) when ``len(x)`` is ``total``."""
    end = total if stop is None else ite(total <= stop, total, stop)
    return ite(end <= start, 0, end - start)


def concrete_deep(value):
    """Concretise symbolic values, also inside lists, tuples and dicts (one level)."""
    if isinstance(value, SymSequence):
        return value.concretize()
    if isinstance(value, (list, tuple)):
        return type(value)(concrete_deep(v) if isinstance(v, (SymSequence, SymInt, SymBool)) else v for v in value)
    if isinstance(value, dict):
        return {k: concrete_deep(v) for k, v in value.items()}
    return concrete(value)


def pin_unmodelled(cls: type, base: type, modelled: set[str], unit: str) -> None:
    """Give ``cls`` every public method of ``base`` not in ``modelled``, and the comparisons and
    ``%``, as ``base``'s own on the concretised value: every symbolic ``unit`` is pinned and the
    result is opaque (:func:`.opaque.opaque`, still compared as input-to-state)."""
    names = [n for n in dir(base) if not n.startswith("_") and n not in modelled]
    for name in names + ["__mod__", "__lt__", "__le__", "__gt__", "__ge__", "__getnewargs__"]:
        setattr(cls, name, _pinned(base, name, unit))


def _pinned(base: type, name: str, unit: str):
    method = getattr(base, name)

    def pinned(self, *args, **kwargs):
        args = [concrete_deep(a) for a in args]
        kwargs = {k: concrete_deep(v) for k, v in kwargs.items()}
        return opaque(method(self.concretize(), *args, **kwargs))

    pinned.__name__ = name
    pinned.__doc__ = (f"{base.__name__}.{name} on the concretised value (every symbolic {unit} is pinned; "
                      "the result is opaque).")
    return pinned


class SymSequence(SplitMethods):
    """Mixin: the modelled protocol of a symbolic bytes/str (see the module docstring)."""

    _e: list
    _len: E.Node | None = None
    _whitespace: tuple[tuple[int, int], ...] = ()

    # -- supplied by the subclass ----------------------------------------------------------------
    @classmethod
    def _build(cls, elems: list, length=None):
        raise NotImplementedError

    def _unit(self, e):
        raise NotImplementedError

    @classmethod
    def _elems(cls, value) -> list | None:
        raise NotImplementedError

    def _plain(self):
        raise NotImplementedError

    # -- pins --------------------------------------------------------------------------------------
    def concretize(self):
        for e in self._e:
            if type(e) is SymInt:
                concrete(e)
        if isinstance(self._len, E.Node):
            P.pin(self._len)
        return self._plain()

    def __hash__(self) -> int:
        return hash(self.concretize())

    # -- indexing ------------------------------------------------------------------------------------
    def __getitem__(self, key):
        if isinstance(key, slice):
            return self._slice(key)
        key = concrete(key) if not isinstance(key, int) else key
        if isinstance(self._len, E.Node):
            if key < 0:
                P.pin(self._len)
            elif key >= len(self._e) and not (SymInt(self._len) > key):
                raise IndexError("index out of range")  # a branch: its negation is a longer input
        try:
            return self._unit(self._e[key])
        except IndexError:
            raise IndexError("index out of range") from None
        except TypeError:
            raise TypeError(f"indices must be integers or slices, not {type(key).__name__}") from None

    def _slice(self, key: slice):
        raw = (key.start, key.stop, key.step)
        if any(isinstance(x, (SymInt, SymBool)) for x in raw):
            key = slice(*(concrete(x) for x in raw))
        start, stop, step = key.indices(len(self._e))
        if step != 1:
            return self._build([self._e[i] for i in range(start, stop, step)])
        length = None
        if isinstance(self._len, E.Node):
            if (key.start is None or key.start >= 0) and (key.stop is None or key.stop >= 0):
                length = slice_length(SymInt(self._len), start, key.stop)
            else:
                P.pin(self._len)
        return self._build(self._e[start:stop], length)

    def __iter__(self):
        return (self._unit(e) for e in self._e)

    # -- comparison ----------------------------------------------------------------------------------
    def __eq__(self, other):
        theirs = self._elems(other)
        if theirs is None:
            return NotImplemented
        P.token(other)
        if type(other) in (str, bytes) and len(self._e) <= P.MAX_TOKEN_LENGTH:
            P.text_compare(self._plain(), other)
        size = SymInt(self._len) == len(theirs) if isinstance(self._len, E.Node) else True
        if len(theirs) != len(self._e):
            return size if isinstance(size, SymBool) else False
        return conjunction([size, *(a == b for a, b in zip(self._e, theirs, strict=True))])

    def __ne__(self, other):
        same = self.__eq__(other)
        return same if same is NotImplemented else negation(same)

    def _window(self, pos: int, sub: list):
        return conjunction(self._e[pos + k] == sub[k] for k in range(len(sub)))

    def _needle(self, sub) -> list:
        theirs = self._elems(sub)
        if theirs is None:
            raise TypeError(f"must be {type(self._plain()).__name__}-like, not {type(sub).__name__}")
        P.token(sub)
        return theirs

    def __contains__(self, item):
        theirs = self._needle(item)
        if not theirs:
            return True
        return disjunction(self._window(p, theirs) for p in range(len(self._e) - len(theirs) + 1))

    # -- building ----------------------------------------------------------------------------------
    def __add__(self, other):
        theirs = self._elems(other)
        if theirs is None:
            return NotImplemented
        return self._build(self._e + theirs)

    def __radd__(self, other):
        theirs = self._elems(other)
        if theirs is None:
            return NotImplemented
        return self._build(theirs + self._e)

    def __mul__(self, count):
        if not isinstance(count, (int, SymInt, SymBool)):
            return NotImplemented
        return self._build(self._e * concrete(count))

    __rmul__ = __mul__

    def join(self, parts):
        parts = list(parts)
        elems: list = []
        for k, part in enumerate(parts):
            theirs = self._elems(part)
            if theirs is None:
                raise TypeError(f"sequence item {k}: expected a {type(self._plain()).__name__}-like object, "
                                f"{type(part).__name__} found")
            if k:
                elems.extend(self._e)
            elems.extend(theirs)
        return self._build(elems)

    # -- searching -----------------------------------------------------------------------------------
    def _scan(self, sub, start, end, reverse: bool) -> int:
        needle = self._needle(sub)
        begin, stop, _ = slice(concrete(start), concrete(end)).indices(len(self._e))
        if not needle:
            method = type(self._plain()).rfind if reverse else type(self._plain()).find
            return method(self._plain(), self._plain()[:0], concrete(start), concrete(end))
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
            raise ValueError("substring not found")
        return pos

    def rindex(self, sub, start=None, end=None) -> int:
        pos = self._scan(sub, start, end, reverse=True)
        if pos < 0:
            raise ValueError("substring not found")
        return pos

    def count(self, sub, start=None, end=None) -> int:
        needle = self._needle(sub)
        if not needle:
            return type(self._plain()).count(self._plain(), self._plain()[:0], concrete(start), concrete(end))
        begin, stop, _ = slice(concrete(start), concrete(end)).indices(len(self._e))
        total, pos = 0, begin
        while pos <= stop - len(needle):
            if self._window(pos, needle):
                total += 1
                pos += len(needle)
            else:
                pos += 1
        return total

    def _affix(self, affix, start, end, at_end: bool):
        if isinstance(affix, tuple):
            return disjunction(self._affix(one, start, end, at_end) for one in affix)
        needle = self._elems(affix)
        if needle is None:
            name = "endswith" if at_end else "startswith"
            kind = type(self._plain()).__name__
            raise TypeError(f"{name} first arg must be {kind} or a tuple of {kind}, not {type(affix).__name__}")
        begin, stop, _ = slice(concrete(start), concrete(end)).indices(len(self._e))
        if isinstance(self._len, E.Node) and (at_end or end is not None):
            P.pin(self._len)
        if begin > len(self._e):
            return False
        if stop - begin < len(needle):
            if isinstance(self._len, E.Node) and begin >= 0:
                return SymInt(self._len) >= begin + len(needle)  # false now: a longer input may match
            return False
        return self._window(stop - len(needle) if at_end else begin, needle)

    def startswith(self, prefix, start=None, end=None):
        return self._affix(prefix, start, end, at_end=False)

    def endswith(self, suffix, start=None, end=None):
        return self._affix(suffix, start, end, at_end=True)
