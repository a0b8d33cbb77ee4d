"""The ``native`` executor: a binary campaign from AFL++ builds alone, without SymCC.

``concrete`` (the executor); its options, runs and AFL twin are those of every binary target
(:mod:`..binary`). See ``docs/worker-kinds.md``.
"""
