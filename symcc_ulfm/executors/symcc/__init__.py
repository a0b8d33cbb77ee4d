"""The ``symcc`` executor: a real SymCC-compiled binary, driven as SymCC expects.

``adapter`` (the executor), ``target`` (what a SymCC target is made of), ``options`` (the
executor's options and SymCC's runtime variables), ``runs`` (running a binary contained, its
scratch space, the test cases SymCC wrote) and ``afl_coverage`` (the AFL twin under
``afl-showmap``). See ``docs/symcc-executor.md``.
"""
