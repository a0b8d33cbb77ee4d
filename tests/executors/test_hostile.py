"""A target that attacks its sandbox: each attack is one contained, attributed execution.

Real sandboxes, isolated as a campaign runs them (user, mount and PID namespaces): the forked copy
stays silent, the daemon dies with the execution, writes into the state are refused by the
kernel, closed or garbled pipes and every ``BaseException`` become findings of the input that
did it, and the sandbox serves the next input.
"""

from __future__ import annotations

import os
import shutil
import textwrap
import time
import uuid

import pytest
from helpers.hostile import ATTACKS, SEED, marked_processes, write_hostile

from symcc_ulfm.executors import create
from symcc_ulfm.executors.sandbox import isolation
from symcc_ulfm.executors.sandbox.parent import Sandbox

pytestmark = pytest.mark.skipif(isolation.unavailable() is not None, reason="no user namespaces here")


@pytest.fixture
def hostile(tmp_path):
    state = tmp_path / "state"
    for sub in ("corpus/objects", "corpus/claims", "wal/records"):
        (state / sub).mkdir(parents=True)
    (state / "wal" / "records" / "r.json").write_bytes(b"{}\n")
    marker = f"hostile-{uuid.uuid4().hex}"
    target = write_hostile(tmp_path, state, marker)
    sandbox = create("concolic", target, {"exec_timeout_s": 2.0})
    assert isinstance(sandbox, Sandbox)
    yield sandbox, state, marker
    sandbox.close()
    assert not _wait_gone(marker), "a process of the target outlived its sandbox"


