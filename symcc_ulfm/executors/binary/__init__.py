"""What the kinds that run a binary target share (the ``symcc`` executor and the ``afl`` fuzzer).

``options`` (a binary target's options: its arguments and input mode, its AFL twin, the SymCC
runtime variables; their defaults and checks), ``runs`` (running a binary contained, its scratch
space, the test cases SymCC wrote) and ``afl_coverage`` (the AFL twin under ``afl-showmap``: the
coverage ids and outcomes every worker of a binary campaign measures).
"""
