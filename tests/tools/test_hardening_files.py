"""Hardening without a job: what a second user, the file system and bad input can do before any
rank starts. Every check runs the real command line (or the real store code) on real files,
real FIFOs, a real second user (``setpriv``) and a real small tmpfs; nothing is mocked.

The same classes are in docs/bad-input.md; the ones that need a running job are in
mpi/test_hardening_jobs.py.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers.store import mounted_tmpfs

from symcc_ulfm.errors import StoreError, UnsafeFile
from symcc_ulfm.store.dirs import ensure_dir
from symcc_ulfm.store.joblock import OwnerLock, holders, ranks_gone
from symcc_ulfm.store.reads import read_bytes
from symcc_ulfm.store.runlog import RankLog

OTHER_UID = 4242  # the second user of the multinode gate (needs no passwd entry)
SIMULATE = ["--executor", "simulate", "--executor-option", "cost_s=0.02", "--ranks", "4", "--warm-spares", "0",
            "--workers-per-master", "3", "--deadline", "3"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a second user needs root (chown, setpriv)")


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=timeout)


def as_other_user(*command: str) -> None:
    """Run ``command`` as uid/gid 4242, as the multinode gate runs host B."""
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv to run a command as a second user")
    subprocess.run(["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *command],
                   check=True, timeout=30)


# -- ownership and escalation of the state directory -----------------------------------------


@needs_root
def test_a_state_dir_owned_by_another_user_is_refused(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, OTHER_UID, OTHER_UID)
    done = cli("launch", "--state-dir", str(state), *SIMULATE)
    assert done.returncode == 2, done.stderr
    assert str(state) in done.stderr and f"uid {OTHER_UID}" in done.stderr
    assert os.listdir(state) == []


def test_a_state_dir_writable_by_others_is_refused_and_left_as_it_is(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o777)
    done = cli("launch", "--state-dir", str(state), *SIMULATE)
    assert done.returncode == 2 and str(state) in done.stderr and "writable by others" in done.stderr
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o777 and os.listdir(state) == []
    os.chmod(state, 0o770)  # group-writable without the set-group-ID bit of the shared-group contract
    done = cli("launch", "--state-dir", str(state), *SIMULATE)
    assert done.returncode == 2 and "writable by its group" in done.stderr


@needs_root
def test_a_parent_that_another_user_owns_or_can_write_is_refused(tmp_path):
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    os.chown(parent, OTHER_UID, OTHER_UID)
    done = cli("launch", "--state-dir", str(parent / "new" / "state"), *SIMULATE)
    assert done.returncode == 2 and str(parent) in done.stderr and "could replace" in done.stderr
    assert not (parent / "new").exists()
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # world-writable without the sticky bit: anyone can rename the state away
    done = cli("launch", "--state-dir", str(shared / "state"), *SIMULATE)
    assert done.returncode == 2 and str(shared) in done.stderr


@pytest.fixture
def reachable(tmp_path):
    """A directory the second user can reach (pytest's own is 0700 to root)."""
    path = Path(tempfile.mkdtemp(prefix="symcc-hardening-", dir="/tmp"))
    os.chmod(path, 0o711)
    try:
        yield path
    finally:
        shutil.rmtree(path)


@needs_root
@pytest.mark.parametrize("planted", ["job-output.txt", "logs", "policy.json", "launch.lock"])
def test_a_link_planted_by_a_group_member_is_never_followed(reachable, planted):
    """The multinode contract's shared state (root:4242, 2770): the other user may create entries,
    and plants a link to a root-owned file (or directory) where the runtime writes."""
    tmp_path = reachable
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    secret = victim / "secret"
    secret.write_bytes(b"root's own\n")
    os.chmod(secret, 0o644)
    state = tmp_path / "state"
    state.mkdir()
    os.chown(state, 0, OTHER_UID)
    os.chmod(state, 0o2770)
    target = victim if planted == "logs" else secret
    as_other_user("ln", "-s", str(target), str(state / planted))
    done = cli("launch", "--state-dir", str(state), *SIMULATE)
    assert done.returncode == 2, done.stderr
    assert str(state / planted) in done.stderr and "symbolic link" in done.stderr
    assert secret.read_bytes() == b"root's own\n" and stat.S_IMODE(os.stat(secret).st_mode) == 0o644
    assert sorted(os.listdir(victim)) == ["secret"]


@needs_root
def test_a_directory_link_of_another_user_is_never_followed_when_a_directory_is_made(reachable):
    """Mid-campaign a group member plants ``query-store/master-0 -> /elsewhere`` before a master
    makes its next generation's directory there: refused, nothing is made in /elsewhere."""
    elsewhere = reachable / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    shared = reachable / "query-store"
    shared.mkdir()
    os.chown(shared, 0, OTHER_UID)
    os.chmod(shared, 0o2770)
    as_other_user("ln", "-s", str(elsewhere), str(shared / "master-0"))
    with pytest.raises(UnsafeFile, match=f"symbolic link of uid {OTHER_UID}"):
        ensure_dir(shared / "master-0" / "generation-1", 0o700)
    with pytest.raises(UnsafeFile, match="symbolic link"):
        ensure_dir(shared / "master-0", 0o700)
    assert os.listdir(elsewhere) == []


def holding(lock: str, state: Path) -> subprocess.Popen:
    """A real process that has taken ``lock`` (a ``store.joblock`` expression on
    ``Path(sys.argv[1])``, which is ``state``) and holds it for a minute."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from symcc_ulfm.store.joblock import "
         f"OwnerLock, RanksLock; {lock}; print('held', flush=True); time.sleep(60)", str(state)],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_one_launch_per_state_dir_names_the_holder_and_dies_with_it(tmp_path):
    """A second owner is refused while a real process holds launch.lock; the lock dies with it."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    holder = holding("OwnerLock(Path(sys.argv[1]), 0o600)", state)
    try:
        done = cli("launch", "--state-dir", str(state), *SIMULATE)
        assert done.returncode == 2 and f"pid {holder.pid}" in done.stderr and "in use by" in done.stderr
        assert not (state / "policy.json").exists()
    finally:
        holder.kill()
        holder.wait()
    OwnerLock(state, 0o600).release()  # the kernel released it with its holder: nothing to clean up


def test_ranks_of_an_earlier_job_are_waited_for_and_named(tmp_path):
    """A process holding ranks.lock (a rank that outlived its job) keeps ranks_gone from succeeding."""
    rank = holding("RanksLock(Path(sys.argv[1]), 0o600, 5)", tmp_path)
    try:
        assert holders(tmp_path / "ranks.lock") == [rank.pid]
        started = time.monotonic()
        assert ranks_gone(tmp_path, 0o600, 0.5) == [rank.pid]
        assert 0.4 < time.monotonic() - started < 5
    finally:
        rank.kill()
        rank.wait()
    assert ranks_gone(tmp_path, 0o600, 5.0) == []


@pytest.mark.parametrize("starts_a_rank", [False, True])
def test_a_job_whose_mpiexec_failed_before_any_rank_started_is_started_again(tmp_path, starts_a_rank):
    """A job none of whose ranks wrote its log changed nothing and is retried (noted); one that
    started a rank is never run twice."""
    from symcc_ulfm.core.modes import FileModes
    from symcc_ulfm.core.policy import Policy
    from symcc_ulfm.launch.job import START_ATTEMPTS, supervise
    from symcc_ulfm.store.paths import StateDir

    state = StateDir(tmp_path, FileModes())
    (tmp_path / "logs").mkdir()
    count = tmp_path / "starts"
    rank_log = f"echo x >> {tmp_path}/logs/rank-0.jsonl; " if starts_a_rank else ""
    command = ["sh", "-c", f"echo start >> {count}; {rank_log}echo 'PMIx listener thread failed to start'; exit 1"]
    job = supervise(Policy(executor="simulate"), state, command, env=dict(os.environ))
    starts = len(count.read_text().split())
    assert job.returncode == 1
    if starts_a_rank:
        assert starts == 1 and job.notes == []
    else:
        assert starts == START_ATTEMPTS and len(job.notes) == START_ATTEMPTS - 1
        assert "before any rank started" in job.notes[0] and "PMIx listener" in job.notes[0]


# -- what the file system can do ---------------------------------------------------------------


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A real 64 KiB tmpfs, mounted for the test and unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    with mounted_tmpfs(tmp_path, "64k") as mount:
        yield mount


def test_a_log_on_a_full_disk_never_keeps_half_a_line(tiny_tmpfs):
    log = RankLog(tiny_tmpfs / "rank-0.jsonl", 0, 0o600)
    with pytest.raises(StoreError, match="short write|No space left"):
        for i in range(100_000):
            log.event("filler", i=i, pad="x" * 300)
    log.close()
    data = (tiny_tmpfs / "rank-0.jsonl").read_bytes()
    assert data.endswith(b"\n") and all(json.loads(line)["event"] == "filler" for line in data.splitlines())


def test_a_torn_last_log_line_is_dropped_when_the_log_is_opened_again(tmp_path):
    path = tmp_path / "rank-3.jsonl"
    log = RankLog(path, 3, 0o600)
    log.event("one")
    log.close()
    with open(path, "ab") as handle:
        handle.write(b'{"t":1,"event":"cut sh')  # a write the process did not live to finish
    again = RankLog(path, 3, 0o600)
    again.event("two")
    again.close()
    assert [json.loads(line)["event"] for line in path.read_bytes().splitlines()] == ["one", "two"]


def test_special_files_are_refused_before_a_byte_is_read(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would wait forever
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "dir").mkdir()
    with open(tmp_path / "sparse", "wb") as handle:
        handle.truncate(4 << 30)
    for name, why in (("fifo", "not a regular file"), ("zero", "symbolic link"), ("dir", "not a regular file"),
                      ("sparse", "more than the limit")):
        with pytest.raises(UnsafeFile, match=why) as caught:
            read_bytes(tmp_path / name)
        assert caught.value.exit_code == 4 and str(tmp_path / name) in str(caught.value)


# -- bad input that used to end in a traceback --------------------------------------------------


def test_a_target_that_calls_sys_exit_at_import_is_bad_input(tmp_path):
    target = tmp_path / "quits.py"
    target.write_text("import sys\nsys.exit(0)\ndef parse(data):\n    return data\n")
    done = cli("launch", "--state-dir", str(tmp_path / "state"), "--target", f"{target}:parse")
    assert done.returncode == 2 and "called sys.exit(0)" in done.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(("args", "named"), [
    (["--failure-schedule", "0:" + "9" * 5000], "at most 9 digits"),
    (["--executor-option", "cost_s=" + "[" * 20 + "]" * 20], "nested more than 16 levels"),
    (["--executor-option", "cost_s=" + "[" * 5000 + "]" * 5000], "nests too deeply"),
    ([arg for i in range(10) for arg in ("--executor-option", f"x{i}=" + "0" * 120_000)], "exceed 1048576"),
])
def test_oversized_or_deep_launch_arguments_exit_2(tmp_path, args, named):
    done = cli("launch", "--state-dir", str(tmp_path / "state"), "--executor", "simulate", *args)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "state").exists()