def _wait_gone(marker: str) -> list[int]:
    deadline = time.monotonic() + 5
    while (left := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _still_serves(sandbox: Sandbox) -> None:
    assert sandbox.measure(SEED).outcome.kind == "ok"


def test_a_forked_copy_that_returns_into_the_executor_stays_silent(hostile):
    sandbox, _, _ = hostile
    result = sandbox.run(b"F" + SEED, mutate=False)
    [finding] = result.findings
    assert (finding.outcome.kind, finding.data) == ("exception", b"F" + SEED)
    assert finding.outcome.signature.startswith("RuntimeError at hostile.py:parse:")
    assert sandbox.deaths == 0  # the copy left without a word; the child that answered is the one forked
    _still_serves(sandbox)


def test_a_daemon_in_a_session_of_its_own_dies_with_the_execution(hostile):
    sandbox, _, marker = hostile
    measured = sandbox.measure(b"S" + SEED)
    assert measured.outcome.kind == "exception" and measured.outcome.signature.startswith("ChildProcessError")
    assert not _wait_gone(marker), "the daemon outlived the execution that started it"
    _still_serves(sandbox)


def test_writes_into_the_state_directory_are_refused_by_the_kernel(hostile):
    sandbox, state, _ = hostile
    measured = sandbox.measure(b"W" + SEED)
    assert measured.outcome.kind == "exception"
    assert "OSError" in measured.outcome.signature and "Read-only file system" in measured.outcome.detail
    assert os.listdir(state / "corpus" / "objects") == [] and os.listdir(state / "corpus" / "claims") == []
    assert (state / "wal" / "records" / "r.json").read_bytes() == b"{}\n"
    _still_serves(sandbox)


@pytest.mark.parametrize("attack, kind", [(b"C", "crash"), (b"G", "protocol")], ids=["closed", "garbled"])
def test_a_child_whose_pipes_the_target_closed_or_garbled_names_the_input(hostile, attack, kind):
    """The child dies after the execution: the execution slot still names the input that was
    executing last, which becomes a crash finding once a fresh child confirms it. Or it speaks
    garbage: a protocol finding of the run's input. Either way the next child serves."""
    sandbox, _, _ = hostile
    data = attack + SEED
    result = sandbox.run(data, mutate=False)
    assert [f.data for f in result.findings] == [data], result
    assert result.findings[0].outcome.kind == kind
    assert sandbox.deaths >= 1
    _still_serves(sandbox)


def test_a_target_cannot_reach_the_process_that_owns_its_sandbox(hostile):
    """The kill meant for the worker rank (here: this test process) cannot leave the namespace."""
    sandbox, _, _ = hostile
    measured = sandbox.measure(b"R" + SEED)
    assert (measured.outcome.kind, measured.outcome.signature) == ("crash", "SIGKILL")
    _still_serves(sandbox)


@pytest.mark.parametrize("attack, name", [(b"K", "KeyboardInterrupt"), (b"X", "SystemExit"),
                                          (b"E", "GeneratorExit"), (b"B", "Escape")])
def test_every_base_exception_is_a_finding_with_its_frame(hostile, attack, name):
    sandbox, _, _ = hostile
    data = attack + SEED
    measured = sandbox.measure(data)
    assert measured.outcome.kind == "exception"
    assert measured.outcome.signature.startswith(f"{name} at hostile.py:parse:"), measured.outcome
    result = sandbox.run(data, mutate=False)
    assert [(f.outcome.signature, f.data) for f in result.findings] == [(measured.outcome.signature, data)]
    assert sandbox.deaths == 0
    _still_serves(sandbox)


def test_explore_on_the_hostile_target_finds_each_attack_once(tmp_path):
    """``explore`` (one process, no MPI) with the same sandbox: every attack a finding, no process left."""
    from symcc_ulfm.tools.explore import explore

    state = tmp_path / "state"
    for sub in ("corpus/objects", "corpus/claims", "wal/records"):
        (state / sub).mkdir(parents=True)
    marker = f"hostile-{uuid.uuid4().hex}"
    sandbox = create("concolic", write_hostile(tmp_path, state, marker),
                     {"exec_timeout_s": 2.0, "mutations": 16, "mutate_clock": False})
    try:  # the attacks are the first run's children (the solver's values of data[0])
        result = explore(sandbox, None, out_dir=tmp_path / "out", seeds=[SEED], runs=3)
    finally:
        sandbox.close()
    firsts = {}
    for row in result["findings"]:
        data = (tmp_path / "out" / row["input_sha256"]).read_bytes()
        firsts.setdefault(chr(data[0]), []).append(row["signature"])
    assert set(firsts) == set(ATTACKS), result["findings"]
    assert not _wait_gone(marker)
    assert os.listdir(state / "corpus" / "objects") == []


def test_isolation_works_for_an_unprivileged_user_too():
    """As ``nobody`` (what root drops to; the multinode gate's second user is another uid): the
    same namespaces, the same refusal of writes outside the scratch directory."""
    from helpers.store import run_unprivileged, unprivileged_unavailable, world_traversable_tmpdir

    if (reason := unprivileged_unavailable()) is not None:
        pytest.skip(reason)
    base = world_traversable_tmpdir()
    try:
        mine = base / "nobody"
        mine.mkdir()
        os.chown(mine, 65534, 65534)
        code = textwrap.dedent(f"""
            import os, sys
            from pathlib import Path
            from helpers.hostile import SEED, write_hostile
            from symcc_ulfm.executors import create
            base = Path({str(mine)!r})
            state = base / "state"
            for sub in ("corpus/objects", "corpus/claims", "wal/records"):
                (state / sub).mkdir(parents=True)
            sandbox = create("concolic", write_hostile(base, state, "unprivileged-marker"), scratch=None)
            measured = sandbox.measure(b"W" + SEED)
            print(os.getuid(), measured.outcome.kind, measured.outcome.detail)
            assert os.listdir(state / "corpus" / "objects") == []
            print(sandbox.measure(SEED).outcome.kind)
            sandbox.close()
        """)
        done = run_unprivileged(code)
        assert done.returncode == 0, done.stderr
        uid, kind, *detail = done.stdout.split("\n")[0].split(" ", 2)
        assert (uid, kind) == ("65534", "exception") and "Read-only file system" in " ".join(detail)
        assert done.stdout.split("\n")[1] == "ok"
    finally:
        shutil.rmtree(base, ignore_errors=True)
