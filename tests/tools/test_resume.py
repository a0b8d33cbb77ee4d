"""`launch --state-dir X --resume` runs the stored policy: the options given with it are checked
against policy.json, each field that differs is named with both values (exit 2, nothing
written), and only a longer --deadline is accepted as a change (recorded apart, in
deadline.json, by the resumed job: tests/faults/test_reliability.py runs one)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from symcc_ulfm.cli.args import given_options
from symcc_ulfm.core.deadlines import Deadlines
from symcc_ulfm.core.modes import modes_from_env
from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.errors import PolicyError
from symcc_ulfm.launch.prepare import prepare_state_dir, release, resume_policy
from symcc_ulfm.store.deadline_file import write_deadlines


def _stored(tmp_path):
    """A prepared campaign (policy.json, executor.json, seeds) whose job has not run."""
    policy = build_policy(executor="simulate", executor_options={"cost_s": 0.02}, ranks=4, warm_spares=1,
                          workers_per_master=2, deadline_s=6.0, failure_schedule="")
    state = prepare_state_dir(policy, tmp_path / "state", modes_from_env(os.environ))
    release(state)
    return policy, state


def _listing(root):
    return {p: p.stat().st_mtime_ns for p in root.rglob("*")}


def test_a_resume_names_every_field_that_differs_with_both_values_and_writes_nothing(tmp_path):
    _, state = _stored(tmp_path)
    before = _listing(state.root)
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state.root), "--resume",
                           "--workers-per-master", "3", "--executor-option", "cost_s=0.5", "--executor-option",
                           "children=2", "--deadline", "5", "--timeout", "lease_s=90", "--keep", "novel",
                           "--concolic-order", "edge"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    for named in ("workers_per_master: stored 2, given 3", "executor_options.cost_s: stored 0.02, given 0.5",
                  "executor_options.children: stored (not set), given 2", "deadline_s: stored 6.0, given 5.0",
                  "timeouts.lease_s: stored 60.0, given 90.0", 'keep: stored "all", given "novel"',
                  'concolic_order: stored "seed", given "edge"',
                  f"symcc-ulfm launch --state-dir {state.root} --resume"):
        assert named in done.stderr, done.stderr
    assert "ranks:" not in done.stderr  # not given, not compared
    assert _listing(state.root) == before  # not even launch.lock was taken


def test_options_given_as_stored_and_a_longer_deadline_are_no_difference(tmp_path):
    policy, state = _stored(tmp_path)
    same = {"ranks": 4, "workers_per_master": 2, "executor": "simulate", "failure_schedule": "",
            "executor_options": {"cost_s": 0.02}, "timeouts": {"lease_s": 60.0}, "stop_when_exhausted": True}
    assert resume_policy(state.root, state.modes, same).to_bytes() == policy.to_bytes()
    assert resume_policy(state.root, state.modes, {"deadline_s": 60.0}).to_bytes() == policy.to_bytes()
    assert resume_policy(state.root, state.modes, {}).to_bytes() == policy.to_bytes()
    with pytest.raises(PolicyError, match=r'failure_schedule: stored "", given "0:1"'):
        resume_policy(state.root, state.modes, {"failure_schedule": "0:1"})
    with pytest.raises(PolicyError, match="ulfm: stored true, given false"):
        resume_policy(state.root, state.modes, {"ulfm": False})


def test_a_resume_needs_a_campaign_and_its_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    for args in (["--resume"], ["--resume", "--state-dir", str(tmp_path / "empty")]):
        done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "launch", *args], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert ("needs --state-dir" in done.stderr) if len(args) == 1 else ("holds no campaign to resume" in done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"] and not any((tmp_path / "empty").iterdir())


def test_given_options_are_told_from_defaults_even_when_equal_or_abbreviated():
    assert given_options(["launch", "--state-dir", "x", "--resume"]) == {"state_dir", "resume"}
    assert given_options(["launch", "--deadline", "15", "--dead", "20", "--executor-option", "a=1",
                          "--timeout", "lease_s=9", "--no-ulfm"]) == {"deadline", "executor_option", "timeout",
                                                                        "no_ulfm"}
    assert given_options(["launch", "--executor", "concolic", "--slice", "5"]) == {"executor", "slice_s"}


def test_the_extended_deadline_is_the_one_compared_and_an_edited_record_is_refused(tmp_path):
    policy, state = _stored(tmp_path)
    write_deadlines(state, Deadlines(policy.sha256, policy.deadline_s).extended(1, 9.0))
    assert resume_policy(state.root, state.modes, {"deadline_s": 9.0}).to_bytes() == policy.to_bytes()
    with pytest.raises(PolicyError, match=r"deadline_s: stored 9.0, given 8.0"):
        resume_policy(state.root, state.modes, {"deadline_s": 8.0})
    state.deadline.write_text(state.deadline.read_text().replace(",", ", "))  # not as launch wrote it
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state.root), "--resume"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and f"{state.deadline} is not in canonical form" in done.stderr, done.stderr
