"""The study's one measurer per target form, run after a cell's window on the inputs it kept.

:func:`measure` is the same for every system: a binary target's inputs are measured as edges of
its AFL++ build under ``afl-showmap`` and replayed once on its sanitizer build for findings
(:mod:`.binary_edges`); a Python target's as coverage.py branch arcs in a child process that
also classifies each input's outcome (:mod:`.python_arcs`, :mod:`.python_child`). Both give
coverage over time from the inputs' first-seen times (the curve's value at ``t`` is the coverage of
the inputs first seen at or before ``t``) and findings deduplicated by one signature per form
(a sanitizer's crash state or ``signal:NAME``; an exception's type and place in the target's own
code, or ``signal:NAME`` / ``exit:N`` for a death of the Python process), each with its earliest input.

An input that runs past the per-input time limit (:data:`.measured.TIMEOUT_S`) counts in ``hangs``,
never as a finding.
"""

from __future__ import annotations

from pathlib import Path

from ..listing import Input
from ..study_targets import BINARY, StudyTarget
from .binary_edges import measure_binary
from .python_arcs import measure_python


def measure(target: StudyTarget, inputs: list[Input], inputs_dir: Path, times: list[float], scratch: Path,
            jobs: int = 1) -> dict:
    """The measurement of ``inputs`` (their files ``inputs_dir/<sha256>``) at each of ``times`` (seconds
    since the window started); ``scratch`` an empty directory for the measurer's files; ``jobs``
    the replays run at once (binary targets; a Python target's coverage is one process's, in order).

    ``{"measurer", "unit", "final", "curve": [[t, value], ...], "inputs", "findings": [{"signature",
    "first_s", "sha256"}], "first_finding_s", "hangs"}``."""
    ordered = sorted(inputs, key=lambda found: found.first_s)
    if target.form == BINARY:
        return measure_binary(target, ordered, inputs_dir, times, scratch, jobs)
    return measure_python(target, ordered, inputs_dir, times, scratch)
