"""The systems a study compares, each run for one window on fixed cores, by kind.

A protocol's system is a JSON object with a ``kind``:

- ``campaign`` (:mod:`.campaign_system`): our ``symcc-ulfm launch`` with the window options and
  the system's extra ``launch`` options; any target;
- ``afl`` (:mod:`.afl_peer`): one ``afl-fuzz`` per core, flags per instance; harness targets;
- ``atheris`` (:mod:`.atheris_peer`): ``processes`` atheris fuzzers on one corpus; Python targets;
- ``seeds`` (:mod:`.seeds_only`): nothing runs: the seed corpus alone, the null system.

:func:`validate` checks a system as the protocol is read (:class:`~symcc_ulfm.errors.ConfigError`
naming ``systems.NAME``); :func:`start` starts one for a cell and returns what it started
(:class:`.spawned.Started`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...errors import ConfigError
from ..study_targets import StudyTarget
from . import afl_peer, atheris_peer, campaign_system, seeds_only
from .spawned import Started

KINDS = {"campaign": campaign_system, "afl": afl_peer, "atheris": atheris_peer, "seeds": seeds_only}

__all__ = ["KINDS", "Started", "start", "validate"]


def validate(name: str, system: dict, form: str) -> None:
    """Raise :class:`ConfigError` when ``system`` is malformed or cannot run a target of ``form``
    (:data:`..study_targets.PYTHON` or ``BINARY``)."""
    field = f"systems.{name}"
    if not isinstance(system, dict):
        raise ConfigError(field, f"expected a JSON object with a kind ({', '.join(KINDS)})")
    kind = system.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{field}.kind", f"{kind!r}: expected one of {', '.join(KINDS)}")
    module = KINDS[kind]
    unknown = sorted(set(system) - {"kind", *module.FIELDS})
    if unknown:
        raise ConfigError(field, f"unknown field(s) {', '.join(unknown)} for kind {kind} "
                                 f"(it takes: {', '.join(module.FIELDS) or 'none'})")
    if form not in module.FORMS:
        raise ConfigError(field, f"a {kind} system cannot run a {form} target (it runs: "
                                 f"{', '.join(module.FORMS)})")
    module.validate(field, system)


def start(system: dict, target: StudyTarget, work: Path, seeds_dir: Path, window_s: float, cores: Sequence[int],
          seed: int) -> Started:
    """Start a (validated) ``system`` on ``target`` for a window of ``window_s`` seconds: its files
    in the empty directory ``work``, its seeds the files of ``seeds_dir``, its processes pinned to
    ``cores``, its random number generators seeded from ``seed``. The protocol's reader checked
    the system (:func:`validate`) against its targets' forms; what only a cell knows (the
    harness's builds, the number of cores) is checked here: ConfigError. The processes run in this
    process's working directory (a target named by a relative path means what it meant here)."""
    return KINDS[system["kind"]].start(system, target, Path(work).absolute(), Path(seeds_dir).absolute(),
                                       float(window_s), list(cores), int(seed))
