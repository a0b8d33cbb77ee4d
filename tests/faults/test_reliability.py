"""Reliability under real faults: the fault-matrix subset, resume, hostile peers, tampered state.

All campaigns are real `mpiexec --with-ft ulfm` jobs; the independent oracle decides. They end by
a budget by count (``launch --stop-after``), so each fault meets a running campaign whatever the
machine's load; only the deadline's own behaviour is tested against the clock.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mpi import BY_COUNT, FAST_SIMULATE, launch

from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.gates.faults import SAFETY_DEADLINE_S, SCENARIOS, format_table, run_scenario
from symcc_ulfm.launch.conclude import conclude
from symcc_ulfm.launch.job import run_job
from symcc_ulfm.launch.prepare import prepare_state_dir

pytestmark = pytest.mark.mpi
BY_NAME = {s.name: s for s in SCENARIOS}


# sigstop-past-lease-timeout and whole-job-restart run in the two tests after this one, which
# check more of them.
@pytest.mark.parametrize("name", ["worker-sigkill", "fuzzer-worker-killed",
                                  pytest.param("master-killed-publishing-slices", marks=pytest.mark.slow),
                                  pytest.param("hybrid-whole-job-restart", marks=pytest.mark.slow)])
def test_fault_matrix_subset(tmp_path, name):
    outcome = run_scenario(BY_NAME[name], tmp_path, deadline_s=6.0)
    print(format_table([outcome]))
    assert outcome.passed, outcome.reasons
    assert outcome.verdict["lost_objects"] == 0 and outcome.verdict["double_counted"] == 0


def test_sigstopped_worker_is_fenced_not_waited_for(tmp_path):
    outcome = run_scenario(BY_NAME["sigstop-past-lease-timeout"], tmp_path, deadline_s=6.0)
    state = tmp_path / "sigstop-past-lease-timeout"
    expired = [json.loads(line) for p in (state / "logs").glob("rank-*.jsonl") for line in p.read_text().splitlines()
               if '"lease-expired"' in line]
    assert outcome.passed, outcome.reasons
    assert outcome.verdict["lost_objects"] == 0 and outcome.verdict["double_counted"] == 0
    assert expired and expired[0]["worker"] == 2 and expired[0]["fenced"] is True


@pytest.mark.slow
@pytest.mark.faults
def test_whole_fault_matrix(tmp_path):
    chosen = [s for s in SCENARIOS if os.geteuid() == 0 or not s.needs_root]
    outcomes = [run_scenario(s, tmp_path / str(i), deadline_s=6.0) for i in range(2) for s in chosen]
    print(format_table(outcomes))
    assert all(o.passed for o in outcomes), [o.reasons for o in outcomes if not o.passed]


def test_resume_accounts_for_both_jobs_and_keeps_the_deadline_budget(tmp_path):
    outcome = run_scenario(BY_NAME["whole-job-restart"], tmp_path, deadline_s=6.0)
    assert outcome.passed, outcome.reasons
    assert outcome.verdict["lost_objects"] == 0 and outcome.verdict["double_counted"] == 0
    state = tmp_path / "whole-job-restart"
    receipt = json.loads((state / "membership" / "receipt-1.json").read_text())
    started = json.loads((state / "membership" / "generation-0-snapshot.json").read_text())["started_at"]
    # the killed job is charged what it used (it was killed after its first commit), not its deadline
    assert receipt["kind"] == "resume" and 0 < receipt["consumed_s"] < receipt["resumed_at"] - started
    outcome_file = json.loads((state / "outcome.json").read_text())
    assert outcome_file["epoch"] == 1 and outcome_file["status"] == "budget-reached"
    assert outcome_file["deadline_s"] == SAFETY_DEADLINE_S


def test_a_longer_deadline_extends_a_finished_campaign_verifiably(tmp_path):
    """``--resume --deadline 7`` after 4 s: the stored policy runs 3 s more, the extension is
    recorded in deadline.json (policy.json unchanged) and the oracle judges the new epoch by it."""
    first = launch(tmp_path / "state", "--ranks", "4", "--warm-spares", "1", "--workers-per-master", "2",
                   "--failure-schedule", "", "--deadline", "4", "--run-to-deadline", *FAST_SIMULATE)
    assert first.returncode == 0, first.stderr[-2000:]
    state = first.state
    policy = (state / "policy.json").read_bytes()
    shorter = launch(state, "--resume", "--deadline", "3")
    assert shorter.returncode == 2 and "deadline_s: stored 4.0, given 3.0" in shorter.stderr
    assert not (state / "deadline.json").exists()
    again = launch(state, "--resume", "--deadline", "7")
    assert again.returncode == 0, again.stderr[-2000:] + json.dumps(again.verdict.get("problems"))
    assert (state / "policy.json").read_bytes() == policy
    assert json.loads((state / "deadline.json").read_text())["extensions"] == [{"from_epoch": 1, "deadline_s": 7.0}]
    receipt = json.loads((state / "membership" / "receipt-1.json").read_text())
    assert receipt["consumed_s"] == 4.0  # the first job is charged up to its own deadline
    outcome = json.loads((state / "outcome.json").read_text())
    assert outcome["deadline_s"] == 7.0 and outcome["status"] == "deadline-reached"
    assert 3.0 - 0.5 <= outcome["ended_at"] - receipt["resumed_at"] < 3.0 + 5
    assert any("deadline extended from 4 s to 7 s" in note for note in again.verdict["notes"])
    assert launch(state, "--resume").returncode == 2  # reached the extended deadline: over again
    # the oracle reads the extension itself: a longer one than the job ran to fails the outcome
    forged = tmp_path / "forged"
    shutil.copytree(state, forged, symlinks=True)
    (forged / "deadline.json").write_text((state / "deadline.json").read_text().replace("7.0", "70.0"))
    assert any("before the deadline" in p for p in judge(forged)["problems"])
    (forged / "deadline.json").write_text((state / "deadline.json").read_text().replace("7.0", "3.0"))
    assert any("does not follow a later epoch with a longer deadline" in p for p in judge(forged)["problems"])


def test_hostile_worker_messages_are_rejected_and_the_campaign_continues(tmp_path):
    # the adversary (rank 1) misbehaves in its first two leases: its budget of 4 results comes after them
    policy = build_policy(executor="simulate", executor_options={"cost_s": 0.02}, failure_schedule="",
                          deadline_s=SAFETY_DEADLINE_S, stop_after=4, ranks=6, warm_spares=1, workers_per_master=2)
    state = prepare_state_dir(policy, tmp_path / "state", FileModes())
    job = run_job(policy, state, echo=lambda _: None, extra_args=["-x", "SYMCC_ULFM_TEST_ADVERSARY"],
                  env_overrides={"SYMCC_ULFM_TEST_ADVERSARY": "1"})
    verdict = conclude(state)
    assert job.returncode == 0 and verdict["passed"], verdict["problems"]
    assert json.loads(state.outcome.read_text())["status"] == "budget-reached"
    rejected = [json.loads(line) for line in (state.root / "logs" / "rank-0.jsonl").read_text().splitlines()
                if '-rejected"' in line]
    reasons = " | ".join(e["reason"] for e in rejected)
    for expected in ("not UTF-8 JSON", "larger than", "does not match the lease", "result of generation 7",
                     "claims 1001", "failure-sentinel tag", "FRONTIER is not a worker message", "has SHA-256",
                     "symbolic link"):
        assert expected in reasons, f"{expected!r} not among the rejections: {reasons}"
    assert verdict["wal_analyzed"] >= 3 * 4  # the campaign went on after the attack


FINISHED = ("--ranks", "6", "--warm-spares", "1", "--workers-per-master", "2", "--failure-schedule", "", *BY_COUNT,
            *FAST_SIMULATE)


def _finished_run(tmp_path: Path) -> Path:
    run = launch(tmp_path / "state", *FINISHED)
    assert run.returncode == 0, run.stderr
    return run.state


def test_resume_refuses_a_corrupted_wal_record_and_leaves_it_alone(tmp_path):
    state = _finished_run(tmp_path)
    (state / "outcome.json").unlink()  # pretend the job was lost, so that a resume is allowed
    record = sorted((state / "wal" / "records").iterdir())[0]
    data = record.read_bytes()
    torn = data[:40] + bytes([data[40] ^ 1]) + data[41:]  # an edited byte in its first line
    record.write_bytes(torn)
    run = launch(state, *FINISHED, "--resume")
    assert run.returncode == 4
    assert record.name[:-5] in run.stderr and "refusing to resume" in run.stderr
    assert record.read_bytes() == torn


def test_resume_with_a_changed_target_is_refused(tmp_path):
    target = tmp_path / "target.py"
    target.write_text("def parse(data):\n    return data[:1] == b'a'\n")
    args = ["--ranks", "4", "--warm-spares", "0", "--workers-per-master", "3", "--failure-schedule", "",
            "--deadline", "3", "--target", f"{target}:parse"]
    run = launch(tmp_path / "state", *args)
    assert run.returncode == 0, run.stderr
    (run.state / "outcome.json").unlink()  # pretend the job was lost, so that a resume is allowed
    target.write_text("def parse(data):\n    return data[:1] == b'b'\n")  # the target changed meanwhile
    again = launch(run.state, *args, "--resume")
    assert again.returncode == 6, again.stderr
    assert "executor identity" in again.stderr and "the target or its options changed" in again.stderr
    assert not (run.state / "outcome.json").exists()


def test_a_tampered_corpus_object_is_never_overwritten_and_fails_the_oracle(tmp_path):
    state = _finished_run(tmp_path)
    victim = sorted((state / "corpus" / "objects").iterdir())[-1]
    tampered = b"tampered" + victim.read_bytes()
    victim.write_bytes(tampered)
    oracle = subprocess.run([sys.executable, "-m", "symcc_ulfm", "oracle", str(state), "--json"],
                            capture_output=True, text=True)
    assert oracle.returncode == 1
    assert f"corpus/objects/{victim.name}: content does not hash to its name" in oracle.stdout
    assert victim.read_bytes() == tampered


def test_a_lone_survivor_stops_instead_of_claiming_the_deadline(tmp_path):
    """Two of three ranks die at once: the survivor cannot form a master and a worker."""
    import os
    import signal
    import threading

    from symcc_ulfm.gates.faults import _pid_of, _started_at, _wait_for

    state = tmp_path / "state"

    def kill_both():  # both stopped first: no recovery can end between the two deaths
        if _wait_for(lambda: _started_at(state), 120):
            pids = [_pid_of(state, rank) for rank in (1, 2)]
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in pids:
                    os.kill(pid, sig)

    killer = threading.Thread(target=kill_both)
    killer.start()
    # generation 0 cannot end by the budget before the kills; the resumed generation 2 ends by it
    args = ["--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2", "--failure-schedule", "",
            "--stop-after", "3", "--stop-from", "1", "--deadline", "60", *FAST_SIMULATE]
    run = launch(state, *args)
    killer.join()
    assert run.returncode == 1
    outcome = json.loads((state / "outcome.json").read_text())
    assert outcome["status"] == "stopped-too-few-members"
    assert run.verdict["receipts"] == [{"generation": 1, "missing": [1, 2]}]
    assert any("stopped-too-few-members" in p for p in run.verdict["problems"])
    assert outcome["ended_at"] < outcome["started_at"] + 30  # it stopped, it did not sit out the deadline
    # "stopping with state intact": a resume continues with the rest of the budget
    again = launch(state, *args, "--resume")
    assert again.returncode == 0, again.stderr[-2000:] + json.dumps(again.verdict.get("problems"))
    receipt = json.loads((state / "membership" / "receipt-2.json").read_text())
    assert receipt["kind"] == "resume" and receipt["consumed_s"] < 30
    assert json.loads((state / "outcome.json").read_text())["status"] == "budget-reached"