def test_a_200_mb_seed_is_refused_unread(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    with open(seeds / "huge", "wb") as handle:
        handle.truncate(200 << 20)
    done = cli("launch", "--state-dir", str(tmp_path / "state"), "--seeds", str(seeds), *SIMULATE)
    assert done.returncode == 2 and "huge" in done.stderr and "more than a seed may" in done.stderr
    assert not (tmp_path / "state").exists()


def test_explore_out_naming_a_file_and_a_missing_path_are_named(tmp_path):
    (tmp_path / "file").write_text("x")
    done = cli("explore", "--target", "tlv", "--seconds", "1", "--out", str(tmp_path / "file"))
    assert done.returncode == 2 and str(tmp_path / "file") in done.stderr and "Traceback" not in done.stderr
    done = cli("oracle", str(tmp_path / "missing"))
    assert done.returncode == 1 and str(tmp_path / "missing") in done.stderr and "None" not in done.stderr


# named ids: a test's id goes into the environment of every process it starts (PYTEST_CURRENT_TEST),
# and one string there may not exceed 128 KiB
@pytest.mark.parametrize("content", [b"garbage", b"[]", b"[" * 100_000 + b"]" * 100_000, b""],
                         ids=["garbage", "a-list", "nested-100000-deep", "empty"])
@pytest.mark.parametrize("command", ["oracle", "verify"])
def test_oracle_and_verify_report_a_malformed_json_file_by_name(tmp_path, command, content):
    state = tmp_path / "run" / "state"
    state.mkdir(parents=True)
    (state / "policy.json").write_bytes(content)
    done = cli(command, str(tmp_path / "run" if command == "verify" else state))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "policy.json" in done.stdout and "Traceback" not in done.stderr


def test_a_lock_or_log_that_is_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "ranks.lock")
    with pytest.raises(UnsafeFile):
        ranks_gone(tmp_path, 0o600, 0.1)
    os.mkfifo(tmp_path / "rank-0.jsonl")
    with pytest.raises(UnsafeFile):
        RankLog(tmp_path / "rank-0.jsonl", 0, 0o600)

