"""``afl``: AFL++ as its parallel-fuzzing guide arranges it, one ``afl-fuzz`` per core.

A system lists the flags of each instance (``instances``): one instance alone, or one main
instance (``-M NAME``) and secondaries (``-S NAME``), or secondaries alone; each on the harness's
AFL build. Two placeholders stand for the harness's files: ``@cmplog`` (its CmpLog build, for
``-c``) and ``@dictionary`` (its dictionary, for ``-x``); a harness without one is a
:class:`~symcc_ulfm.errors.ConfigError` when the system starts. The cell sets the rest: ``-i
SEEDS -o WORK/afl -t`` :data:`TIMEOUT_MS` ``-m none -s SEED+k`` (instance ``k``), then ``--``,
the build and the harness's ``args``. There must be as many instances as the cell has cores.

Every instance runs with ``AFL_ENV`` (and ``AFL_SYNC_ENV`` when there are several:
``executors.fuzzers.afl`` owns both), pinned to the cell's cores, its output in
``WORK/<name>.log``. Its inputs are ``WORK/afl/*/queue``; its findings ``WORK/afl/*/crashes``
(not ``hangs/``: an input that timed out once is not a finding of the study's measurer either).
``finish`` stops every instance; its notes are the command lines, exit statuses and the summed
``execs_done`` of the instances' ``fuzzer_stats``, and a problem for each instance that ended
before the window did, with its log's tail.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from ...errors import ConfigError
from ...executors.binary.runs import clean_env
from ...executors.fuzzers.afl import AFL_ENV, AFL_SYNC_ENV
from ...executors.fuzzers.afl_files import execs_done, stats_of
from ..study_targets import BINARY, StudyTarget
from .spawned import Started, spawn_all, stop_all

FIELDS = ("instances",)
FORMS = (BINARY,)
TIMEOUT_MS = 1000  # afl-fuzz -t, as the campaign's afl kind measures (measure_timeout_s, 1 s)
CMPLOG, DICTIONARY = "@cmplog", "@dictionary"
CELL_FLAGS = ("-i", "-o", "-s", "-t", "-m", "--")  # flags the cell sets for every instance
_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")


def validate(field: str, system: dict) -> None:
    instances = system.get("instances")
    if not isinstance(instances, list) or not instances or not all(
            isinstance(flags, list) and all(isinstance(flag, str) for flag in flags) for flags in instances):
        raise ConfigError(f"{field}.instances", "expected a non-empty list of lists of afl-fuzz flags (strings)")
    roles = [_role(f"{field}.instances[{k}]", flags) for k, flags in enumerate(instances)]
    if len(instances) > 1:
        mains = [role for role in roles if role and role[0] == "-M"]
        if len(mains) > 1 or any(role is None for role in roles):
            raise ConfigError(f"{field}.instances", "several instances are one -M NAME and the rest -S NAME, "
                                                    "or all -S NAME")
        names = [role[1] for role in roles]
        if len(set(names)) != len(names):
            raise ConfigError(f"{field}.instances", f"instance names repeat: {names}")


def _role(field: str, flags: list[str]) -> tuple[str, str] | None:
    """``(-M or -S, name)`` of an instance's flags, None when it has neither."""
    for flag in CELL_FLAGS:
        if flag in flags:
            raise ConfigError(field, f"{flag} is set by the cell (it sets {' '.join(CELL_FLAGS)})")
    roles = [(flag, flags[k + 1] if k + 1 < len(flags) else "") for k, flag in enumerate(flags) if flag in ("-M", "-S")]
    if len(roles) > 1:
        raise ConfigError(field, "at most one -M or -S per instance")
    if roles and not _NAME.fullmatch(roles[0][1]):
        raise ConfigError(field, f"{roles[0][0]} takes a name of letters, digits, _ and -: {roles[0][1]!r}")
    return roles[0] if roles else None


def start(system: dict, target: StudyTarget, work: Path, seeds_dir: Path, window_s: float, cores: Sequence[int],
          seed: int) -> Started:
    instances = system["instances"]
    if len(instances) != len(cores):
        raise ConfigError("cores", f"the afl system has {len(instances)} instance(s) for {len(cores)} core(s): "
                                   "one instance per core")
    harness = target.harness
    places = {CMPLOG: harness.path("cmplog") if "cmplog" in harness.builds else None,
              DICTIONARY: harness.file(harness.dictionary)}
    afl_fuzz = shutil.which("afl-fuzz")
    if afl_fuzz is None:
        raise ConfigError("afl", "afl-fuzz is not on PATH: apt-get install -y afl++")
    out = work / "afl"
    env = {**clean_env(), **AFL_ENV, **(AFL_SYNC_ENV if len(instances) > 1 else {})}
    commands, names = [], []
    for k, flags in enumerate(instances):
        role = _role(f"instances[{k}]", flags)
        names.append(role[1] if role else "default")
        commands.append([afl_fuzz, *(_place(flag, places, harness.root) for flag in flags), "-i", str(seeds_dir),
                         "-o", str(out), "-t", str(TIMEOUT_MS), "-m", "none", "-s", str(seed + k), "--",
                         str(harness.path("afl")), *harness.args])
    logs = [work / f"{name}.log" for name in names]
    processes = spawn_all(commands, logs, cores, env=env)

    def finish() -> dict:
        notes = stop_all(processes, names, logs)
        execs = [execs_done(stats_of(out / name / "fuzzer_stats")) for name in names]
        return {**notes, "command": commands, "execs": sum(e for e in execs if e is not None),
                "execs_unknown": sum(e is None for e in execs)}

    return Started(processes, [(out, "*/queue")], [(out, "*/crashes")], finish)


def _place(flag: str, places: dict[str, Path | None], root: Path) -> str:
    if flag not in places:
        return flag
    path = places[flag]
    if path is None or not os.path.isfile(path):
        raise ConfigError("systems", f"{flag}: the harness {root} has no {flag[1:]} (symcc-ulfm build makes it "
                                     "where its tools allow)")
    return str(path)
