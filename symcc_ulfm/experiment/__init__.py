"""The scaling study (DESIGN.md §10): matrix cells on disk, which of them count, and their analysis.

- :mod:`.selection`: the matrix-directory format, reading it, and every accept/exclude rule.
- :mod:`.analysis`: :func:`~.analysis.analyze` writes ``selection.json`` and ``analysis/``.
"""
