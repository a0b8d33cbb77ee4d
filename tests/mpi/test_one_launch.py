"""The run notebook and ``symcc-ulfm launch`` launch a campaign the same way (``launch.launcher``):
the same arguments give the same policy and the same verdict, and ``launch`` and ``oracle`` print
that verdict in the same words.

Both campaigns search a finite simulate space and end when it is exhausted, so what they analyzed,
generated and published is the search's closure whatever the load (which of it added coverage
first, ``wal_novel``, depends on the order, and so ``result_sha256`` may differ); the deadline is a
bound a passing run never reaches."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.mpi import FINITE, simulate_closure

from symcc_ulfm.core.modes import modes_from_env
from symcc_ulfm.evidence import rundir
from symcc_ulfm.evidence.oracle.verdict_text import verdict_lines
from symcc_ulfm.launch.launcher import Mpiexec, plan

pytestmark = pytest.mark.mpi

OPTIONS = {**FINITE, "cost_s": 0}
# the notebook's parameters that differ from its defaults (the reference campaign's) ...
PARAMETERS = {"ranks": 4, "warm_spares": 0, "failure_schedule": "", "deadline_s": 240.0, "executor": "simulate",
              "target": None, "executor_options": OPTIONS}
# ... and launch's options for the same campaign
ARGS = ["--ranks", "4", "--warm-spares", "0", "--failure-schedule", "", "--deadline", "240", "--executor", "simulate",
        *[arg for key, value in OPTIONS.items() for arg in ("--executor-option", f"{key}={value}")]]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The campaign launched the notebook's way (its parameters, in this process) and by ``launch``."""
    base = tmp_path_factory.mktemp("one-launch")
    launch = plan(Mpiexec(echo=lambda line: None), modes_from_env(os.environ), rundir.policy_from_parameters(**PARAMETERS))
    launch.prepare(base / "notebook")
    campaign = launch.run()
    done = cli("launch", *ARGS, "--state-dir", str(base / "cli"))
    assert done.returncode == 0, done.stdout + done.stderr
    return campaign, done, base / "cli"


def test_the_notebook_and_launch_give_the_same_policy_and_verdict(both):
    campaign, _, state = both
    verdict = json.loads((state / "oracle.json").read_text())
    assert campaign.verdict["passed"] and verdict["passed"], (campaign.verdict["problems"], verdict["problems"])
    assert campaign.policy.sha256 == verdict["policy_sha256"] == campaign.verdict["policy_sha256"]
    ordered = {"wal_novel"}  # the one count of the summary (what result_sha256 is over) that depends on the order
    assert {k: v for k, v in campaign.verdict["summary"].items() if k not in ordered} == \
        {k: v for k, v in verdict["summary"].items() if k not in ordered}
    closure = simulate_closure(OPTIONS)  # exhausted, not timed
    assert (verdict["wal_analyzed"], verdict["wal_generated"]) == (closure["analyzed"], closure["generated"])


def test_launch_and_oracle_print_the_verdict_in_the_same_words(both):
    _, done, state = both
    verdict = json.loads((state / "oracle.json").read_text())
    lines = verdict_lines({**verdict, "notes": [], "problems": []}, str(state))
    assert lines[0].startswith("oracle: PASS") and lines[1].startswith("generation 0;")
    assert "\n".join(lines) in done.stdout
    judged = cli("oracle", str(state))
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert judged.stdout.splitlines()[:len(lines)] == lines
