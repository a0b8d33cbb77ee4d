"""Bad input at the command line: a clear message naming what was wrong, exit 2, nothing written.

The same table is in docs/bad-input.md.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

BAD_LAUNCHES = [
    (["--ranks", "1"], "ranks"),
    (["--warm-spares", "9"], "warm_spares"),
    (["--workers-per-master", "0"], "workers_per_master"),
    (["--deadline", "-1"], "deadline_s"),
    (["--deadline", "nan"], "deadline_s"),
    (["--executor", "klee"], "executor"),
    (["--failure-schedule", "0-2"], "failure_schedule"),
    (["--failure-schedule", "0:2@lunch"], "unknown phase"),
    (["--failure-schedule", "0:99"], "outside 0..9"),
    (["--failure-schedule", "0:2,2:3"], "never reached"),
    (["--failure-schedule", "0:1@commit"], "@commit needs a master"),
    (["--failure-schedule", "0:2@idle"], "@idle needs a warm spare"),
    (["--failure-schedule", "0:2,0:2"], "same rank twice"),
    (["--failure-schedule", "0:1,0:2,0:3,0:5,0:6"], "half of its ranks"),
    (["--hosts", "a:9,b"], "hosts"),
    (["--hosts", "a:5,b:4"], "9 slots for 10 ranks"),
    (["--hosts", "a:0,b:10"], "hosts"),
    (["--minimum-hosts", "2"], "minimum_hosts"),
    (["--timeout", "lease_s=soon"], "--timeout"),
    (["--timeout", "lease_s=-3"], "timeouts.lease_s"),
    (["--executor", "simulate", "--executor-option", "cost=1"], "executor_options.cost"),
    (["--executor", "simulate", "--failure-schedule", "0:2", "--no-ulfm"], "injected failures need the ULFM path"),
    (["--executor", "simulate", "--mix", "adaptive"], "the adaptive mix lends analysis slots"),
    (["--executor", "simulate", "--workers-per-master", "2", "--worker-kinds", "simfuzz:1,simulate:1",
      "--idle", "wait", "--mix", "adaptive"], "it needs --idle fuzz"),
]

BAD_MODES = ["644", "0o644", "0999", "rw-r--r--", "", "0666", "0602", "0400", " 0600", "0600 "]

BAD_TARGETS = ["no_such_builtin", "no_such_module_xyz:parse", "/nonexistent/file.py:parse", "json:no_such_function"]


def run_cli(tmp_path, *args, env=None):
    import os

    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state), *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )
    return done, state


@pytest.mark.parametrize(("args", "named"), BAD_LAUNCHES)
def test_bad_launch_arguments(tmp_path, args, named):
    done, state = run_cli(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert not state.exists(), "nothing may be written for bad input"


@pytest.mark.parametrize("variable", ["SYMCC_ULFM_SNAPSHOT_FILE_MODE", "SYMCC_SHARED_CORPUS_FILE_MODE"])
@pytest.mark.parametrize("value", BAD_MODES)
def test_bad_file_modes(tmp_path, variable, value):
    done, state = run_cli(tmp_path, "--executor", "simulate", env={variable: value})
    assert done.returncode == 2
    assert variable in done.stderr and "0600" in done.stderr  # names the variable and the accepted form
    assert not state.exists()


@pytest.mark.parametrize("target", BAD_TARGETS)
def test_explicit_target_that_matches_nothing_exits_2_and_prints_it(tmp_path, target):
    done, state = run_cli(tmp_path, "--target", target)
    assert done.returncode == 2
    assert target in done.stderr
    assert not state.exists()


def test_explore_with_unknown_target_exits_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "explore", "--target", "nope", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "nope" in done.stderr


@pytest.mark.parametrize("budget", [["--runs", "-1"], ["--seconds", "-1"], ["--seconds", "nan"]])
def test_explore_with_a_negative_budget_exits_2_naming_it(tmp_path, budget):
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "explore", "--target", "tlv", *budget,
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and budget[0] in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()


def test_existing_state_dir_is_not_reused_without_resume(tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "policy.json").write_text("{}")
    done, _ = run_cli(tmp_path, "--executor", "simulate")
    assert done.returncode == 2 and "already holds a campaign" in done.stderr
    assert (tmp_path / "state" / "policy.json").read_text() == "{}"


def test_a_non_empty_directory_that_is_not_a_state_is_refused_with_nothing_written(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "thesis.tex").write_text("mine")
    done, _ = run_cli(tmp_path, "--executor", "simulate")
    assert done.returncode == 2 and "not empty and holds no campaign (thesis.tex)" in done.stderr
    assert sorted(p.name for p in state.iterdir()) == ["thesis.tex"]


def test_an_empty_directory_and_a_state_that_died_before_its_policy_are_accepted(tmp_path):
    """Accepting it is ``prepare_state_dir``'s decision (the refusals above are too): taken here
    in-process, without running the job."""
    import os

    from symcc_ulfm.core.modes import modes_from_env
    from symcc_ulfm.core.policy import build_policy
    from symcc_ulfm.launch.prepare import prepare_state_dir, release

    state = tmp_path / "state"
    (state / "wal" / "records").mkdir(parents=True)
    (state / ".tmp-policy.json-1-ab").write_text("")
    policy = build_policy(executor="simulate", deadline_s=1.0)
    release(prepare_state_dir(policy, state, modes_from_env(os.environ)))
    assert (state / "policy.json").exists()


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["model", "usl", "--workers", "8,32", "--throughput", "1,2,3"], ""),
        (["model", "usl", "--workers", "8,x", "--throughput", "1,2"], "--workers"),
        (["model", "wilson", "--failures", "5", "--trials", "3"], ""),
    ],
)
def test_bad_model_input(argv, named):
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", *argv], capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in done.stderr


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["status", "{tmp}"], "holds no policy.json"),
        (["status", "{tmp}/missing"], "STATE_DIR"),
        (["status", "{tmp}", "--watch", "0"], "expected seconds between 0.1 and 3600"),
        (["status", "--watch", "{tmp}"], "give the directory before --watch"),
    ],
)
def test_bad_status_input(tmp_path, argv, named):
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", *[a.format(tmp=tmp_path) for a in argv]],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written
