"""What a target reports is a claim: a finding is confirmed only by a replay in a fresh sandbox.

The target below forges: its module code (run in the sandbox's fork server, the process every
sandbox child is forked from) wraps the child's ``send`` so that the result of a run whose input
starts with ``F`` carries a crash finding of that input, a crash that never happens. It also
really crashes (SIGSEGV) on an input that starts with ``C``. An exploration publishes both as
findings; ``findings --confirm`` replays each in fresh sandboxes and records the replay: the real
crash is confirmed 3/3, the forged one is not (0/3), in the command's output and in the
directory's triage records, where a later ``findings`` reads them. A campaign (real ``mpiexec``)
publishes the forged finding through the WAL, the oracle passes it, and ``findings --confirm`` on
its state does not confirm it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mpi import launch

from symcc_ulfm.executors.sandbox import isolation

FORGER = '''
import os
import signal
import sys

_child = sys.modules.get("__main__")
_Child = getattr(_child, "Child", None)
_inputs = []  # the input of the run being served

if _Child is not None:
    _send, _run = _Child.send, _Child.run

    def run(self, message, blobs):
        _inputs[:] = blobs[:1]
        return _run(self, message, blobs)

    def send(self, message, blobs=()):
        if message.get("type") == "result" and _inputs and _inputs[0][:1] == b"F":
            forged = {"kind": "crash", "signature": "SIGSEGV (forged)", "detail": "claimed, never happened"}
            message = {**message, "findings": [*message["findings"], {"outcome": forged}]}
            blobs = [*blobs, _inputs[0]]
        return _send(self, message, blobs)

    _Child.run, _Child.send = run, send


def parse(data: bytes) -> str:
    if data[:1] == b"C":
        os.kill(os.getpid(), signal.SIGSEGV)
    return "ok"
'''
FORGED, CRASHING = b"FAKE", b"CRASH"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def explored(tmp_path_factory) -> Path:
    """One run of the forging seed (the crashing seed is a finding when it is measured)."""
    root = tmp_path_factory.mktemp("claims")
    (root / "forger.py").write_text(FORGER)
    out = root / "out"
    done = cli("explore", "--target", f"{root / 'forger.py'}:parse", "--runs", "1", "--executor-option",
               "mutate_clock=false", "--executor-option", f'seeds=["{FORGED.hex()}", "{CRASHING.hex()}"]',
               "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    return out


def by_input(listing: dict) -> dict[bytes, dict]:
    names = {hashlib.sha256(data).hexdigest(): data for data in (FORGED, CRASHING)}
    return {names[row["input_sha256"]]: row for row in listing["findings"] if row["input_sha256"] in names}


def test_a_forged_finding_is_not_confirmed_a_real_crash_is(explored):
    listed = cli("findings", str(explored), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = by_input(json.loads(listed.stdout))
    assert rows[FORGED]["signature"] == "SIGSEGV (forged)", rows  # the search published the claim
    assert rows[CRASHING]["kind"] == "crash" and rows[CRASHING]["signature"].startswith("SIGSEGV"), rows
    assert [rows[key]["confirmed"] for key in (FORGED, CRASHING)] == [None, None]

    confirmed = cli("findings", str(explored), "--confirm", "--json")
    assert confirmed.returncode == 0, confirmed.stderr
    rows = by_input(json.loads(confirmed.stdout))
    forged, real = rows[FORGED], rows[CRASHING]
    assert forged["confirmed"] is False, forged
    assert (forged["reproduction"]["reproduced"], forged["reproduction"]["attempts"]) == (0, 3), forged
    assert real["confirmed"] is True, real
    assert (real["reproduction"]["reproduced"], real["reproduction"]["attempts"]) == (3, 3), real

    records = explored / "triage" / "records"
    stored = {key: json.loads((records / f"replay-{row['id']}.json").read_text()) for key, row in rows.items()}
    assert stored[FORGED]["reproduction"]["reproduced"] == 0 and stored[FORGED]["observed"]["kind"] == "ok"
    assert stored[CRASHING]["reproduction"]["reproduced"] == 3

    text = cli("findings", str(explored))  # read back from the records, nothing replayed again
    assert text.returncode == 0, text.stderr
    assert "NOT CONFIRMED: not reproduced, 0/3 in fresh sandboxes" in text.stdout, text.stdout
    assert "confirmed 3/3 in fresh sandboxes" in text.stdout, text.stdout


def test_findings_takes_repeat_only_with_confirm(explored):
    done = cli("findings", str(explored), "--repeat", "2")
    assert done.returncode == 2 and "--repeat" in done.stderr, done.stderr
    done = cli("findings", str(explored), "--confirm", "--repeat", "0")
    assert done.returncode == 2 and "--repeat" in done.stderr, done.stderr


@pytest.mark.mpi
@pytest.mark.skipif(isolation.unavailable() is not None, reason="no user namespaces here")
def test_a_campaign_publishes_a_forged_finding_that_findings_does_not_confirm(tmp_path):
    """The search is finite (the forging seed, and the crashing input the engine solves from it):
    the campaign ends exhausted, whatever the load."""
    (tmp_path / "forger.py").write_text(FORGER)
    state = tmp_path / "state"
    run = launch(state, "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2", "--failure-schedule", "",
                 "--deadline", "240", "--target", f"{tmp_path / 'forger.py'}:parse", "--executor-option",
                 "mutations=0", "--executor-option", f'seeds=["{FORGED.hex()}"]')
    assert run.returncode == 0 and run.outcome == "exhausted", run.stderr + json.dumps(run.verdict.get("problems"))
    assert run.verdict["passed"]  # the oracle cannot tell a forged finding: its records are consistent
    confirmed = cli("findings", str(state), "--confirm", "--json")
    assert confirmed.returncode == 0, confirmed.stderr
    rows = {row["signature"].split(" at ")[0]: row for row in json.loads(confirmed.stdout)["findings"]}
    assert set(rows) == {"SIGSEGV (forged)", "SIGSEGV"}, rows
    forged, real = rows["SIGSEGV (forged)"], rows["SIGSEGV"]
    assert forged["input_sha256"] == hashlib.sha256(FORGED).hexdigest()
    assert forged["confirmed"] is False and forged["reproduction"]["reproduced"] == 0, forged
    assert real["confirmed"] is True and real["reproduction"]["reproduced"] == 3, real
    assert (state / "triage" / "records" / f"replay-{forged['id']}.json").is_file()
