"""The symbolic twin of a target: its modules, instrumented and with builtins that understand symbols.

For a symbolic run the twin (:func:`symbolic_twin`) enters an *overlay* on the target's module
and on the extra modules it was given (the parser's own modules):

* the module globals get shims for ``int``, ``bytes``, ``str``, ``len``, ``ord``, ``chr``,
  ``memoryview``, ``bytearray`` and ``getattr`` (which records dispatch on a name built from text,
  :func:`.recording.recording_getattr`; globals shadow builtins, so every function and method of the module sees them), and ``io.BytesIO`` / ``io.StringIO`` / ``struct`` / ``re`` names are replaced by models;
* every other imported module becomes a :class:`GuardedModule`, and every C function a pinning
  wrapper: symbolic arguments are concretised (pinned) before C code sees them, and the result of
  a C call that received symbolic data is marked opaque (:mod:`.i2s`); a Python function of such
  a module runs as it is, uninstrumented, and the input-derived text it is given is recorded with
  its module's name (:mod:`.recording`: the executor pairs that text with the module's words);
* the functions' code is swapped for the instrumented code of :mod:`.rewrite`, and C callables
  bound as default arguments (``_m=PATTERN.match``) are replaced like globals.

Everything is put back when the run ends. The code objects are recompiled from the same source
with the same line numbers, so coverage locations are the same in both runs; ``isinstance``
checks against the shims answer as the real types would (``type(x) is str`` does not: a known
difference for symbolic values).
"""

from __future__ import annotations

import functools
import importlib
import io
import re
import struct
import sys
import types

from . import i2s, streams, structs
from . import path as P
from .numtext import chr_of, fromhex, ord_of, to_int
from .recording import recording, recording_getattr
from .rewrite import CodeSwap
from .seq import SymSequence, concrete_deep, length_of
from .symbolic import SymBool, SymInt
from .symbytes import SymBytes
from .symstr import SymStr

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
    return structs._integer(list(elems), byteorder, signed)


class IntShim(metaclass=_ShimMeta):
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
        source = streams.symbolic_buffer(data)
        if source is not None:
            return _from_elements(source._e, byteorder, signed)
        if isinstance(data, (list, tuple)) and any(isinstance(e, (SymInt, SymBool)) for e in data):
            return _from_elements(list(SymBytes.from_elements(data)), byteorder, signed)
        return int.from_bytes(data, byteorder, signed=signed)


class BytesShim(metaclass=_ShimMeta):
    _real = bytes
    _extra = ()

    def __new__(cls, source=b"", *args, **kwargs):
        if not args and not kwargs:
            symbolic = streams.symbolic_buffer(source)
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


class StrShim(metaclass=_ShimMeta):
    _real = str
    _extra = ()

    def __new__(cls, value="", *args, **kwargs):
        if isinstance(value, SymStr) and not args and not kwargs:
            return value
        if isinstance(value, SymBytes) and args:
            return value.decode(*args, **kwargs)
        return str(concrete_deep(value), *args, **kwargs)


class BytesIOShim(metaclass=_ShimMeta):
    _real = io.BytesIO
    _extra = ()

    def __new__(cls, initial_bytes=b""):
        source = streams.symbolic_buffer(initial_bytes)
        if source is not None:
            return streams.SymBytesIO(source)
        return io.BytesIO(concrete_deep(initial_bytes))


class StringIOShim(metaclass=_ShimMeta):
    _real = io.StringIO
    _extra = ()

    def __new__(cls, initial_value="", newline="\n"):
        if isinstance(initial_value, str) and newline in ("\n", ""):
            return streams.SymStringIO(initial_value, newline)
        return io.StringIO(concrete_deep(initial_value), newline)


class MemoryviewShim(metaclass=_ShimMeta):
    _real = memoryview
    _extra = ()

    def __new__(cls, obj):
        return streams.view_of(obj)


def _len(obj):
    return length_of(obj)


def _chr(code):
    return chr_of(code) if isinstance(code, (SymInt, SymBool)) else chr(code)


