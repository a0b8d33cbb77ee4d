"""Tracing: running a target, concretely or under the symbolic twin, and classifying how it ended.

:mod:`.tracer` (``sys.settrace`` over the target's files: edge coverage, a deadline, a recursion
bound), :mod:`.run_outcome` (how a traced call ended, as an execution outcome; the expected
exceptions), :mod:`.rewrite` (the instrumented code of the target's modules, with hooks in place
of lookups and literal comparisons), :mod:`.literal_compares` (the hooks of ``x == 'literal'``,
which record the literal for the hybrid phase) and :mod:`.shadow` (the symbolic twin: the
overlay that puts the models of :mod:`..models` and the instrumented code in place for one run).
"""
