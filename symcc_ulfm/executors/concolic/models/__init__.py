"""Models: what the stdlib and the builtins become for a symbolic run, behind one registry.

The overlay (:mod:`..tracing.shadow`) asks :func:`replacement` what each global of an
instrumented module becomes, adds :data:`BUILTIN_SHIMS` to those globals, and calls
:func:`cleanup` when the run ends. Every model file registers its models in its
``register_models()``, called here, once, in this order (the order in which the kinds of values
are asked; see :mod:`.registry` for the whole order of an answer):

* :mod:`.builtinslib`: the shims of ``int``, ``bytes``, ``str``, ``len``, ``ord``, ``chr``,
  ``memoryview`` (views of symbolic buffers), ``bytearray`` and ``getattr``;
* :mod:`.iolib`: ``io.BytesIO`` and ``io.StringIO`` over symbolic buffers;
* :mod:`.functoolslib`: ``functools.lru_cache`` wrappers run uncached;
* :mod:`.relib`: ``re`` and compiled patterns, which pin what a match examined;
* :mod:`.structlib`: ``struct`` unpacking of symbolic buffers.

The other modules: :mod:`.registry` (registering and finding models; :class:`.registry.ShimMeta`
for shim classes), :mod:`.unmodelled` (what code without a model becomes: pinning C callables,
guarded modules, recording the text given to uninstrumented Python functions) and
:mod:`.containers` (``in``, ``d[k]``, ``.get``, joins and affix tests on plain containers with
symbolic keys: the hooks that the instrumented code of :mod:`..tracing.rewrite` calls).
"""

from . import builtinslib, functoolslib, iolib, relib, structlib
from .registry import BUILTIN_SHIMS, cleanup, replacement

for _models in (builtinslib, iolib, functoolslib, relib, structlib):
    _models.register_models()

__all__ = ["BUILTIN_SHIMS", "cleanup", "replacement"]
