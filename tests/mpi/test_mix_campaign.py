"""The adaptive mix in a real campaign (``launch --mix adaptive`` under mpiexec): the master lends
its analysis worker to the fuzzer kind as the yields say, the oracle recomputes every decision and
passes the run, and catches a decision changed in the WAL afterwards."""

from __future__ import annotations

import hashlib
import json

import pytest
from helpers.mpi import launch

from symcc_ulfm.evidence.oracle.judge import canonical, judge

pytestmark = pytest.mark.mpi

# the loopback scenario's search (tests/protocol/scenarios.py, MIX): the fuzzer's finds are all
# crashes in an edge universe it never exhausts, the analysis worker's children share one edge
MIX = ["--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2", "--executor", "simulate",
       "--executor-option", "cost_s=0", "--executor-option", "children=3", "--executor-option", "edges=1",
       "--executor-option", 'simfuzz={"kept": 2, "edges": 100000, "findings": 1}',
       "--worker-kinds", "simfuzz:1,simulate:1", "--mix", "adaptive", "--slice", "0.2", "--stop-after", "24",
       "--deadline", "240"]


def mixed(state) -> list[tuple]:
    """(record file, its last line parsed) of each done record the mix lent."""
    out = []
    for path in sorted((state / "wal" / "records").glob("*.json")):
        record = json.loads(path.read_bytes().splitlines()[-1])
        if record["state"] == "done" and "mix" in record["manifest"]:
            out.append((path, record))
    return out


def test_an_adaptive_campaign_lends_by_the_rule_and_a_changed_decision_is_caught(tmp_path):
    state = tmp_path / "state"
    run = launch(state, *MIX)
    assert run.returncode == 0, run.stderr[-3000:]
    verdict = judge(state)
    assert verdict["passed"], verdict["problems"]
    lent = mixed(state)
    assert lent and verdict["mix_slices"] == len(lent)
    assert json.loads((state / "policy.json").read_text())["mix"] == "adaptive"
    path, record = lent[0]
    record["manifest"]["mix"]["lent"] = 0  # as if the worker had never been lent
    body = {k: v for k, v in record.items() if k != "checksum"}
    record["checksum"] = hashlib.sha256(canonical(body)).hexdigest()
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]) + canonical(record) + b"\n")
    problems = judge(state)["problems"]
    assert any(record["work_hash"] in p and "mix decision is not the one its slice descriptor names" in p
               for p in problems), problems
