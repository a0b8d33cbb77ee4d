"""Values: the symbolic objects a target computes with, each behaving like the real value it carries.

:mod:`.symbolic` (symbolic ints and bools; asking for a bool's truth records a branch),
:mod:`.conditions` (branch-free conditions: ``all``/``any``, ranges, ``x if c else y``),
:mod:`.seq` (what symbolic bytes and str share: scans, slicing, ``==``, pinned methods) with
:mod:`.split_strip_replace` (its splitting, stripping and replacing methods), :mod:`.symbytes`
(the symbolic input), :mod:`.symstr` (symbolic str, codecs), :mod:`.numbers_as_text`
(``int(text, base)``, ``bytes.fromhex``, ``chr``, ``ord``) and :mod:`.opaque` (values computed
by unmodelled code from the input, whose comparisons are recorded for input-to-state).
"""
