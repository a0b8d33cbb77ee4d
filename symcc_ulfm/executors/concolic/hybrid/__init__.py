"""Hybrid: the concrete half of a run, after the symbolic part.

:mod:`.havoc` (AFL-style havoc mutants, the run's dictionary, truncations, and the loop that
measures them and keeps those that reach new edges), :mod:`.input_to_state` (children that put
a compared operand where the other occurs in the input; pairs from regex matches) and
:mod:`.module_words` (the words of the target's own modules: code constants, regex literals and
samples).
"""
