"""``seeds``: the null system. Nothing runs; its inputs are the seeds alone, which every cell keeps
itself (:func:`..listing.keep_inputs`), so it lists nothing. A control that any fuzzer should
beat: a study whose fuzzers do not is measuring something else."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..study_targets import BINARY, PYTHON, StudyTarget
from .spawned import Started

FIELDS: tuple[str, ...] = ()
FORMS = (PYTHON, BINARY)


def validate(field: str, system: dict) -> None:
    """Nothing to check beyond its kind."""


def start(system: dict, target: StudyTarget, work: Path, seeds_dir: Path, window_s: float, cores: Sequence[int],
          seed: int) -> Started:
    return Started([], [], [], lambda: {"problems": []})
