"""Models of builtins: the shims the overlay puts in an instrumented module's globals.

``int`` (:class:`IntShim`: ``int(text)`` through :func:`..values.numbers_as_text.to_int`,
``int.from_bytes`` over symbolic bytes), ``bytes`` (:class:`BytesShim`: symbolic buffers and
element lists stay symbolic, ``bytes.fromhex``), ``str`` (:class:`StrShim`: ``str(bytes,
encoding)`` decodes symbolically), ``len`` (the input's length stays symbolic), ``ord``, ``chr``,
``memoryview`` (:class:`MemoryviewShim`), ``bytearray`` (pinning) and ``getattr``
(:func:`recording_getattr`, which records dispatch on an attribute name built from text). Every
other argument is pinned and handed to the real builtin.

A ``memoryview`` cannot be subclassed, so views of a symbolic buffer are real memoryviews
registered for the run (:func:`view_of`, forgotten when the run ends); the ``bytes``,
``int.from_bytes`` and ``io.BytesIO`` shims and the subscript and ``.tobytes()`` hooks of
:mod:`.containers` look them up (:func:`symbolic_buffer`, :func:`view_item`), and other readers
see the concrete bytes.
"""

from __future__ import annotations

import functools
import types

from ..expressions import path as P
from ..values.numbers_as_text import chr_of, fromhex, ord_of, to_int
from ..values.seq import SymSequence, concrete_deep, length_of
from ..values.symbolic import SymBool, SymInt, concrete
from ..values.symbytes import SymBytes
from ..values.symstr import SymStr
from . import structlib
from .registry import ShimMeta, register_builtin, register_cleanup
from .unmodelled import pinning

_views: dict[int, tuple[memoryview, SymBytes, int]] = {}


def clear_views() -> None:
    """Forget the views of a finished run."""
    _views.clear()


def view_of(source) -> memoryview:
    """``memoryview(source)``; a view of a symbolic buffer is registered for the run."""
    view = memoryview(source)
    if isinstance(source, SymBytes):
        _views[id(view)] = (view, source, 0)
    return view


def symbolic_buffer(obj) -> SymBytes | None:
    """The symbolic bytes behind ``obj`` (a SymBytes or a registered view), else None."""
    if isinstance(obj, SymBytes):
        return obj
    hit = _views.get(id(obj)) if isinstance(obj, memoryview) else None
    if hit is None or hit[0] is not obj:
        return None
    view, source, offset = hit
    return source[offset: offset + view.nbytes]


def view_item(view: memoryview, key):
    """``view[key]`` for a registered view: an element, or a registered sub-view."""
    hit = _views.get(id(view))
    if hit is None or hit[0] is not view or view.format != "B":
        return None
    _, source, offset = hit
    if isinstance(key, slice):
        start, stop, step = key.indices(len(view))
        sub = view[key]
        if step == 1:
            _views[id(sub)] = (sub, source, offset + start)
        return sub
    index = concrete(key)
    view[index]  # raises IndexError exactly as the view would
    return source._e[offset + (index if index >= 0 else index + len(view))]


def _from_elements(elems: list, byteorder: str, signed: bool):
    return structlib._integer(list(elems), byteorder, signed)


class IntShim(metaclass=ShimMeta):
    _real = int
    _extra = (SymInt, SymBool)

    def __new__(cls, value=0, *args, **kwargs):
        if not kwargs and len(args) <= 1:
            if isinstance(value, SymInt) and not args:
                return value
            if isinstance(value, SymBool) and not args:
                return value.as_int()
            if isinstance(value, SymSequence):
                return to_int(value, *args) if args else to_int(value)
        return int(concrete_deep(value), *(concrete_deep(a) for a in args), **kwargs)

    @staticmethod
    def from_bytes(data, byteorder="big", *, signed=False):
        if byteorder not in ("big", "little"):
            raise ValueError("byteorder must be either 'little' or 'big'")
        source = symbolic_buffer(data)
        if source is not None:
            return _from_elements(source._e, byteorder, signed)
        if isinstance(data, (list, tuple)) and any(isinstance(e, (SymInt, SymBool)) for e in data):
            return _from_elements(list(SymBytes.from_elements(data)), byteorder, signed)
        return int.from_bytes(data, byteorder, signed=signed)


class BytesShim(metaclass=ShimMeta):
    _real = bytes
    _extra = ()

    def __new__(cls, source=b"", *args, **kwargs):
        if not args and not kwargs:
            symbolic = symbolic_buffer(source)
            if symbolic is not None:
                return symbolic
            if isinstance(source, (list, tuple)):
                return SymBytes.from_elements(source)
        if isinstance(source, SymStr) and args and not kwargs:
            return source.encode(*args)
        return bytes(concrete_deep(source), *(concrete_deep(a) for a in args), **kwargs)

    @staticmethod
    def fromhex(text):
        if isinstance(text, SymStr):
            return fromhex(text)
        return bytes.fromhex(text)


class StrShim(metaclass=ShimMeta):
    _real = str
    _extra = ()

    def __new__(cls, value="", *args, **kwargs):
        if isinstance(value, SymStr) and not args and not kwargs:
            return value
        if isinstance(value, SymBytes) and args:
            return value.decode(*args, **kwargs)
        return str(concrete_deep(value), *args, **kwargs)


class MemoryviewShim(metaclass=ShimMeta):
    _real = memoryview
    _extra = ()

    def __new__(cls, obj):
        return view_of(obj)


def _len(obj):
    return length_of(obj)


def _chr(code):
    return chr_of(code) if isinstance(code, (SymInt, SymBool)) else chr(code)


_MAX_DISPATCH = 32  # attribute names of one prefix paired with a looked-up name


@functools.lru_cache(maxsize=256)
def _dispatch_names(owner, prefix: str) -> tuple[str, ...]:
    return tuple(n[len(prefix):] for n in dir(owner) if n.startswith(prefix) and len(n) > len(prefix))[:_MAX_DISPATCH]


def recording_getattr(obj, name, *default):
    """``getattr``, which also records dispatch on a name: for ``name`` = prefix + suffix (the
    prefix ends at its first ``_`` after two characters: ``"end_" + element``), the suffixes of the
    other attributes of ``obj``'s class (or module) with that prefix are text comparisons of the
    suffix (:func:`..expressions.path.text_compare`): the hybrid phase tries them where the suffix stands."""
    if isinstance(name, str):
        plain = str.__str__(name)
        cut = plain.find("_", 2) + 1
        if 0 < cut < len(plain):
            owner = obj if isinstance(obj, (type, types.ModuleType)) else type(obj)
            try:
                names = _dispatch_names(owner, plain[:cut])
            except Exception:  # an unhashable owner, a __dir__ that fails: recording never changes the run
                names = ()
            for suffix in names:
                P.text_compare(plain[cut:], suffix)
    return getattr(obj, name, *default)


def register_models() -> None:
    """The shims above under their builtins' names (in the order the overlay adds them); views are
    forgotten when a run ends."""
    for name, shim in (("int", IntShim), ("bytes", BytesShim), ("str", StrShim), ("len", _len), ("ord", ord_of),
                       ("chr", _chr), ("memoryview", MemoryviewShim), ("bytearray", pinning(bytearray)),
                       ("getattr", recording_getattr)):
        register_builtin(name, shim)
    register_cleanup(clear_views)


__all__ = ["BytesShim", "IntShim", "MemoryviewShim", "StrShim", "clear_views", "recording_getattr",
           "register_models", "symbolic_buffer", "view_item", "view_of"]
