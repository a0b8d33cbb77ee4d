"""``atheris``: ``processes`` atheris fuzzers (libFuzzer) sharing one corpus directory.

Each process is :mod:`.atheris_driver` on the target, pinned to the cell's cores, its output in
``WORK/atheris-<k>.log``; libFuzzer's arguments: the corpus ``WORK/corpus`` (the seeds copied
into it first; libFuzzer writes what it finds there and reloads what the others wrote), ``-seed=``
``SEED+k``, ``-max_total_time`` a minute beyond the window (the cell stops it first),
``-artifact_prefix=WORK/crashes/``, ``-timeout=`` :data:`TIMEOUT_S`, ``-rss_limit_mb=4096`` and
the exit statuses below, then the system's ``options`` (libFuzzer flags: ``-use_value_profile=1``). Its inputs are
``WORK/corpus/*``, its findings ``WORK/crashes/*`` (the driver's and libFuzzer's).
``finish`` stops the processes. A process that ended before the window did is a problem, unless
libFuzzer ended it at a finding (exit status :data:`ERROR_EXIT` or :data:`TIMEOUT_EXIT`: a native
crash, an out-of-memory, a timeout), as libFuzzer stops at its first: noted as
``stopped_at_finding``. The exceptions a Python target raises do not stop it (:mod:`.atheris_driver`).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ...errors import ConfigError
from ..study_targets import PYTHON, StudyTarget
from .spawned import Started, spawn_all, stop_all

FIELDS = ("processes", "options")
FORMS = (PYTHON,)
MAX_PROCESSES = 64
TIMEOUT_S = 5  # libFuzzer -timeout: one input's bound
EXTRA_S = 60  # -max_total_time beyond the window
# libFuzzer's exit statuses at a finding that ends it (a native crash, an uncaught exception, an
# out-of-memory; a timeout): the process stopped as libFuzzer does, not a system that failed
ERROR_EXIT, TIMEOUT_EXIT = 77, 70
CELL_FLAGS = ("-seed", "-max_total_time", "-artifact_prefix", "-runs", "-timeout", "-rss_limit_mb", "-error_exitcode",
              "-timeout_exitcode")
_FLAG = re.compile(r"-[a-z_]+=[^\s]*")


def validate(field: str, system: dict) -> None:
    processes = system.get("processes", 1)
    if type(processes) is not int or not 1 <= processes <= MAX_PROCESSES:
        raise ConfigError(f"{field}.processes", f"{processes!r}: expected an integer from 1 to {MAX_PROCESSES}")
    options = system.get("options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) and _FLAG.fullmatch(o) for o in options):
        raise ConfigError(f"{field}.options", "expected a list of libFuzzer flags like -use_value_profile=1")
    for option in options:
        if option.split("=", 1)[0] in CELL_FLAGS:
            raise ConfigError(f"{field}.options", f"{option}: set by the cell (it sets {' '.join(CELL_FLAGS)})")


def start(system: dict, target: StudyTarget, work: Path, seeds_dir: Path, window_s: float, cores: Sequence[int],
          seed: int) -> Started:
    corpus, crashes = work / "corpus", work / "crashes"
    shutil.copytree(seeds_dir, corpus)
    crashes.mkdir()
    count = system.get("processes", 1)
    names = [f"atheris-{k}" for k in range(count)]
    logs = [work / f"{name}.log" for name in names]
    commands = [[sys.executable, "-m", __package__ + ".atheris_driver", target.spec, json.dumps(list(target.modules)),
                 str(crashes), "--", str(corpus), f"-seed={seed + k}", f"-max_total_time={int(window_s) + EXTRA_S}",
                 f"-artifact_prefix={crashes}/", f"-timeout={TIMEOUT_S}", "-rss_limit_mb=4096",
                 f"-error_exitcode={ERROR_EXIT}", f"-timeout_exitcode={TIMEOUT_EXIT}", *system.get("options", [])]
                for k in range(count)]
    processes = spawn_all(commands, logs, cores)

    def finish() -> dict:
        return {**stop_all(processes, names, logs, finding_exits=(ERROR_EXIT, TIMEOUT_EXIT)), "command": commands}

    return Started(processes, [(corpus, "*")], [(crashes, "*")], finish)