def _pinning(function):
    """Wrap a C callable: symbolic arguments are pinned first, and its result is marked opaque."""

    def call(*args, **kwargs):
        plain_args = [concrete_deep(a) for a in args]
        plain_kwargs = {k: concrete_deep(v) for k, v in kwargs.items()}
        result = function(*plain_args, **plain_kwargs)
        tainted = any(a is not p for a, p in zip(args, plain_args, strict=True)) or any(
            kwargs[k] is not v for k, v in plain_kwargs.items())
        return i2s.opaque(result) if tainted else result

    call.__name__ = getattr(function, "__name__", "c_function")
    call.__wrapped__ = function
    return call


class _PatternProxy:
    """A compiled regex whose matching methods pin the part of a symbolic subject they examined
    (and record the pattern and the match, :func:`.path.regex`)."""

    def __init__(self, pattern: re.Pattern):
        self._pattern = pattern

    def __getattr__(self, name):
        return getattr(self._pattern, name)

    def _anchored(self, name, string, pos=0, endpos=sys.maxsize):
        method = getattr(self._pattern, name)
        if not isinstance(string, SymSequence):
            return method(string, pos, endpos)
        begin, end, _ = slice(pos, endpos).indices(len(string._e))
        plain = string._plain()
        found = method(plain, begin, end)
        start = begin if found is None else found.start()
        P.regex(self._pattern, plain[start:end], None if found is None else found.end() - start)
        last = min(found.end() + 1, end) if found is not None else end
        for e in string._e[begin:last]:
            concrete_deep(e)
        return found

    def match(self, string, pos=0, endpos=sys.maxsize):
        return self._anchored("match", string, pos, endpos)

    def fullmatch(self, string, pos=0, endpos=sys.maxsize):
        return self._anchored("fullmatch", string, pos, endpos)

    def search(self, string, pos=0, endpos=sys.maxsize):
        return self._anchored("search", string, pos, endpos)


for _name in ("findall", "finditer", "split", "sub", "subn"):
    setattr(_PatternProxy, _name, lambda self, *args, _name=_name, **kwargs: getattr(self._pattern, _name)(
        *(concrete_deep(a) for a in args), **{k: concrete_deep(v) for k, v in kwargs.items()}))


def _regex_module() -> GuardedModule:
    """``re`` whose functions pin what they examine (the subject is pinned whole, except for matching)."""
    def compiled(pattern, flags=0):
        return _PatternProxy(re.compile(concrete_deep(pattern), flags))

    overrides = {"compile": compiled}
    for name in ("match", "fullmatch", "search"):
        overrides[name] = lambda pattern, string, flags=0, _name=name: getattr(compiled(pattern, flags), _name)(string)
    for name in ("findall", "finditer", "split", "sub", "subn"):
        overrides[name] = _pinning(getattr(re, name))
    return GuardedModule(re, overrides)


class GuardedModule(types.ModuleType):
    """A view of an imported module whose C callables pin symbolic arguments and whose Python
    functions, unless they belong to a module named in ``instrumented`` (a package re-exports
    them), record the symbolic text they are given (:func:`.recording.recording`)."""

    def __init__(self, module: types.ModuleType, overrides: dict | None = None,
                 instrumented: frozenset[str] = frozenset()):
        super().__init__(module.__name__, module.__doc__)
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_instrumented", instrumented)
        for name, value in (overrides or {}).items():
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        value = getattr(object.__getattribute__(self, "_module"), name)
        if isinstance(value, types.FunctionType) and value.__module__ not in object.__getattribute__(
                self, "_instrumented"):
            return recording(value)
        return _pinning(value) if isinstance(value, _C_CALLABLES) else value


BUILTIN_SHIMS = {"int": IntShim, "bytes": BytesShim, "str": StrShim, "len": _len, "ord": ord_of, "chr": _chr,
                 "memoryview": MemoryviewShim, "bytearray": _pinning(bytearray), "getattr": recording_getattr}


