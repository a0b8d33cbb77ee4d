"""The symbolic twin of a target: its modules, instrumented and with builtins that understand symbols.

For a symbolic run the twin (:func:`symbolic_twin`) enters an *overlay* on the target's module
and on the extra modules it was given (the parser's own modules):

* every global is replaced by what the model registry answers for it
  (:func:`..models.registry.replacement`): models for ``io.BytesIO`` / ``io.StringIO`` /
  ``struct`` / ``re`` and their names, lru-cached functions uncached, every other imported module
  a :class:`..models.unmodelled.GuardedModule` and every other C function a pinning wrapper:
  symbolic arguments are concretised (pinned) before C code sees them, and the result of a C call
  that received symbolic data is marked opaque (:mod:`..values.opaque`); a Python function of a
  guarded module runs as it is, uninstrumented, and the input-derived text it is given is
  recorded with its module's name (:func:`..models.unmodelled.recording`: the executor pairs
  that text with the module's words);
* the module globals get the builtins shims (:data:`..models.registry.BUILTIN_SHIMS`: ``int``,
  ``bytes``, ``str``, ``len``, ``ord``, ``chr``, ``memoryview``, ``bytearray`` and ``getattr``,
  which records dispatch on a name built from text, :func:`..models.builtinslib.recording_getattr`;
  globals shadow builtins, so every function and method of the module sees them);
* the functions' code is swapped for the instrumented code of :mod:`.rewrite`, and C callables
  bound as default arguments (``_m=PATTERN.match``) are replaced like globals.

Everything is put back when the run ends (and the models forget the run,
:func:`..models.registry.cleanup`). The code objects are recompiled from the same source with the
same line numbers, so coverage locations are the same in both runs; ``isinstance`` checks against
the shims answer as the real types would (``type(x) is str`` does not: a known difference for
symbolic values).
"""

from __future__ import annotations

import importlib
import sys
import types

from ..models import BUILTIN_SHIMS, cleanup, replacement
from .rewrite import CodeSwap


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
                new = replacement(name, value, self._instrumented)
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
            if defaults and any(replacement("", d) is not None for d in defaults):
                self._defaults.append((function, defaults))
                function.__defaults__ = tuple(replacement("", d) or d for d in defaults)
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
        cleanup()


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


__all__ = ["Overlay", "symbolic_twin"]
