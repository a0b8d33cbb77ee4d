"""The ``symcc`` executor: a real SymCC-compiled binary, driven as SymCC expects.

``adapter`` (the executor) and ``target`` (what a SymCC target is made of); its options, runs
and AFL twin are those of every binary target (:mod:`..binary`). See ``docs/symcc-executor.md``.
"""
