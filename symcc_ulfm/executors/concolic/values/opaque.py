"""Opaque values: what unmodelled code computed from the input, whose comparisons are recorded.

A C function (a checksum, a decompressor, ``binascii``) run on symbolic data returns a value
that the solver cannot reason about. Such results are marked *opaque* (:func:`opaque`; by the
pinning wrapper of C callables, :func:`..models.unmodelled.pinning`, and by the pinned methods
of symbolic bytes and str, :func:`.seq.pin_unmodelled`): ints, bytes and strs that behave
exactly like the plain values, except that their comparisons (``==``,
``<`` ..., ``startswith``/``endswith``) record both concrete operands
(:func:`..expressions.path.compare`); arithmetic on an opaque int stays opaque, so
``crc32(x) & 0xFFFFFFFF`` is still recognised. The hybrid phase proposes children from those
operands (:func:`..hybrid.input_to_state.propose`). Text rendered from symbolic values
(:func:`rendered`) is an opaque str whose pins wait for its use.
"""

from __future__ import annotations

import operator

from ..expressions import path as P


class _Opaque:
    """Comparisons record their operands; see the module docstring."""

    __slots__ = ()

    def _plain(self):
        raise NotImplementedError

    def _cmp(self, op, other):
        for source in getattr(self, "_sources", ()):
            source.concretize()
        mine = self._plain()
        theirs = other._plain() if isinstance(other, _Opaque) else other
        P.compare(mine, theirs)
        return op(mine, theirs)

    def __eq__(self, other):
        return self._cmp(operator.eq, other)

    def __ne__(self, other):
        return self._cmp(operator.ne, other)

    def __lt__(self, other):
        return self._cmp(operator.lt, other)

    def __le__(self, other):
        return self._cmp(operator.le, other)

    def __gt__(self, other):
        return self._cmp(operator.gt, other)

    def __ge__(self, other):
        return self._cmp(operator.ge, other)

    def __hash__(self) -> int:
        for source in getattr(self, "_sources", ()):
            source.concretize()
        return hash(self._plain())


class OpaqueInt(_Opaque, int):
    def _plain(self) -> int:
        return int(self)


class _Sequence(_Opaque):
    def _affix(self, name: str, affix, *bounds):
        plain = self._plain()
        for one in affix if isinstance(affix, tuple) else (affix,):
            if isinstance(one, type(plain)) and len(one) <= len(plain):
                P.compare(plain[-len(one):] if name == "endswith" and one else plain[:len(one)], one)
        return getattr(type(plain), name)(plain, affix, *bounds)

    def startswith(self, prefix, *bounds):
        return self._affix("startswith", prefix, *bounds)

    def endswith(self, suffix, *bounds):
        return self._affix("endswith", suffix, *bounds)


class OpaqueBytes(_Sequence, bytes):
    def _plain(self) -> bytes:
        return bytes.__getitem__(self, slice(None))


class OpaqueStr(_Sequence, str):
    def _plain(self) -> str:
        return str.__getitem__(self, slice(None))


def rendered(text: str, *sources) -> OpaqueStr:
    """Text rendered from symbolic values (``repr``, ``%``, ``format``) whose pins wait for its use.

    Parsers format the input into error messages that are raised and never read; pinning the input
    there would freeze it for the rest of the run (``ipaddress`` tries IPv4 and formats the text into
    the error before it tries IPv6). The sources are pinned when the text is compared or hashed;
    other reads of a message (its ``str`` methods) are not followed.
    """
    out = OpaqueStr(text)
    out._sources = sources
    return out


def _keep(name: str):
    method = getattr(int, name)

    def arithmetic(self, *args):
        result = method(int(self), *(int(a) if isinstance(a, OpaqueInt) else a for a in args))
        return OpaqueInt(result) if type(result) is int else result

    arithmetic.__name__ = name
    return arithmetic


for _name in ("and", "or", "xor", "lshift", "rshift", "add", "sub", "mul", "mod", "floordiv"):
    for _form in (f"__{_name}__", f"__r{_name}__"):
        setattr(OpaqueInt, _form, _keep(_form))
for _form in ("__neg__", "__invert__", "__abs__"):
    setattr(OpaqueInt, _form, _keep(_form))


def opaque(value):
    """``value`` marked as computed by unmodelled code from input (one level into tuples/lists)."""
    if type(value) is int:
        return OpaqueInt(value)
    if type(value) is bytes:
        return OpaqueBytes(value)
    if type(value) is str:
        return OpaqueStr(value)
    if type(value) in (tuple, list):
        return type(value)(opaque(v) for v in value)
    return value


__all__ = ["OpaqueBytes", "OpaqueInt", "OpaqueStr", "opaque", "rendered"]
