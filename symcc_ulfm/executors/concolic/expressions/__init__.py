"""Expressions: what a symbolic value is made of, the path a run records, and solving.

:mod:`.expr` (the hash-consed expression graph over the input bytes: exact widths, static
intervals, the input's length as a variable), :mod:`.path` (the recorder of a symbolic run:
branches, pins, stable site ids, and the tokens, comparisons, regex matches, text pairs and
callee arguments the hybrid phase uses) and :mod:`.z3conv` (lazy conversion of expressions to
z3, and solving with the fewest changed bytes).
"""
