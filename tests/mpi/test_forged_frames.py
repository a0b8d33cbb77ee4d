"""A campaign under real `mpiexec --with-ft ulfm` on a target that forges its sandbox child's replies.

The target's module rewrites the child's ``result`` and ``measured`` frames on some inputs
(tests/helpers/forged_frames.py): each forged result plants a candidate and a finding of its
own, then breaks the frame (counts that disagree, a string for a number, NaN, more seconds than
the run took, nesting past ``json``'s recursion limit); a forged measurement's coverage is no
whole number of ids. Each of those once ended its worker rank (exit 70) or looped it forever;
now each is refused where the frame is read, as a ``protocol`` finding of the input that made
the child send it: the child is forked again, no rank is lost, nothing the frame carried reaches
the corpus or the findings, every forging input is analyzed at most once and never expanded,
and the state passes the oracle. An ``error`` frame longer than a RESULT takes (which once
looped its worker forever) is the lease's error, cut short. The seeds are the benign one and one per forged result; the
campaign ends by its budget by count: one worker, as many results as seeds, and seeds go first
(``core.master.frontier``), so every seed is analyzed whatever the machine's speed (the deadline
only bounds a run that goes wrong). ``findings``, ``sarif``, ``export`` and ``replay`` take the
new kind.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from helpers.forged_frames import FORGERIES, PLANTED, PLANTED_FINDING, PLANTED_SIGNATURE, SEED, write_forger
from helpers.mpi import launch

from symcc_ulfm.core.envelope import MAX_TEXT

pytestmark = pytest.mark.mpi
SEEDS = [SEED, *(f.encode() + SEED[1:] for f in "PTNSDE")]  # M forges a measurement: a solved child's

SIGNATURES = {
    "P": "sandbox reply: result frame: inconsistent",
    "T": "sandbox reply: result frame: invalid executions",
    "N": "sandbox reply: result frame: invalid seconds",
    "S": "sandbox reply: result frame: seconds longer than the run",
    "D": "sandbox reply: header is not JSON",
    "M": "sandbox reply: measured frame: inconsistent",
}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def forged_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("forged")
    return launch(tmp_path / "state", "--ranks", "2", "--warm-spares", "0", "--workers-per-master", "1",
                  "--failure-schedule", "", "--stop-after", str(len(SEEDS)), "--deadline", "240",
                  "--target", write_forger(tmp_path), "--executor-option", "mutations=0",
                  "--executor-option", "exec_timeout_s=1",
                  "--executor-option", f"seeds={json.dumps([s.hex() for s in SEEDS])}")


def _records(state) -> list[dict]:
    return [json.loads(p.read_bytes().split(b"\n")[-2]) for p in (state / "wal" / "records").glob("*.json")]


def test_every_forged_frame_is_a_protocol_finding_and_no_rank_is_lost(forged_run):
    run = forged_run
    v = run.verdict
    assert run.returncode == 0, run.stderr + json.dumps(v.get("problems"))
    assert run.outcome == "budget-reached", "ended by its count, not its deadline"
    assert v["passed"] and v["receipts"] == [] and v["final_generation"] == 0, "no rank died"
    objects = run.state / "corpus" / "objects"
    corpus = {p.name: p.read_bytes() for p in objects.iterdir()}
    assert not {PLANTED, PLANTED_FINDING} & set(corpus.values()), "nothing a refused frame carried is published"
    analyzed = {r["input_hash"] for r in _records(run.state) if r["state"] == "done"}
    assert {hashlib.sha256(s).hexdigest() for s in SEEDS} <= analyzed, "every seed analyzed"
    by_forgery = {}
    for row in json.loads(_cli("findings", str(run.state), "--json").stdout)["findings"]:
        assert row["signature"] != PLANTED_SIGNATURE, row
        first = corpus[row["input_sha256"]][:1].decode("latin-1")
        by_forgery.setdefault(first, []).append((row["kind"], row["signature"]))
    assert {f: by_forgery.get(f) for f in FORGERIES} == {f: [("protocol", s)] for f, s in SIGNATURES.items()}
    assert set(by_forgery) == set(FORGERIES), by_forgery  # the benign inputs gave none
    leased: dict[str, int] = {}
    for record in _records(run.state):
        first = corpus[record["input_hash"]][:1].decode("latin-1")
        leased[first] = leased.get(first, 0) + 1 + len(record["history"])
        if record["state"] != "done":  # leased when the budget was spent
            continue
        error = record["manifest"]["error"]
        if first == "E":  # the engine's error as the child told it, cut to what a RESULT takes
            assert error.startswith("ExecutorError: forged forged") and len(error) <= MAX_TEXT, error[:80]
            continue
        assert error is None
        if first in FORGERIES:
            assert record["manifest"]["objects"] == [], "a refused result adds nothing"
    assert all(leased.get(f) == 1 for f in "PTNSDE"), leased  # analyzed once, its result refused, never again
    assert "M" not in leased, "refused when measured: terminal, never analyzed"


def test_findings_sarif_export_and_replay_take_a_protocol_finding(forged_run, tmp_path):
    state = forged_run.state
    listed = json.loads(_cli("findings", str(state), "--json").stdout)["findings"]
    [row] = [r for r in listed if r["signature"] == SIGNATURES["P"]]
    sarif = _cli("sarif", str(state), str(tmp_path / "f.sarif"))
    assert sarif.returncode == 0, sarif.stderr
    [result] = [r for r in json.loads((tmp_path / "f.sarif").read_text())["runs"][0]["results"]
                if r["partialFingerprints"]["symccUlfmFinding/v1"] == row["id"]]
    assert result["level"] == "error" and SIGNATURES["P"] in result["message"]["text"]
    exported = _cli("export", str(state), str(tmp_path / "afl"), "--layout", "afl", "--json")
    assert exported.returncode == 0, exported.stderr
    crashes = [p for p in (tmp_path / "afl" / "default" / "crashes").iterdir() if p.name != "README.txt"]
    assert len(crashes) == json.loads(exported.stdout)["crashes"] == len(FORGERIES)
    assert any(p.name.endswith(f"finding:{row['id']}") and hashlib.sha256(p.read_bytes()).hexdigest()
               == row["input_sha256"] for p in crashes)
    replayed = _cli("replay", str(state), row["id"], "--json")
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr  # a reproduction's frame is not forged
    replay = json.loads(replayed.stdout)
    assert replay["kind"] == "protocol" and replay["observed"]["kind"] == "ok"
    assert "what the sandbox child sent" in replay["note"]
