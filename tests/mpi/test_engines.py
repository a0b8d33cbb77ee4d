"""The ipyparallel engines (engines.py) without starting engines: flags, and dead engines vs the schedule."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.launch.engines import (
    EngineRun,
    classify_engines,
    cluster_processes,
    engine_environment,
    engine_mpi_args,
    ensure_stopped,
    ipp_root,
)

pytestmark = pytest.mark.host_wide  # ipyparallel's profile root: one at a time under xdist


class FakeRemoteError(Exception):
    def __init__(self, ename: str, evalue: str):
        super().__init__(f"{ename}({evalue})")
        self.ename, self.evalue = ename, evalue


def finished(rank: int) -> dict:
    return {"stable": rank, "role": "worker", "generation": 1, "status": "deadline-reached"}


def test_engine_flags_are_the_job_flags_with_forwarding():
    policy = build_policy(ranks=6, warm_spares=1, workers_per_master=2, failure_schedule="0:2", executor="simulate")
    args = engine_mpi_args(policy, FileModes())
    assert args[:2] == ["--with-ft", "ulfm"]
    for flag in ("--oversubscribe", "ob1", "tcp,self", "^han", "async_mpi_finalize"):
        assert flag in args
    assert ["-x", "SYMCC_ULFM_HOT_PATH=1"] == args[args.index("SYMCC_ULFM_HOT_PATH=1") - 1:][:2]
    assert "--with-ft" not in engine_mpi_args(policy, FileModes(), with_ft=False)
    assert engine_environment(FileModes())["SYMCC_ULFM_HOT_PATH"] == "1"


def test_hosts_are_passed_to_the_engine_job():
    policy = build_policy(ranks=4, warm_spares=0, workers_per_master=1, executor="simulate", hosts="a:3,b:1")
    args = engine_mpi_args(policy, FileModes())
    assert args[args.index("-H") + 1] == "a:3,b:1"


def test_scheduled_deaths_are_expected():
    results = {0: finished(0), 1: finished(1), 2: FakeRemoteError("EngineError", "Engine 2 died"), 3: finished(3)}
    c = classify_engines(results, {2})
    assert c["as_scheduled"] and c["died"] == [2] and c["failed"] == []
    assert EngineRun(c, 1.0, 1.0, False).problems() == []


def test_unscheduled_death_missing_victim_and_errors_are_not():
    results = {0: FakeRemoteError("CapabilityError", "no ULFM"), 1: FakeRemoteError("EngineError", "died"),
               2: finished(2)}
    c = classify_engines(results, {2})
    assert not c["as_scheduled"]
    assert c["unexpected_deaths"] == [1] and c["victims_alive"] == [2] and c["failed"] == [0]
    problems = EngineRun(c, 1.0, 1.0, False).problems()
    assert any("engine 0 failed: CapabilityError: no ULFM" in p for p in problems)
    assert any("[1] died but the failure schedule does not name them" in p for p in problems)
    assert any("[2] did not die" in p for p in problems)


def test_a_timed_out_run_is_not_as_scheduled():
    run = EngineRun(classify_engines({0: finished(0)}, set()), 1.0, 1.0, True)
    assert not run.as_scheduled and run.to_json()["as_scheduled"] is False
    assert "the campaign did not return within the job timeout" in run.problems()


ORPHAN = """
import os, sys
from pathlib import Path
from symcc_ulfm.launch.engines import run_on_engines
from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.launch.prepare import prepare_state_dir
policy = build_policy(ranks=4, warm_spares=0, workers_per_master=1, deadline_s=60.0, executor="simulate")
state = prepare_state_dir(policy, Path(sys.argv[1]), FileModes())
def die():
    print("campaign started", flush=True)
    os._exit(9)
run_on_engines(policy, state.root, FileModes(), cluster_id=sys.argv[2], progress=die)
"""


@pytest.mark.mpi
def test_engines_left_by_a_launcher_that_died_hard_are_stopped(tmp_path):
    """The kernel dies mid-campaign: controller, mpiexec and engines survive it; ensure_stopped ends them."""
    cluster_id = f"orphan-{uuid.uuid4().hex[:8]}"
    done = subprocess.run([sys.executable, "-c", ORPHAN, str(tmp_path / "state"), cluster_id],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 9 and "campaign started" in done.stdout, done.stderr[-2000:]
    try:
        assert cluster_processes(cluster_id), "the orphaned cluster should still be running"
        assert (ipp_root() / cluster_id).exists()
    finally:
        assert ensure_stopped(cluster_id)
    deadline = time.monotonic() + 20
    while cluster_processes(cluster_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = cluster_processes(cluster_id)
    assert not left and not (ipp_root() / cluster_id).exists(), f"still running after 20 s: {left}"
    assert not ensure_stopped(cluster_id)


@pytest.mark.mpi
def test_an_engine_job_that_failed_before_any_engine_started_is_started_again(tmp_path, monkeypatch):
    """``mpiexec`` failing to start (PRRTE under load: "The PMIx server's listener thread failed
    to start") before any engine registered changed nothing: the engine job is started again and
    noted, as ``launch`` does with its job, and the campaign runs on the second one."""
    from symcc_ulfm.launch import engines
    from symcc_ulfm.launch.prepare import prepare_state_dir

    real = engines.find_mpiexec()
    starts = tmp_path / "starts"
    wrapper = tmp_path / "mpiexec"
    wrapper.write_text(f"#!/bin/sh\necho start >> {starts}\n"
                       f"if [ $(wc -l < {starts}) = 1 ]; then echo 'PMIx listener thread failed to start'; exit 1; fi\n"
                       f'exec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(engines, "find_mpiexec", lambda: str(wrapper))
    policy = build_policy(ranks=4, warm_spares=0, workers_per_master=1, failure_schedule="", executor="simulate",
                          executor_options={"cost_s": 0.02}, stop_after=2, deadline_s=120.0)
    state = prepare_state_dir(policy, tmp_path / "state", FileModes())
    run = engines.run_on_engines(policy, state.root, FileModes(), cluster_id=f"restart-{uuid.uuid4().hex[:8]}")
    assert len(starts.read_text().split()) == 2
    assert len(run.notes) == 1 and "exited before any engine started" in run.notes[0], run.notes
    assert "PMIx listener" in run.notes[0] and run.to_json()["notes"] == run.notes
    assert run.as_scheduled and run.problems() == [] and not run.timed_out
