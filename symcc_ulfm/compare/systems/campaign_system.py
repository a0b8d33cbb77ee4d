"""``campaign``: our ``symcc-ulfm launch --json`` for one window, as a child of the cell.

The command is :func:`~symcc_ulfm.launch.json_child.command` on ``WORK/state`` with the target's
options (:meth:`..study_targets.StudyTarget.launch_args`), ``--seeds SEEDS``, the system's ``launch``
list (e.g. ``--worker-kinds havoc:1,concolic:1``), :func:`window_args` for the window on the
cell's cores and ``--seed``. Its standard output (the verdict, the last JSON-object line) and
standard error go to ``WORK/launch.stdout`` and ``WORK/launch.stderr``.

Its inputs are the public corpus, ``state/corpus/objects/*`` (``store.paths``). It has no
separate findings glob: a finding's input is always a corpus object (a WAL manifest names an
input it published or the input it analysed, itself an object; ``--keep novel`` keeps findings),
so the study's measurer, which runs every input, finds them there.

After the window, :func:`start`'s ``finish`` lets the campaign end by its own deadline, with its
endpoint measurement and the oracle's verdict, waiting up to :data:`FINISH_EXTRA_S`; then it
kills the launch's session. Its notes: the exit status, the oracle's ``passed`` and problems, the
WAL's counts, the number of unique findings and, when the launch names ``--worker-kinds``, the
hand-off medians between kinds.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ...errors import ConfigError
from ...evidence.timeline import failed_workers
from ...launch import json_child
from ..study_targets import BINARY, PYTHON, StudyTarget
from .spawned import Started, log_tail, spawn

FIELDS = ("launch",)
FORMS = (PYTHON, BINARY)
FINISH_EXTRA_S = 180.0  # after the window: the campaign's start-up, endpoint measurement and oracle
VERDICT_TAIL = 1 << 20  # bytes of launch's standard output read for its verdict (its last line)
# options the cell sets itself; a system's "launch" list may not name them
CELL_OPTIONS = ("--state-dir", "--deadline", "--target", "--harness", "--seeds", "--ranks", "--workers-per-master",
                "--warm-spares", "--json", "--seed", "--failure-schedule", "--run-to-deadline", "--keep",
                "--resume")
WAL_COUNTS = ("analyzed", "generated", "unique", "novel")
STATE_DIR = "state"  # the campaign's state directory, in the cell's system directory


def window_args(seconds: float, workers: int, stop_after: int = 0) -> list[str]:
    """``launch`` options that a window of a campaign shares with the tools it is set against: one
    master and ``workers`` workers, no spare and no injected failure, a corpus of what adds
    coverage (``--keep novel``), and the whole window run (``--run-to-deadline``) even when the
    search is exhausted earlier, as a fuzzer would run it. ``stop_after``: the campaign ends once
    each worker committed that many results, the window only bounding it (a smoke test's count,
    never a figure's)."""
    budget = ["--stop-after", str(stop_after)] if stop_after else []
    return ["--keep", "novel", "--failure-schedule", "", "--deadline", f"{seconds:g}", "--run-to-deadline",
            "--ranks", str(workers + 1), "--warm-spares", "0", "--workers-per-master", str(workers), *budget]


def validate(field: str, system: dict) -> None:
    launch = system.get("launch", [])
    if not isinstance(launch, list) or not all(isinstance(item, str) for item in launch):
        raise ConfigError(f"{field}.launch", "expected a list of strings (extra symcc-ulfm launch options)")
    for item in launch:
        option = item.split("=", 1)[0]
        if option in CELL_OPTIONS:
            raise ConfigError(f"{field}.launch", f"{option} is set by the cell for every campaign; "
                                                 f"the options it sets: {' '.join(CELL_OPTIONS)}")


def start(system: dict, target: StudyTarget, work: Path, seeds_dir: Path, window_s: float, cores: Sequence[int],
          seed: int) -> Started:
    state = work / STATE_DIR
    args = [*target.launch_args(), "--seeds", str(seeds_dir), *system.get("launch", []),
            *window_args(window_s, len(cores)), "--seed", str(seed)]
    command = json_child.command(state, args)
    stdout, stderr = work / "launch.stdout", work / "launch.stderr"
    process = spawn(command, stdout, cores, errors=stderr)

    def finish() -> dict:
        try:
            process.wait(timeout=FINISH_EXTRA_S)
        except subprocess.TimeoutExpired:
            json_child.kill(process)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
        try:
            verdict = json_child.verdict_of(log_tail(stdout, VERDICT_TAIL))
        except ValueError:  # no whole verdict line (a launch killed while it printed)
            verdict = {}
        done = json_child.Launched(process.returncode, verdict, "", log_tail(stderr))
        kinds = any(item.split("=", 1)[0] == "--worker-kinds" for item in system.get("launch", []))
        notes = summary(done, state, kinds)
        return {**notes, "command": command}

    return Started([process], [(state / "corpus", "objects")], [], finish)


def summary(done: json_child.Launched, state: Path, handoffs: bool) -> dict:
    """The notes of a finished launch: exit status, verdict, WAL counts, unique findings, problems (none when it
    exited 0, the oracle passed it and every worker had a lease that succeeded: a worker whose every
    lease failed, such as a fuzzer that could not start, leaves a cell that measured the others
    alone), hand-off medians (``handoffs``)."""
    verdict = done.verdict
    notes = {"returncode": done.returncode, "passed": verdict.get("passed"),
             "wal": {key: verdict.get(f"wal_{key}") for key in WAL_COUNTS},
             "findings_unique": verdict.get("findings_unique"), "problems": []}
    if done.returncode != 0 or verdict.get("passed") is not True:
        notes["problems"] = [campaign_failure(state, done)]
        return notes
    notes["problems"] = [f"worker {rank} ({', '.join(failed['kinds'])}): all {failed['leases']} of its leases ended "
                         f"in an error, e.g. {failed['error']}" for rank, failed in failed_workers(state).items()]
    if handoffs:
        notes["handoffs"] = handoff_medians(state)
    return notes


def handoff_medians(state: Path) -> dict[str, dict]:
    """Seconds from an input's publication to its first use by a worker of another kind
    (``evidence.timeline.handoffs``): count, median and 90th percentile in each direction
    (``evidence.mechanism.latency``)."""
    from ...evidence.mechanism import latency
    from ...evidence.timeline import handoffs

    return {direction: latency(times) for direction, times in handoffs(state).items()}


def campaign_failure(state: Path, done: json_child.Launched) -> str:
    """What a campaign that failed said: launch's stderr tail and the last lines of each rank log."""
    parts = [f"launch exit {done.returncode}, passed={done.verdict.get('passed')}, "
             f"problems={done.verdict.get('problems')}", "launch stderr: " + done.stderr.strip()[-800:]]
    logs = state / "logs"
    for path in sorted(logs.glob("*")) if logs.is_dir() else []:
        if path.is_file() and not path.is_symlink() and not path.name.startswith("heartbeat"):
            lines = log_tail(path).splitlines()
            parts.append(f"{path.relative_to(state)}: " + " | ".join(line[:300] for line in lines[-3:]))
    return "\n".join(parts)
