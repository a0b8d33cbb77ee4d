"""The ``concolic`` executor: concolic execution of Python targets with our own engine on z3.

Layers, each importing only the ones above it in this list (a newcomer reads them top down):

* :mod:`.expressions`: the hash-consed expression graph over the input bytes, the path a run
  records over it (branches, pins, and what the hybrid phase needs), z3 conversion and solving;
* :mod:`.values`: symbolic ints, bools, bytes (the input) and str, branch-free conditions,
  numbers written as text, and the opaque values computed by code the engine does not model;
* :mod:`.models`: the stdlib and builtins models behind one registry (one ``<module>lib.py``
  each), what unmodelled code becomes, and the container lookups of instrumented code;
* :mod:`.tracing`: running a target under ``settrace`` (coverage, deadlines), the outcome of a
  run, the instrumented code and the symbolic twin that applies the models for a symbolic run;
* :mod:`.hybrid`: the concrete half of a run: havoc mutants, input-to-state children, and the
  words of the target's own modules;
* :mod:`.search` (generational search over a recorded path), :mod:`.engine_options` (the
  options, their defaults and checks) and :mod:`.executor` (the Executor, which ties them together).
"""

from .engine_options import DEFAULTS
from .executor import ENGINE_VERSION, ConcolicExecutor

__all__ = ["ConcolicExecutor", "DEFAULTS", "ENGINE_VERSION"]
