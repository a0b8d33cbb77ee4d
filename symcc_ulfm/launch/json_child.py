"""``symcc-ulfm launch --json`` as a child process: its command line, and its verdict read back.

The fault matrix, the benchmarks and the tests run campaigns this way (``launch`` is then the
process they can signal, time out or resume). ``--json`` prints the verdict as the last line
of standard output that is a JSON object (:func:`verdict_of`); what ``launch`` says besides
goes to standard error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


@dataclass
class Launched:
    """A finished ``launch --json``: exit status, verdict (empty when it printed none), its output."""

    returncode: int
    verdict: dict[str, Any]
    stdout: str
    stderr: str


def command(state: Path, args: Sequence[str], python: str | None = None) -> list[str]:
    """The command line of ``launch --json`` on ``state`` with ``args``."""
    return [python or sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state), "--json", *args]


def verdict_of(stdout: str) -> dict[str, Any]:
    """The verdict ``launch --json`` printed (its last JSON-object line); empty when there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


def start(state: Path, args: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None,
          stdout: int | IO = subprocess.PIPE, stderr: int | IO = subprocess.PIPE,
          new_session: bool = False) -> subprocess.Popen:
    """Start ``launch --json``; ``env`` is added to this process's environment. With ``new_session``
    it leads a session of its own, which :func:`kill` ends as a whole."""
    return subprocess.Popen(command(state, args), stdout=stdout, stderr=stderr, text=True, cwd=cwd,
                            env={**os.environ, **(env or {})}, start_new_session=new_session)


def finish(process: subprocess.Popen, timeout: float | None = None) -> Launched:
    """Wait for a :func:`start` ed launch with piped output; one that overruns ``timeout`` is killed."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)
        out, err = process.communicate()
    return Launched(process.returncode, verdict_of(out or ""), out or "", err or "")


def kill(process: subprocess.Popen) -> None:
    """SIGKILL ``process`` (its whole session when it leads one)."""
    try:
        if os.getsid(process.pid) == process.pid:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass


def run(state: Path, args: Sequence[str], timeout: float | None = None, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> Launched:
    """Run ``launch --json`` to its end (see :func:`finish`)."""
    return finish(start(state, args, env=env, cwd=cwd), timeout)
