"""Comparisons as sealed, preregistered studies: systems x targets x trials (DESIGN.md §10).

- :mod:`.design`: the comparison protocol, its digest and its randomised plan;
- :mod:`.study_targets`: a protocol's target resolved (a Python function or a harness directory);
- :mod:`.systems`: how each system runs for a window on fixed cores (our campaign, AFL++ as its
  parallel-fuzzing guide arranges it, atheris on one corpus, the seeds alone);
- :mod:`.listing`: what a system holds over its window (first-seen times) and the inputs kept;
- :mod:`.measure`: one measurer per target family (afl-showmap edges, coverage.py branch arcs),
  curves over time and findings deduplicated the same way for every system;
- :mod:`.cell_run`, :mod:`.runner`: one cell, and the study runner (resume, re-run rule);
- :mod:`.analyze`: which cells count and the FuzzBench statistics (:mod:`symcc_ulfm.stats.fuzzbench`);
- :mod:`.tables`: a study directory loaded for the report notebook, its tables and figure rows;
- :mod:`.audit`: the sealed study's verifier.
"""
