"""The ``concolic`` executor: concolic execution of Python targets with our own engine on z3.

Modules, one concern each: :mod:`.expr` (hash-consed expression graph with exact widths, the
input's length as a variable), :mod:`.symbolic` (symbolic ints/bools), :mod:`.seq` (what symbolic
bytes and str share), :mod:`.symbytes` (the symbolic input), :mod:`.symstr` (symbolic str, codecs,
``int(s)``), :mod:`.structs` (``struct``), :mod:`.streams` (``io.BytesIO``/``StringIO``,
``memoryview``), :mod:`.lookups` (``in``, dict/set lookups, joins), :mod:`.rewrite` (instrumented
code of the parser's modules), :mod:`.shadow` (the overlay: shims, guarded modules, the twin),
:mod:`.i2s` (opaque values and input-to-state), :mod:`.path` (branch/pin recorder, stable site
ids), :mod:`.z3conv` (lazy z3 conversion, solving), :mod:`.search` (generational search),
:mod:`.tracer` (coverage, deadlines, recursion bound), :mod:`.executor` (the Executor).
"""

from .executor import DEFAULTS, ENGINE_VERSION, ConcolicExecutor

__all__ = ["ConcolicExecutor", "DEFAULTS", "ENGINE_VERSION"]
