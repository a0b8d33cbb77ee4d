"""``launch --json`` as a child process (``symcc_ulfm.launch.json_child``): command, verdict, bounds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from symcc_ulfm.launch import json_child as launch_process


def test_the_command_line_names_the_state_and_asks_for_json():
    command = launch_process.command(Path("/s"), ["--ranks", "4"], python="py")
    assert command == ["py", "-m", "symcc_ulfm", "launch", "--state-dir", "/s", "--json", "--ranks", "4"]


def test_the_verdict_is_the_last_json_line():
    out = '+ mpiexec ...\n{"passed": false}\nnoise\n{"passed": true, "x": 1}\ntrailer\n'
    assert launch_process.verdict_of(out) == {"passed": True, "x": 1}
    assert launch_process.verdict_of("no verdict at all\n") == {}


def test_a_launch_that_overruns_is_killed(tmp_path):
    ready = tmp_path / "ready"  # the child has printed its verdict: only the overrun is left to time
    child = (f"import pathlib, time; print('{{\"a\": 1}}', flush=True); pathlib.Path({str(ready)!r}).touch(); "
             "time.sleep(60)")
    process = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    until = time.monotonic() + 60
    while not ready.exists() and process.poll() is None and time.monotonic() < until:
        time.sleep(0.02)
    if not ready.exists():
        launch_process.kill(process)
        pytest.fail(f"the child did not print its verdict: {process.communicate()}")
    done = launch_process.finish(process, timeout=1.0)
    assert done.returncode == -9 and done.verdict == {"a": 1}, done
