"""What a symbolic run records about code it does not model, for the hybrid phase's
input-to-state (:mod:`.i2s`): dispatch on an attribute name built from text (``getattr(self,
"end_" + element)``), and the input-derived text given to a Python function of a module that is
not instrumented (:func:`.path.callee`; the executor pairs it with that module's words).
Recording never changes what the call returns."""

from __future__ import annotations

import functools
import types

from . import path as P
from .seq import SymSequence

_MAX_DISPATCH = 32  # attribute names of one prefix paired with a looked-up name


@functools.lru_cache(maxsize=256)
def _dispatch_names(owner, prefix: str) -> tuple[str, ...]:
    return tuple(n[len(prefix):] for n in dir(owner) if n.startswith(prefix) and len(n) > len(prefix))[:_MAX_DISPATCH]


def recording_getattr(obj, name, *default):
    """``getattr``, which also records dispatch on a name: for ``name`` = prefix + suffix (the
    prefix ends at its first ``_`` after two characters: ``"end_" + element``), the suffixes of the
    other attributes of ``obj``'s class (or module) with that prefix are text comparisons of the
    suffix (:func:`.path.text_compare`): the hybrid phase tries them where the suffix stands."""
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


def recording(function: types.FunctionType):
    """Wrap a Python function of a module that is not instrumented: symbolic text among its
    arguments is recorded, as its concrete value, with the function's module (:func:`.path.callee`)."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, SymSequence) and len(arg._e) <= P.MAX_TOKEN_LENGTH:
                P.callee(function.__module__, arg._plain())
        return function(*args, **kwargs)

    return call
