"""The tools on a campaign that is still running, or on a state they must not write into.

`oracle` and `verify` say "running" (exit 8) instead of judging a state that still changes;
`export` refuses an output inside the state or its run directory before it writes anything;
`explore` holds its output directory; `findings` names a damaged WAL record (exit 4) instead
of dropping what it held. Real processes, real locks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from symcc_ulfm.core.modes import modes_from_env
from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.launch.prepare import prepare_state_dir, release


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=timeout)


def _prepared(tmp_path):
    """A prepared state this process holds (its ``launch.lock``), as a running launch holds it."""
    policy = build_policy(executor="simulate", executor_options={"cost_s": 0.01})
    return prepare_state_dir(policy, tmp_path / "state", modes_from_env(os.environ))


def test_oracle_and_verify_on_a_running_campaign_say_so_with_exit_8(tmp_path):
    state = _prepared(tmp_path)
    try:
        for args in (("oracle", str(state.root)), ("verify", str(tmp_path))):
            done = cli(*args)
            assert done.returncode == 8, done.stdout + done.stderr
            assert "the campaign is running" in done.stderr and f"pid {os.getpid()}" in done.stderr
            assert "FAIL" not in done.stdout
    finally:
        release(state)
    judged = cli("oracle", str(state.root))
    assert judged.returncode == 1 and "FAIL" in judged.stdout  # ended (never run): judged, and it fails


def test_export_into_the_state_or_its_run_directory_writes_nothing(tmp_path):
    state = _prepared(tmp_path)
    release(state)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    (tmp_path / "provenance.json").write_text("{}")  # tmp_path is now the state's run directory
    for out in (state.root / "corpus" / "objects" / "x", state.root / "exported", tmp_path / "exported"):
        done = cli("export", str(state.root), str(out))
        assert done.returncode == 2 and "is inside" in done.stderr, done.stderr
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.name != "provenance.json")
    assert after == before
    elsewhere = tmp_path.parent / f"{tmp_path.name}-exported"
    assert cli("export", str(state.root), str(elsewhere)).returncode == 0
    assert sorted(os.listdir(elsewhere)) == ["default", "symcc-ulfm-export.json"]
    assert sorted(os.listdir(elsewhere / "default")) == ["crashes", "exceptions", "hangs", "queue"]


def test_two_explores_on_one_output_directory_the_second_is_refused(tmp_path):
    out = tmp_path / "out"
    # no clock: the holder explores (simulate's queue never empties) until it is killed below
    first = subprocess.Popen([sys.executable, "-m", "symcc_ulfm", "explore", "--executor", "simulate", "--target", "tlv",
                              "--runs", str(10**12), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (out / ".explore.lock").exists() or not (out / ".explore.lock").read_text():
            assert time.monotonic() < deadline and first.poll() is None, first.stderr.read()
            time.sleep(0.05)
        second = cli("explore", "--executor", "simulate", "--target", "tlv", "--runs", "1", "--out", str(out))
        assert first.poll() is None, f"the holder had already ended: {first.stderr.read()}"
        assert second.returncode == 2, second.stderr
        assert f"pid {first.pid}" in second.stderr and "one explore per directory" in second.stderr
    finally:
        first.kill()
        first.wait()
    again = cli("explore", "--executor", "simulate", "--target", "tlv", "--runs", "1", "--out", str(out))
    assert again.returncode == 0, again.stderr  # the lock died with its holder


def test_findings_names_a_damaged_record_instead_of_dropping_it(tmp_path):
    state = _prepared(tmp_path)
    release(state)
    work = "ab" * 32
    (state.root / "wal" / "records" / f"{work}.json").write_bytes(b'{"format": "symcc-ulfm-wal/6", "state": "done"\n')
    done = cli("findings", str(state.root), "--json")
    assert done.returncode == 4, done.stderr
    listed = json.loads(done.stdout)
    assert listed["unique"] == 0 and [line.split(":")[0] for line in listed["damaged"]] == [work]
    text = cli("findings", str(state.root))
    assert text.returncode == 4 and f"damaged WAL record (its findings are not listed): {work}" in text.stdout
