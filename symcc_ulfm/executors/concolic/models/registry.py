"""The registry of models: what a global of an instrumented module becomes during a symbolic run.

Each model file (``<module>lib.py`` in this package) registers its models in its
``register_models()``, which the package's ``__init__`` calls once, in a fixed order, when it is
imported:

* :func:`register`: a model for one object (a module, a class, a function), made by
  ``factory()`` each time a global *is* that object (``io.BytesIO``, ``struct``, ``re``);
* :func:`register_kind`: a model for every value ``test(value)`` accepts (a compiled pattern, a
  ``struct`` function, an ``lru_cache`` wrapper), made by ``factory(value)``;
* :func:`register_builtin`: a shim put in the globals of every instrumented module under a
  builtin's name (globals shadow builtins); :data:`BUILTIN_SHIMS` holds them in registration order;
* :func:`register_cleanup`: a function called when a symbolic run ends (:func:`cleanup`).

:func:`replacement` answers for one global, in this order: the model registered for the value
itself; for any other module, a :class:`.unmodelled.GuardedModule` (the namespace's
``__builtins__`` is left alone); the model of the first registered kind that accepts the value;
for any other C callable, a pinning wrapper (:func:`.unmodelled.pinning`); else None (left
alone). :class:`ShimMeta` makes a shim class answer ``isinstance`` and attribute lookups as the
real type would.
"""

from __future__ import annotations

import types
from collections.abc import Callable

from .unmodelled import C_CALLABLES, GuardedModule, pinning

_BY_VALUE: dict[int, tuple[object, Callable[[], object]]] = {}  # id(value): (value, factory)
_BY_KIND: list[tuple[Callable[[object], bool], Callable[[object], object]]] = []
_CLEANUPS: list[Callable[[], None]] = []
BUILTIN_SHIMS: dict[str, object] = {}
"""Builtin name -> the shim the overlay adds to an instrumented module's globals (unless it defines the name)."""


class ShimMeta(type):
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


def register(value, factory: Callable[[], object]) -> None:
    """A global that is ``value`` becomes ``factory()`` during a symbolic run."""
    _BY_VALUE[id(value)] = (value, factory)


def register_kind(test: Callable[[object], bool], factory: Callable[[object], object]) -> None:
    """A global ``value`` for which ``test(value)`` holds becomes ``factory(value)`` (kinds are
    asked in registration order, after the models of single values and the guarded modules)."""
    _BY_KIND.append((test, factory))


def register_builtin(name: str, shim) -> None:
    """The overlay puts ``shim`` under the builtin's ``name`` in an instrumented module's globals."""
    BUILTIN_SHIMS[name] = shim


def register_cleanup(function: Callable[[], None]) -> None:
    """``function()`` is called when a symbolic run ends (it forgets the run's state)."""
    _CLEANUPS.append(function)


def cleanup() -> None:
    """Forget what the models kept for the symbolic run that ended."""
    for function in _CLEANUPS:
        function()


def replacement(name: str, value, instrumented: frozenset[str] = frozenset()):
    """What a module global becomes during the symbolic run (None: left alone), in the order of
    the module docstring; ``instrumented`` names the modules whose code the overlay swaps."""
    model = _BY_VALUE.get(id(value))
    if model is not None and model[0] is value:
        return model[1]()
    if isinstance(value, types.ModuleType):
        return GuardedModule(value, instrumented=instrumented) if name != "__builtins__" else None
    for test, factory in _BY_KIND:
        if test(value):
            return factory(value)
    if isinstance(value, C_CALLABLES):
        return pinning(value)
    return None


__all__ = ["BUILTIN_SHIMS", "ShimMeta", "cleanup", "register", "register_builtin", "register_cleanup",
           "register_kind", "replacement"]
