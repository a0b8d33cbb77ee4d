"""Hardening under real `mpiexec --with-ft ulfm`: a second launch, a killed launch, a full disk, a
hostile worker, special files in a finished run. Real jobs, real signals, a real tmpfs that
really fills up; the independent oracle decides. The same classes are in docs/bad-input.md.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.mpi import BY_COUNT, FAST_SIMULATE, launch, status_json
from helpers.processes import wait_for
from helpers.store import mounted_tmpfs

from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.evidence.oracle.rules import canonical, sha256
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.launch import json_child as launch_process
from symcc_ulfm.store.heartbeat import last_sign_of_life
from symcc_ulfm.store.runlog import BURST

pytestmark = pytest.mark.mpi
SMALL = ["--ranks", "4", "--warm-spares", "0", "--workers-per-master", "3", "--failure-schedule", ""]


def start(state: Path, *args: str) -> subprocess.Popen:
    return launch_process.start(state, args)


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, dict, str]:
    done = launch_process.finish(process, timeout)
    return done.returncode, done.verdict, done.stderr


def committed(state: Path) -> bool:
    logs = state / "logs"
    return logs.is_dir() and any(b'"event":"commit"' in p.read_bytes() for p in logs.glob("rank-*.jsonl"))


def rank_pids(state: Path) -> list[str]:
    return subprocess.run(["pgrep", "-f", f"symcc_ulfm.mpi.rank {state}$"], capture_output=True, text=True).stdout.split()


# -- one campaign per state directory --------------------------------------------------------------


def test_two_launches_on_one_new_directory_one_runs_and_its_policy_is_the_one_written(tmp_path):
    state = tmp_path / "state"
    first = start(state, *SMALL, *FAST_SIMULATE, "--deadline", "3")
    second = start(state, *SMALL, *FAST_SIMULATE, "--deadline", "5")
    results = [finish(first), finish(second)]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], [(c, e[-400:]) for c, _, e in results]
    ran = next(v for code, v, _ in results if code == 0)
    refused = next(err for code, _, err in results if code == 2)
    assert "in use by symcc-ulfm launch" in refused or "already holds a campaign" in refused
    written = json.loads((state / "policy.json").read_text())
    assert written["deadline_s"] == json.loads((state / "outcome.json").read_text())["deadline_s"]
    assert ran["policy_sha256"] == sha256((state / "policy.json").read_bytes())


def test_resume_while_the_job_runs_is_refused_naming_the_holder(tmp_path):
    """The first launch is held still (SIGSTOP) once its lock names it and its policy is written, so
    that it holds the state for as long as the second one takes to be refused; then it goes on and
    its campaign passes."""
    state = tmp_path / "state"
    first = start(state, *SMALL, *FAST_SIMULATE, "--deadline", "6")
    try:
        lock = state / "launch.lock"
        wait_for(lambda: (state / "policy.json").exists() and f"pid {first.pid} on " in lock.read_text(),
                 seen=lambda: f"launch.lock: {lock.read_text() if lock.exists() else 'none'!r}")
        first.send_signal(signal.SIGSTOP)
        try:
            again = launch(state, *SMALL, *FAST_SIMULATE, "--deadline", "6", "--resume")
        finally:
            first.send_signal(signal.SIGCONT)
        assert again.returncode == 2 and f"pid {first.pid}" in again.stderr, again.stderr
    finally:
        code, verdict, err = finish(first)
    assert code == 0 and verdict["passed"] and verdict["epochs"] == 1, err[-2000:]


IDLE_TARGET = textwrap.dedent('''
    def parse(data: bytes) -> str:
        if data[:1] == b"A":
            return "a"
        return "other"
''')


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.slow)], ids=lambda s: s.name)
def test_a_killed_launch_takes_its_job_along_and_resume_charges_what_was_used(tmp_path, sig):
    """The campaign is idle (its search is exhausted, it runs to its deadline) and logs nothing:
    the budget charged after the loss comes from the heartbeat: no earlier than the last sign of
    life seen before the signal, no later than the moment the ranks were seen gone."""
    target = tmp_path / "idle.py"
    target.write_text(IDLE_TARGET)
    state = tmp_path / "state"
    deadline = 11.0
    args = [*SMALL, "--deadline", f"{deadline:g}", "--target", f"{target}:parse", "--run-to-deadline"]
    job = start(state, *args)
    snapshot = state / "membership" / "generation-0-snapshot.json"
    started = wait_for(lambda: snapshot.exists() and json.loads(snapshot.read_text())["epoch_started_at"])
    wait_for(lambda: time.time() > started + 5, 30)
    alive_at = last_sign_of_life(state / "logs", before=time.time())
    job.send_signal(sig)
    code, _, err = finish(job, timeout=60)
    assert code == (-9 if sig == signal.SIGKILL else 128 + sig), err[-2000:]
    wait_for(lambda: not rank_pids(state), 15, seen=lambda: f"ranks still running: {rank_pids(state)}")
    gone_at = time.time()  # the job died with launch
    assert not (state / "outcome.json").exists()
    if sig != signal.SIGKILL:  # launch lived to say how to go on, in one short command
        line = next(x for x in err.splitlines() if "the campaign is resumable: " in x)
        words = shlex.split(line.split("the campaign is resumable: ", 1)[1])
        assert words == ["symcc-ulfm", "launch", "--state-dir", str(state), "--resume"]
    time.sleep(2)  # a gap between the jobs: the campaign's time (status) does not count it
    stopped = status_json(state)
    used = stopped["elapsed_s"]  # rounded to the millisecond
    assert stopped["phase"] == "stopped" and alive_at - started - 1e-3 <= used <= gone_at - started + 1e-3, \
        (alive_at - started, stopped, gone_at - started)
    resumed = launch(state, "--resume")  # the stored policy, nothing repeated
    receipt = json.loads((state / "membership" / "receipt-1.json").read_text())
    assert resumed.returncode == 0, resumed.stderr[-2000:] + json.dumps(resumed.verdict.get("problems"))
    assert receipt["kind"] == "resume" and receipt["consumed_s"] == pytest.approx(used, abs=1e-3), receipt
    charged = resumed.log_events("resume")
    assert charged and all(e["remaining_s"] == pytest.approx(deadline - used, abs=1e-3) for e in charged), charged
    ended = status_json(state)
    # ran to its deadline, in a second epoch shorter by what the first used (an uncharged one would
    # add all of it)
    assert ended["phase"] == "finished" and deadline <= ended["elapsed_s"] < deadline + used, ended
    assert ended["elapsed_s"] < time.time() - started - 2, ended


# -- what the file system can do -------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 48 MiB tmpfs, mounted for the test and unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    with mounted_tmpfs(tmp_path, "48m") as mount:
        yield mount


def fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_a_full_disk_stops_the_campaign_with_exit_7_and_the_reason_and_resume_passes(small_tmpfs):
    state = small_tmpfs / "state"
    # the first job can end only by the full disk (the budget counts from generation 1 on), the resumed one by it
    args = [*SMALL, *FAST_SIMULATE, "--stop-after", "3", "--stop-from", "1", "--deadline", "120"]
    job = start(state, *args)
    wait_for(lambda: committed(state))
    filler = fill(small_tmpfs)
    full_at = time.monotonic()
    code, verdict, err = finish(job)
    stopped_s = time.monotonic() - full_at
    assert code == 7, err[-3000:]
    reasons = " | ".join(e["error"] for e in verdict.get("rank_errors", [])) + err
    # ENOSPC as the file system says it, or as SQLite does when the query store hits it first
    assert any(m in reasons for m in ("No space left on device", "short write", "database or disk is full")), \
        reasons[-3000:]
    assert stopped_s < 30, f"the job took {stopped_s:.1f} s to stop after the disk filled up"
    filler.unlink()
    resumed = launch(state, *args, "--resume")
    v = resumed.verdict
    assert resumed.returncode == 0, resumed.stderr[-3000:] + json.dumps(v.get("problems"))
    assert v["passed"] and v["lost_objects"] == 0 and v["double_counted"] == 0 and v["epochs"] == 2
    assert resumed.outcome == "budget-reached"


# -- what a hostile or broken peer can do ----------------------------------------------------------


def adversary(tmp_path: Path, mode: str, *args: str) -> tuple[dict, list[dict]]:
    from symcc_ulfm.core.modes import FileModes
    from symcc_ulfm.core.policy import build_policy
    from symcc_ulfm.launch.conclude import conclude
    from symcc_ulfm.launch.job import run_job
    from symcc_ulfm.launch.prepare import prepare_state_dir, release

    # every worker (the adversary, rank 1, too) commits 5 results in the last generation: rank 1's
    # misbehaviours come in its first leases, so they all happen whatever the machine's load
    policy = build_policy(executor="simulate", executor_options={"cost_s": 0.02}, failure_schedule="",
                          deadline_s=120.0, stop_after=5, ranks=4, warm_spares=0, workers_per_master=3)
    state = prepare_state_dir(policy, tmp_path / "state", FileModes())
    job = run_job(policy, state, echo=lambda _: None, extra_args=["-x", "SYMCC_ULFM_TEST_ADVERSARY"],
                  env_overrides={"SYMCC_ULFM_TEST_ADVERSARY": f"1:{mode}"})
    verdict = conclude(state)
    release(state)
    events = [json.loads(line) for line in (state.root / "logs" / "rank-0.jsonl").read_text().splitlines()]
    assert json.loads(state.outcome.read_text())["status"] == "budget-reached"
    return {**verdict, "job": job}, events


def test_staged_directories_fifos_sparse_giants_and_inflated_counts_are_rejected(tmp_path):
    verdict, events = adversary(tmp_path, "staged")
    assert verdict["job"].returncode == 0 and verdict["passed"], verdict["problems"]
    assert verdict["receipts"] == [] and not [e for e in events if e["event"] == "rank-error"]  # the master lived
    reasons = " | ".join(e["reason"] for e in events if e["event"] == "result-rejected")
    for expected in ("(a directory)", "(a FIFO)", "has 4294967296 bytes", "generated=9e+17"):
        assert expected in reasons, f"{expected!r} not among the rejections: {reasons}"
    assert verdict["wal_analyzed"] >= 3 * 5
    done = [json.loads(p.read_text().splitlines()[-1]) for p in (tmp_path / "state" / "wal" / "records").iterdir()]
    assert all(r["manifest"]["generated"] == len(r["manifest"]["objects"]) for r in done if r["state"] == "done")


def test_a_message_flood_is_logged_rate_limited_and_the_loop_goes_on(tmp_path):
    verdict, events = adversary(tmp_path, "flood")
    assert verdict["job"].returncode == 0 and verdict["passed"], verdict["problems"]
    flood = [e for e in events if e["event"] == "message-rejected" and e.get("source", e.get("key")) == 1]
    held_back = sum(e.get("suppressed", 0) for e in flood)
    assert len(flood) <= BURST * 12 and len(flood) + held_back >= 4900, (len(flood), held_back)
    assert verdict["wal_analyzed"] >= 3 * 5


def test_an_unexpected_exception_on_a_rank_is_a_failure_that_ulfm_recovers(tmp_path):
    verdict, _ = adversary(tmp_path, "crash")
    assert verdict["passed"], verdict["problems"]
    assert verdict["receipts"] == [{"generation": 1, "missing": [1]}]
    assert any("failed without being scheduled" in n for n in verdict["notes"])
    log = [json.loads(line) for line in (tmp_path / "state" / "logs" / "rank-1.jsonl").read_text().splitlines()]
    errors = [e for e in log if e["event"] == "rank-error"]
    assert errors and "RuntimeError" in errors[0]["error"] and errors[0]["exit_code"] == 70
    stuck = [line for path in (tmp_path / "state" / "logs").glob("rank-*.jsonl")
             for line in path.read_text().splitlines() if '"final-agreement-timeout"' in line]
    assert stuck == []  # nobody sat out a final-agreement timeout


# -- special files and torn lines in a finished run ------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    state = tmp_path_factory.mktemp("finished") / "state"
    run = launch(state, *SMALL, *FAST_SIMULATE, "--deadline", "3")
    assert run.returncode == 0, run.stderr
    return state


def copy_of(finished: Path, tmp_path: Path) -> Path:
    state = tmp_path / "run" / "state"
    shutil.copytree(finished, state, symlinks=True)
    return state


SPECIAL = {
    "fifo-object": lambda s: os.mkfifo(s / "corpus" / "objects" / ("f" * 64)),
    "fifo-record": lambda s: os.mkfifo(s / "wal" / "records" / ("e" * 64 + ".json")),
    "zero-object": lambda s: os.symlink("/dev/zero", s / "corpus" / "objects" / ("d" * 64)),
}


CASES = [(kind, command) for kind in sorted(SPECIAL) for command in ("oracle", "verify")] + [
    ("fifo-record", "resume"), pytest.param("fifo-object", "resume", marks=pytest.mark.slow),
    pytest.param("zero-object", "resume", marks=pytest.mark.slow)]


@pytest.mark.parametrize(("kind", "command"), CASES)
def test_a_special_file_in_a_run_is_refused_with_exit_4_naming_it(finished, tmp_path, kind, command):
    state = copy_of(finished, tmp_path)
    (state.parent / "oracle.json").write_bytes((state / "oracle.json").read_bytes())
    (state.parent / "provenance.json").write_text(json.dumps({"policy_sha256": sha256((state / "policy.json").read_bytes())}))
    seal(state.parent)
    (state / "outcome.json").unlink()  # pretend the job was lost, so that a resume is allowed
    SPECIAL[kind](state)
    name = {"fifo-object": "f" * 64, "fifo-record": "e" * 64, "zero-object": "d" * 64}[kind]
    if command == "resume":
        argv = ["launch", "--state-dir", str(state), *SMALL, *FAST_SIMULATE, "--deadline", "3", "--resume"]
    else:
        argv = [command, str(state.parent if command == "verify" else state)]
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert name in done.stderr


def test_a_torn_last_log_line_is_noted_and_a_forged_count_fails_the_oracle(finished, tmp_path):
    state = copy_of(finished, tmp_path)
    with open(state / "logs" / "rank-0.jsonl", "ab") as handle:
        handle.write(b'{"t":1.0,"event":"com')  # a write cut short by a full disk
    verdict = judge(state)
    assert verdict["passed"], verdict["problems"]
    assert any("rank-0.jsonl end in a torn line" in n for n in verdict["notes"])
    record = next(p for p in sorted((state / "wal" / "records").iterdir())
                  if json.loads(p.read_text().splitlines()[-1])["state"] == "done")
    lines = record.read_text().splitlines()
    last = json.loads(lines[-1])
    last["manifest"]["generated"] = 9 * 10**17
    del last["checksum"]
    last = {"checksum": sha256(canonical(last)), **last}
    record.write_text("\n".join([*lines[:-1], canonical(last).decode()]) + "\n")
    problems = judge(state)["problems"]
    assert any("(a count taken from the worker's word)" in p for p in problems), problems


# -- many seeds ------------------------------------------------------------------------------------


@pytest.mark.slow  # about 3 minutes on 2 busy cores: every seed is published durably (fsync) before the job
def test_twenty_thousand_seeds_are_all_published_and_the_campaign_passes(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for i in range(20_000):
        (seeds / f"seed-{i:05d}").write_bytes(i.to_bytes(4, "big") + b"seed")
    run = launch(tmp_path / "state", *SMALL, *FAST_SIMULATE, *BY_COUNT, "--seeds", str(seeds), timeout=900)
    assert run.returncode == 0 and run.outcome == "budget-reached" and run.verdict["passed"], run.stderr[-2000:]
    assert "seeds: 20000 distinct inputs" in run.stderr
    record = json.loads((run.state / "seeds" / "seeds-0.json").read_text())
    assert len(record["seeds"]) == 20_000
    assert run.verdict["public_objects"] >= 20_000
