"""``struct`` for symbolic buffers: integer fields are expressions over the bytes they come from.

``unpack``, ``unpack_from``, ``iter_unpack``, ``calcsize`` and :class:`Struct` objects. For a
:class:`..values.symbytes.SymBytes` buffer every field's offset is taken from
:func:`struct.calcsize` (native alignment included); integer fields (``bBhHiIlLqQnN``) and ``?``
become expressions, ``s`` and ``c`` fields symbolic bytes, and the other codes (floats, ``p``,
``P``) pin the bytes they read and are unpacked concretely. The size check is a branch on the
buffer's length when that length depends on the input. Other buffers go to the real ``struct``
untouched.

In an instrumented module, ``struct`` is a guarded module whose :data:`MODELLED` names are these
models, and those functions imported by name (``from struct import unpack``) are replaced too.
"""

from __future__ import annotations

import functools
import re
import struct
import sys

from ..values.seq import concrete_deep, length_of
from ..values.symbolic import SymInt, concrete
from ..values.symbytes import SymBytes
from .registry import register, register_kind
from .unmodelled import GuardedModule

_INTEGER = "bBhHiIlLqQnN"
_SIGNED = "bhilqn"
_ITEM = re.compile(r"(\d*)([xcbB?hHiIlLqQnNefdspP])")


@functools.lru_cache(maxsize=256)
def layout(fmt: str) -> tuple[str, tuple[tuple[str, int, int], ...], int]:
    """(byte order, ((code, offset, size) per value), total size) of a format string."""
    total = struct.calcsize(fmt)  # an invalid format raises struct's own error first
    order = fmt[0] if fmt[:1] in "@=<>!" and fmt else "@"
    body = fmt[1:] if fmt[:1] in "@=<>!" and fmt else fmt
    prefix = "" if order == "@" else order
    fields, done = [], ""
    for count, code in _ITEM.findall(body.replace(" ", "")):
        n = int(count) if count else 1
        if code in "sp":
            start = struct.calcsize(prefix + done + "0" + code)
            fields.append((code, start, n))
            done += f"{n}{code}"
            continue
        start, size = struct.calcsize(prefix + done + "0" + code), struct.calcsize(prefix + code)
        if code != "x":  # repeated items are contiguous: the first one carries any alignment
            fields.extend((code, start + k * size, size) for k in range(n))
        done += f"{n}{code}"
    little = order == "<" or (order in "@=" and sys.byteorder == "little")
    return ("little" if little else "big"), tuple(fields), total


def _integer(elems: list, byteorder: str, signed: bool):
    ordered = elems if byteorder == "big" else elems[::-1]
    value = 0
    for e in ordered:
        value = (value << 8) | e
    if signed and ordered:
        bits = 8 * len(ordered)
        value = value - ((value >> (bits - 1)) << bits)
    return value


def _fields(fmt: str, data: SymBytes, offset: int) -> tuple:
    byteorder, fields, _ = layout(fmt)
    out = []
    for code, start, size in fields:
        elems = data._e[offset + start: offset + start + size]
        if code in _INTEGER:
            out.append(_integer(elems, byteorder, code in _SIGNED))
        elif code == "?":
            out.append(sum(elems) != 0 if any(isinstance(e, SymInt) for e in elems) else any(elems))
        elif code in "sc":
            out.append(SymBytes._build(list(elems)))
        else:
            raw = bytes(concrete(e) for e in elems)
            out.append(struct.unpack(("<" if byteorder == "little" else ">") + code if code != "p"
                                     else f"{size}p", raw)[0])
    return tuple(out)


def _symbolic(buffer) -> bool:
    return isinstance(buffer, SymBytes)


def unpack(fmt, buffer):
    fmt = concrete_deep(fmt)
    if not _symbolic(buffer):
        return struct.unpack(fmt, concrete_deep(buffer))
    size = struct.calcsize(fmt)  # before the layout: a huge count must fail on the length first
    if not (length_of(buffer) == size):
        raise struct.error(f"unpack requires a buffer of {size} bytes")
    return _fields(_text(fmt), buffer, 0)


def unpack_from(fmt, buffer, offset=0):
    fmt, offset = concrete_deep(fmt), concrete(offset)
    if not _symbolic(buffer):
        return struct.unpack_from(fmt, concrete_deep(buffer), offset)
    size = struct.calcsize(fmt)
    start = offset + len(buffer) if offset < 0 else offset
    if offset < 0 and start < 0:
        return struct.unpack_from(fmt, buffer.concretize(), offset)
    if not (length_of(buffer) >= start + size):
        return struct.unpack_from(fmt, buffer.concretize(), offset)  # raises Python's exact error
    return _fields(_text(fmt), buffer, start)


def iter_unpack(fmt, buffer):
    fmt = concrete_deep(fmt)
    if not _symbolic(buffer):
        return struct.iter_unpack(fmt, concrete_deep(buffer))
    size = struct.calcsize(fmt)
    if size == 0 or len(buffer) % size:
        return struct.iter_unpack(fmt, buffer.concretize())  # raises Python's exact error
    return iter([_fields(_text(fmt), buffer, k) for k in range(0, len(buffer), size)])


def _text(fmt) -> str:
    return fmt.decode("ascii") if isinstance(fmt, bytes) else fmt


class Struct(struct.Struct):
    """``struct.Struct`` whose unpacking methods accept symbolic buffers."""

    def unpack(self, buffer):
        return unpack(self.format, buffer)

    def unpack_from(self, buffer, offset=0):
        return unpack_from(self.format, buffer, offset)

    def iter_unpack(self, buffer):
        return iter_unpack(self.format, buffer)

    def pack(self, *values):
        return struct.Struct.pack(self, *(concrete_deep(v) for v in values))

    def pack_into(self, buffer, offset, *values):
        return struct.Struct.pack_into(self, buffer, concrete(offset), *(concrete_deep(v) for v in values))


def calcsize(fmt) -> int:
    return struct.calcsize(concrete_deep(fmt))


MODELLED = {"unpack": unpack, "unpack_from": unpack_from, "iter_unpack": iter_unpack, "Struct": Struct,
            "calcsize": calcsize}
"""The ``struct`` module's names that the overlay replaces with the models above."""


def _is_modelled(value) -> bool:
    """``value`` is a ``struct`` name of :data:`MODELLED` (by its ``__module__`` and ``__name__``)."""
    return getattr(value, "__module__", None) in ("struct", "_struct") and getattr(value, "__name__", "") in MODELLED


def register_models() -> None:
    """``struct`` becomes a guarded module with the models, and its modelled names their models."""
    register(struct, lambda: GuardedModule(struct, MODELLED))
    register_kind(_is_modelled, lambda value: MODELLED[value.__name__])


__all__ = ["MODELLED", "Struct", "calcsize", "iter_unpack", "layout", "register_models", "unpack", "unpack_from"]
