"""What code without a model becomes during a symbolic run, and what the run records about it.

A C callable becomes a pinning wrapper (:func:`pinning`): symbolic arguments are concretised
(pinned) before C code sees them, and the result of a call that received symbolic data is
marked opaque (:func:`..values.opaque.opaque`). An imported module becomes a
:class:`GuardedModule`, whose C callables pin and whose Python functions, unless their module is
instrumented, run as they are through :func:`recording`: the input-derived text they are given
is recorded with their module's name (:func:`..expressions.path.callee`; the executor pairs it
with that module's words for the hybrid phase's input-to-state). Recording never changes what
the call returns.
"""

from __future__ import annotations

import functools
import types

from ..expressions import path as P
from ..values.opaque import opaque
from ..values.seq import SymSequence, concrete_deep

C_CALLABLES = (types.BuiltinFunctionType, types.BuiltinMethodType)


def pinning(function):
    """Wrap a C callable: symbolic arguments are pinned first, and its result is marked opaque."""

    def call(*args, **kwargs):
        plain_args = [concrete_deep(a) for a in args]
        plain_kwargs = {k: concrete_deep(v) for k, v in kwargs.items()}
        result = function(*plain_args, **plain_kwargs)
        tainted = any(a is not p for a, p in zip(args, plain_args, strict=True)) or any(
            kwargs[k] is not v for k, v in plain_kwargs.items())
        return opaque(result) if tainted else result

    call.__name__ = getattr(function, "__name__", "c_function")
    call.__wrapped__ = function
    return call


def recording(function: types.FunctionType):
    """Wrap a Python function of a module that is not instrumented: symbolic text among its
    arguments is recorded, as its concrete value, with the function's module
    (:func:`..expressions.path.callee`)."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, SymSequence) and len(arg._e) <= P.MAX_TOKEN_LENGTH:
                P.callee(function.__module__, arg._plain())
        return function(*args, **kwargs)

    return call


class GuardedModule(types.ModuleType):
    """A view of an imported module whose C callables pin symbolic arguments and whose Python
    functions, unless they belong to a module named in ``instrumented`` (a package re-exports
    them), record the symbolic text they are given (:func:`recording`)."""

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
        return pinning(value) if isinstance(value, C_CALLABLES) else value


__all__ = ["C_CALLABLES", "GuardedModule", "pinning", "recording"]
