"""The cross-node gate on two network-namespace hosts (``make multinode``) and its helpers.

The gate needs root and ``ip netns`` and is skipped with the reason otherwise (CI runs as
root). The helper tests -- the agent script, search-permission detection, grant and restore,
the refusal without root -- run everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.gates import run_gate
from helpers.store import reachable_by

from symcc_ulfm.evidence.verify import verify
from symcc_ulfm.gates.multinode import HOST_A, HOST_B, HOSTS
from symcc_ulfm.gates.netns.access import SearchGrants, blocking, targets
from symcc_ulfm.gates.netns.agent import render
from symcc_ulfm.gates.netns.session import RUNTIME
from symcc_ulfm.gates.netns.topology import leftovers, unavailable_reason

pytestmark = pytest.mark.host_wide  # network namespaces: one at a time under xdist

REASON = unavailable_reason()


@pytest.mark.multinode
@pytest.mark.mpi
@pytest.mark.skipif(REASON is not None, reason=f"multinode gate: {REASON}")
def test_two_host_gate_matches_the_single_host_reference():
    # A 0700 parent, like a checkout made with `mktemp -d`: the gate must grant o+x and restore it.
    base = Path(tempfile.mkdtemp(prefix="symcc-multinode-"))
    try:
        out = base / "run"
        gate = run_gate("multinode", out, "--wrong-mode-check")

        oracle = gate["oracle"]
        assert oracle["passed"] and oracle["surviving_hosts"] == 2
        assert sorted(oracle["surviving_host_names"]) == [HOST_A.name, HOST_B.name]
        assert (oracle["final_generation"], oracle["promoted"]) == (2, [8, 9])
        assert oracle["final_active"] == [0, 1, 4, 5, 6, 7, 8, 9]

        state = out / "state"
        snapshot = json.loads((state / "membership" / "generation-0-snapshot.json").read_text())
        assert snapshot["hosts"] == [HOST_A.name] * 9 + [HOST_B.name]
        assert (state / "logs" / "rank-9.jsonl").stat().st_uid == HOST_B.uid
        assert (state / "logs" / "rank-0.jsonl").stat().st_uid == 0
        reads = gate["remote_reads"]
        assert reads and all(r["rank"] == 9 for r in reads)
        for read in reads:
            assert hashlib.sha256((state / read["object"]).read_bytes()).hexdigest() == read["sha256"]

        wrong = gate["wrong_mode"]
        assert wrong["returncode"] != 0 and not wrong["timed_out"] and wrong["seconds"] < 60
        assert "SYMCC_ULFM_SNAPSHOT_FILE_MODE" in wrong["message"] and "permission denied" in wrong["message"]
        assert wrong["written"] == [] and wrong["oracle_passed"] is False

        assert verify(out)["passed"]
        assert gate["teardown"]["left"] == [] and leftovers(HOSTS, settle_s=0) == []
        assert str(base) in [g["path"] for g in gate["access_grants"]]
        assert stat.S_IMODE(base.stat().st_mode) == 0o700
        assert not RUNTIME.exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_without_root_the_gate_refuses_with_exit_2():
    temp = Path(tempfile.gettempdir())
    out = temp / f"symcc-multinode-refused-{os.getpid()}"
    command = [sys.executable, "-m", "symcc_ulfm.gates.multinode", "--out", str(out)]
    reach = contextlib.nullcontext()
    if os.geteuid() == 0:  # as root: ask as the unprivileged uid, reaching the checkout (e.g. under a 0700 mktemp -d)
        if shutil.which("setpriv") is None:
            pytest.skip("cannot run the CLI as an unprivileged uid here: no setpriv")
        reach = reachable_by(HOST_B.uid, HOST_B.gid, targets(temp))
        command = ["setpriv", f"--reuid={HOST_B.uid}", f"--regid={HOST_B.gid}", "--clear-groups", *command]
    with reach:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 2, done.stderr
    assert "needs root" in done.stderr
    assert not out.exists()


def _agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.sh"
    path.write_text(render(HOSTS))
    path.chmod(0o755)
    return path


def test_agent_is_valid_sh_and_maps_only_known_hosts(tmp_path):
    agent = _agent(tmp_path)
    assert subprocess.run(["sh", "-n", str(agent)]).returncode == 0
    text = agent.read_text()
    assert f"--reuid={HOST_B.uid}" in text and f"ip netns exec {HOST_B.namespace}" in text
    done = subprocess.run([str(agent), "-x", "-o", "BatchMode=yes", "-p", "22", "elsewhere", "true"],
                          capture_output=True, text=True)
    assert done.returncode == 255 and "unknown host elsewhere" in done.stderr  # options were skipped
    assert subprocess.run([str(agent), HOST_B.name], capture_output=True).returncode == 255  # no command


def test_blocking_names_ancestors_without_search_permission(tmp_path):
    closed, open_ = tmp_path / "closed", tmp_path / "closed" / "open"
    (open_ / "pkg").mkdir(parents=True)
    closed.chmod(0o700)
    open_.chmod(0o755)
    other = {"uid": os.getuid() + 1, "gid": os.getgid() + 1}  # neither owner nor group of the tree
    found = blocking([open_ / "pkg"], **other)
    assert closed in found and open_ not in found
    closed.chmod(0o701)
    assert closed not in blocking([open_ / "pkg"], **other)


def test_grants_are_journaled_and_restored_by_a_later_run(tmp_path):
    directory = tmp_path / "closed"
    directory.mkdir(mode=0o700)
    journal = tmp_path / "grants.json"
    SearchGrants(journal, echo=lambda _line: None).grant([directory], uid=4242)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o701 and journal.exists()
    restored = SearchGrants(journal, echo=lambda _line: None).restore()  # as after a crash: a fresh object
    assert [e["path"] for e in restored] == [str(directory)]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and not journal.exists()


def test_restore_leaves_a_mode_that_someone_changed_since(tmp_path):
    directory = tmp_path / "closed"
    directory.mkdir(mode=0o700)
    grants = SearchGrants(tmp_path / "grants.json", echo=lambda _line: None)
    grants.grant([directory], uid=4242)
    directory.chmod(0o755)
    grants.restore()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755
