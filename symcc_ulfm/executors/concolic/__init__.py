"""The ``concolic`` executor: concolic execution of Python targets with our own engine on z3.

Modules, one concern each: :mod:`.expr` (hash-consed expression graph with exact widths),
:mod:`.symbolic` (symbolic ints/bools), :mod:`.symbytes` (the symbolic input), :mod:`.path`
(branch/pin recorder, stable site ids), :mod:`.shadow` (symbolic twin of the target with shimmed
builtins), :mod:`.z3conv` (lazy z3 conversion, solving), :mod:`.search` (generational search),
:mod:`.tracer` (coverage, deadlines, recursion bound), :mod:`.executor` (the Executor).
"""

from .executor import DEFAULTS, ENGINE_VERSION, ConcolicExecutor

__all__ = ["ConcolicExecutor", "DEFAULTS", "ENGINE_VERSION"]
