"""``launch --json`` as a child process (``symcc_ulfm.launch.json_child``): command, verdict, bounds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from symcc_ulfm.launch import json_child as launch_process


def test_the_command_line_names_the_state_and_asks_for_json():
    command = launch_process.command(Path("/s"), ["--ranks", "4"], python="py")
    assert command == ["py", "-m", "symcc_ulfm", "launch", "--state-dir", "/s", "--json", "--ranks", "4"]


def test_the_verdict_is_the_last_json_line():
    out = '+ mpiexec ...\n{"passed": false}\nnoise\n{"passed": true, "x": 1}\ntrailer\n'
    assert launch_process.verdict_of(out) == {"passed": True, "x": 1}
    assert launch_process.verdict_of("no verdict at all\n") == {}


def test_a_launch_that_overruns_is_killed():
    process = subprocess.Popen([sys.executable, "-c", "import time; print('{\"a\": 1}', flush=True); time.sleep(60)"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    done = launch_process.finish(process, timeout=1.0)
    assert done.returncode == -9 and done.verdict == {"a": 1}
