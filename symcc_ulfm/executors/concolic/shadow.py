"""The symbolic twin of a target: the same code objects with builtins that understand symbols.

``int.from_bytes`` and ``bytes(...)`` are C code: given a symbolic input they could only return
concrete values. For the symbolic run the engine therefore clones the target's module-level
functions onto a copy of the module globals whose ``__builtins__`` replace ``int``, ``bytes``,
``bytearray``, ``memoryview`` and ``ord`` with shims, and whose imported modules and C functions
are wrapped so that symbolic arguments are pinned before C code sees them. The code objects are
the originals, so branch sites and coverage locations are identical in both runs; ``isinstance``
checks against the shims answer as the real types would. Functions defined elsewhere run
unchanged (they still receive symbolic values; C calls there concretise via ``__index__`` /
``__bytes__``).
"""

from __future__ import annotations

import builtins
import types

from .symbolic import SymBool, SymInt
from .symbytes import SymBytes, concrete_deep

_C_CALLABLES = (types.BuiltinFunctionType, types.BuiltinMethodType)


class _ShimMeta(type):
    """Makes a shim class answer ``isinstance``/``issubclass``/attributes like the real type."""

    _real: type
    _extra: tuple[type, ...]

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, (cls._real, *cls._extra))

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, (cls._real, *cls._extra))

    def __getattr__(cls, name):
        return getattr(cls._real, name)

    def __repr__(cls) -> str:
        return repr(cls._real)


def _from_elements(elems: list, byteorder: str, signed: bool):
    ordered = elems if byteorder == "big" else list(reversed(elems))
    value = 0
    for e in ordered:
        value = (value << 8) | e
    if signed and ordered:
        bits = 8 * len(ordered)
        value = value - ((value >> (bits - 1)) << bits)
    return value


class IntShim(metaclass=_ShimMeta):
    _real = int
    _extra = (SymInt, SymBool)

    def __new__(cls, value=0, *args, **kwargs):
        if isinstance(value, SymInt) and not args and not kwargs:
            return value
        if isinstance(value, SymBool) and not args and not kwargs:
            return value.as_int()
        return int(concrete_deep(value), *args, **kwargs)

    @staticmethod
    def from_bytes(data, byteorder="big", *, signed=False):
        if byteorder not in ("big", "little"):
            raise ValueError("byteorder must be either 'little' or 'big'")
        if isinstance(data, SymBytes):
            return _from_elements(list(data), byteorder, signed)
        if isinstance(data, (list, tuple)) and any(isinstance(e, (SymInt, SymBool)) for e in data):
            return _from_elements(list(SymBytes.from_elements(data)), byteorder, signed)
        return int.from_bytes(data, byteorder, signed=signed)


class BytesShim(metaclass=_ShimMeta):
    _real = bytes
    _extra = ()

    def __new__(cls, source=b"", *args, **kwargs):
        if isinstance(source, SymBytes) and not args and not kwargs:
            return source
        if isinstance(source, (list, tuple)) and not args and not kwargs:
            return SymBytes.from_elements(source)
        return bytes(concrete_deep(source), *args, **kwargs)


def _ord(char):
    if isinstance(char, SymBytes):
        if len(char) != 1:
            raise TypeError(f"ord() expected a character, but string of length {len(char)} found")
        return char[0]
    return ord(char)


def _pinning(function):
    """Wrap a C callable so that symbolic arguments are pinned before it runs."""

    def call(*args, **kwargs):
        return function(*(concrete_deep(a) for a in args), **{k: concrete_deep(v) for k, v in kwargs.items()})

    call.__name__ = getattr(function, "__name__", "c_function")
    call.__wrapped__ = function
    return call


class GuardedModule(types.ModuleType):
    """A view of an imported module whose C callables pin symbolic arguments."""

    def __init__(self, module: types.ModuleType):
        super().__init__(module.__name__, module.__doc__)
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name):
        value = getattr(object.__getattribute__(self, "_module"), name)
        return _pinning(value) if isinstance(value, _C_CALLABLES) else value


def shim_builtins() -> dict:
    table = dict(vars(builtins))
    table.update(
        int=IntShim,
        bytes=BytesShim,
        bytearray=_pinning(bytearray),
        memoryview=_pinning(memoryview),
        ord=_ord,
    )
    return table


def _clone(function: types.FunctionType, namespace: dict) -> types.FunctionType:
    twin = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                              function.__closure__)
    twin.__kwdefaults__ = function.__kwdefaults__
    twin.__qualname__ = function.__qualname__
    twin.__dict__.update(function.__dict__)
    return twin


def symbolic_twin(function):
    """The function to call in symbolic runs (``function`` itself if it cannot be cloned)."""
    if not isinstance(function, types.FunctionType):
        return function
    original = function.__globals__
    namespace = dict(original)
    namespace["__builtins__"] = shim_builtins()
    for name, value in original.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is original:
            namespace[name] = _clone(value, namespace)
        elif isinstance(value, types.ModuleType) and name != "__builtins__":
            namespace[name] = GuardedModule(value)
        elif isinstance(value, _C_CALLABLES):
            namespace[name] = _pinning(value)
    same = namespace.get(function.__name__)
    if isinstance(same, types.FunctionType) and same.__code__ is function.__code__:
        return same
    return _clone(function, namespace)


__all__ = ["IntShim", "BytesShim", "GuardedModule", "symbolic_twin", "shim_builtins"]
