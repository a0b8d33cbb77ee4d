"""The scaling study (DESIGN.md §10): matrix cells on disk, which of them count, and their analysis.

- :mod:`.selection`: the matrix-directory format, reading it, and every accept/exclude rule.
- :mod:`.analysis`: :func:`~.analysis.analyze` writes ``selection.json`` and ``analysis/``.
- :mod:`.protocol`: the preregistered protocol, its digest, the masters rule and the randomised plan.
- :mod:`.matrix` runs the plan cell by cell (:mod:`.cell`: one campaign and its ``result.json``).
- :mod:`.study`: the sealed study directory and its verifier; :mod:`.views`: what the notebook shows.
"""
