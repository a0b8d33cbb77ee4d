"""What a system started for a window (:class:`Started`), and how its processes start and stop.

Every process of a system starts through :func:`spawn`: pinned to the cell's cores (``taskset
-c``, util-linux), leading a session of its own, standard input from ``/dev/null`` and both
outputs appended to a log file in the system's work directory (never a pipe, which a chatty
target could fill until it blocks), and dying with the thread that started it
(``PR_SET_PDEATHSIG``, kept across ``taskset``'s exec: a cell that is killed leaves no system
running in a directory its study moves aside or runs again; a campaign's job dies with its
``launch``). :func:`stop` ends each session: SIGTERM, then SIGKILL after a grace, each wait
bounded, so a target that ignores signals cannot hang a cell.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError
from ...launch.job import die_with_parent

STOP_GRACE_S = 5.0  # from SIGTERM to SIGKILL
REAP_S = 10.0  # for a killed process to be reaped; one that is not is a problem, never a hang
LOG_TAIL = 1500  # bytes of a log quoted in a problem


@dataclass
class Started:
    """A system running for a window: its processes (each leads its own session), where its inputs
    (``corpus``) and failing inputs (``findings``) appear as ``(root, glob)`` pairs (see
    :mod:`..listing`), and ``finish``, called once after the window: it stops the processes and
    returns the system's notes (``problems``: empty when it ran as expected; ``command``; more)."""

    processes: list[subprocess.Popen]
    corpus: list[tuple[Path, str]]
    findings: list[tuple[Path, str]]
    finish: Callable[[], dict]


def pinned(cores: Sequence[int]) -> list[str]:
    """The ``taskset`` prefix that pins a command (and all it starts) to ``cores``."""
    if not cores or not all(isinstance(c, int) and c >= 0 for c in cores):
        raise ConfigError("cores", f"{list(cores)!r}: expected a non-empty list of core numbers")
    taskset = shutil.which("taskset")
    if taskset is None:
        raise ConfigError("cores", "taskset is not on PATH (util-linux): apt-get install -y util-linux")
    return [taskset, "-c", ",".join(str(c) for c in cores)]


def spawn(command: Sequence[str], log: Path, cores: Sequence[int], env: dict[str, str] | None = None,
          errors: Path | None = None) -> subprocess.Popen:
    """Start ``command`` pinned to ``cores`` in a session of its own, its output appended to ``log``
    (its standard error to ``errors`` when given)."""
    with open(log, "ab") as out, open(errors or os.devnull, "ab") as err:
        return subprocess.Popen([*pinned(cores), *command], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err if errors else subprocess.STDOUT, env=env,
                                start_new_session=True, preexec_fn=die_with_parent)


def spawn_all(commands: Sequence[Sequence[str]], logs: Sequence[Path], cores: Sequence[int],
              env: dict[str, str] | None = None) -> list[subprocess.Popen]:
    """:func:`spawn` each command with its log; when one cannot start, those started are stopped."""
    processes: list[subprocess.Popen] = []
    try:
        for command, log in zip(commands, logs, strict=True):
            processes.append(spawn(command, log, cores, env=env))
    except BaseException:
        stop(processes)
        raise
    return processes


def stop_all(processes: Sequence[subprocess.Popen], names: Sequence[str], logs: Sequence[Path],
             grace_s: float = STOP_GRACE_S, finding_exits: Sequence[int] = ()) -> dict:
    """Stop a system's processes after its window (:func:`stop`): the notes ``problems`` (a process
    that ended before the window did, with its log's tail, unless its exit status is one of
    ``finding_exits``: those are ``stopped_at_finding``; one that could not be reaped) and
    ``exit_codes``."""
    ended = {name: process.poll() for process, name in zip(processes, names, strict=True)}
    problems = [f"{name} exited with status {ended[name]} before the window ended; log: {log_tail(log)}"
                for name, log in zip(names, logs, strict=True)
                if ended[name] is not None and ended[name] not in finding_exits]
    problems += stop(processes, grace_s)
    return {"problems": problems, "exit_codes": {name: p.returncode for name, p in zip(names, processes, strict=True)},
            "stopped_at_finding": sorted(name for name, code in ended.items() if code in finding_exits)}


def stop(processes: Sequence[subprocess.Popen], grace_s: float = STOP_GRACE_S) -> list[str]:
    """SIGTERM each process's session, SIGKILL what is left after ``grace_s``; the problems (a
    process that could not be reaped)."""
    for process in processes:
        _signal(process, signal.SIGTERM)
    until = time.monotonic() + grace_s
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, until - time.monotonic()))
    problems = []
    for process in processes:
        _signal(process, signal.SIGKILL)  # the rest of its session too, whether or not it ended
        try:
            process.wait(timeout=REAP_S)
        except subprocess.TimeoutExpired:
            problems.append(f"process {process.pid} ({process.args[3]}) was not reaped {REAP_S:g} s after SIGKILL")
    return problems


def _signal(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def log_tail(path: Path, limit: int = LOG_TAIL) -> str:
    """The last ``limit`` bytes of a log as text (opened without following a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"({path.name}: {exc.strerror})"
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, limit, max(0, size - limit)).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