def _replacement(name: str, value, instrumented: frozenset[str] = frozenset()):
    """What a module global becomes during the symbolic run (None: left alone); ``instrumented``
    names the modules whose code the overlay swaps."""
    if value is io.BytesIO:
        return BytesIOShim
    if value is io.StringIO:
        return StringIOShim
    if value is io:
        return GuardedModule(io, {"BytesIO": BytesIOShim, "StringIO": StringIOShim})
    if value is struct:
        return GuardedModule(struct, structs.MODELLED)
    if isinstance(value, types.ModuleType):
        if value is re:
            return _regex_module()
        return GuardedModule(value, instrumented=instrumented) if name != "__builtins__" else None
    if isinstance(value, functools._lru_cache_wrapper) and isinstance(getattr(value, "__wrapped__", None),
                                                                       types.FunctionType):
        return value.__wrapped__  # a cache would hash (pin) the symbolic key and answer from concrete runs
    if isinstance(value, re.Pattern):
        return _PatternProxy(value)
    if isinstance(value, types.BuiltinMethodType) and isinstance(getattr(value, "__self__", None), re.Pattern):
        return getattr(_PatternProxy(value.__self__), value.__name__)
    if getattr(value, "__module__", None) in ("struct", "_struct") and getattr(value, "__name__", "") in structs.MODELLED:
        return structs.MODELLED[value.__name__]
    if isinstance(value, _C_CALLABLES):
        return _pinning(value)
    return None


class Overlay:
    """Shims in some globals dicts and instrumented code in their modules, for one symbolic run."""

    def __init__(self, namespaces: list[dict], modules: list[types.ModuleType]):
        self.namespaces = namespaces
        self.swap = CodeSwap(modules)
        self._instrumented = frozenset(m.__name__ for m in modules)
        self._saved: list[tuple[dict, dict, list[str]]] = []
        self._defaults: list[tuple[types.FunctionType, tuple]] = []

    def enter(self) -> None:
        for namespace in self.namespaces:
            saved, added = {}, []
            for name, value in list(namespace.items()):
                new = _replacement(name, value, self._instrumented)
                if new is not None:
                    saved[name] = value
                    namespace[name] = new
            for name, shim in BUILTIN_SHIMS.items():
                if name not in namespace:
                    namespace[name] = shim
                    added.append(name)
            self._saved.append((namespace, saved, added))
        for function, _, _ in self.swap.pairs:
            defaults = function.__defaults__
            if defaults and any(_replacement("", d) is not None for d in defaults):
                self._defaults.append((function, defaults))
                function.__defaults__ = tuple(_replacement("", d) or d for d in defaults)
        self.swap.enter()

    def leave(self) -> None:
        self.swap.leave()
        while self._defaults:
            function, defaults = self._defaults.pop()
            function.__defaults__ = defaults
        while self._saved:
            namespace, saved, added = self._saved.pop()
            namespace.update(saved)
            for name in added:
                namespace.pop(name, None)
        streams.clear_views()


def _module_of(function) -> types.ModuleType | None:
    module = sys.modules.get(getattr(function, "__module__", None) or "")
    if module is not None and getattr(function, "__globals__", None) is vars(module):
        return module
    return None


def symbolic_twin(function, modules=()):
    """The callable for symbolic runs: ``function`` under the overlay of its module and ``modules``.

    ``modules`` are module names (or module objects) whose code the target runs: the parser's own
    modules, instrumented like the target's.
    """
    if not isinstance(function, types.FunctionType):
        return function
    extra = [importlib.import_module(m) if isinstance(m, str) else m for m in modules]
    own = _module_of(function)
    instrumented = ([own] if own is not None else []) + [m for m in extra if m is not own]
    namespaces = [function.__globals__] + [vars(m) for m in instrumented if vars(m) is not function.__globals__]
    overlay = Overlay(namespaces, instrumented)

    def twin(data):
        overlay.enter()
        try:
            return function(data)
        finally:
            overlay.leave()

    twin.__wrapped__ = function
    twin.overlay = overlay
    return twin


__all__ = ["BytesShim", "GuardedModule", "IntShim", "Overlay", "StrShim", "symbolic_twin"]
