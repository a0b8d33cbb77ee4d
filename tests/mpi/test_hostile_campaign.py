"""A campaign on a hostile target under real `mpiexec --with-ft ulfm` (tests/helpers/hostile.py).

On some of its inputs the target forks copies that return into the executor, leaves daemons in
sessions of their own, writes into the state directory, closes or garbles its sandbox's pipes and
raises every kind of ``BaseException``. The campaign searches the target to exhaustion (solved, not
mutated: ``mutations=0``; the deadline is only a bound) with every rank alive, records each attack
as a finding, leaves no process of the target behind, and its state passes the oracle and the
independent recomputation; an object planted afterwards fails both, by name.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid

import pytest
from helpers.hostile import ATTACKS, SEED, marked_processes, write_hostile
from helpers.mpi import launch

from symcc_ulfm.core.modes import modes_from_env
from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.evidence.recompute import recompute
from symcc_ulfm.executors.sandbox import isolation
from symcc_ulfm.store.findings import read_findings
from symcc_ulfm.store.paths import StateDir

pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(isolation.unavailable() is not None, reason="no user namespaces here")]


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hostile")
    state = tmp_path / "state"
    marker = f"hostile-{uuid.uuid4().hex}"
    target = write_hostile(tmp_path, state, marker)
    run = launch(state, "--ranks", "5", "--warm-spares", "1", "--workers-per-master", "3", "--failure-schedule", "",
                 "--deadline", "300", "--target", target, "--executor-option", "exec_timeout_s=1",
                 "--executor-option", "mutations=0", "--executor-option", f"seeds={json.dumps([SEED.hex()])}")
    deadline = time.monotonic() + 5
    while (left := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return run, left


def test_every_attack_is_one_finding_and_no_rank_is_lost(hostile_run):
    run, _ = hostile_run
    v = run.verdict
    assert run.returncode == 0, run.stderr + json.dumps(v.get("problems"))
    assert json.loads((run.state / "outcome.json").read_text())["status"] == "exhausted"  # every attack solved
    assert v["passed"] and v["receipts"] == [] and v["final_generation"] == 0, "the target killed no rank"
    objects = run.state / "corpus" / "objects"
    by_attack: dict[str, set[tuple[str, str]]] = {}
    found = read_findings(StateDir(run.state, modes_from_env(os.environ)))
    for row in found:
        for sha256 in row.inputs:
            by_attack.setdefault(chr((objects / sha256).read_bytes()[0]), set()).add((row.kind, row.signature))
    assert set(ATTACKS) - {"W"} <= set(by_attack), v["findings"]  # W is an OSError: the kernel refused the write
    assert any("OSError" in sig for _, sig in by_attack.get("W", ())), by_attack.get("W")
    for attack in "KXEB":
        assert [kind for kind, _ in by_attack[attack]] == ["exception"], by_attack[attack]
    assert len(found) == v["findings_unique"] and sum(len(f.inputs) for f in found) == v["findings_hits"]
    assert by_attack["R"] == {("crash", "SIGKILL")}, "the kill meant for the rank ended the target's own group"


def test_no_process_of_the_target_outlives_the_campaign(hostile_run):
    _, left = hostile_run
    assert left == [], f"daemons of the target still run: {left}"


def test_the_target_could_not_write_the_state_and_a_planted_object_fails_by_name(hostile_run, tmp_path):
    run, _ = hostile_run
    # the engine may find the target's bytes as an input (a constant of its module): then a record claims it
    claim = run.state / "corpus" / "claims" / hashlib.sha256(b"planted by the target").hexdigest()
    assert not claim.exists() or claim.read_bytes() != b"seed"
    assert not any(b'"forged"' in p.read_bytes() for p in (run.state / "wal" / "records").iterdir())
    copy = tmp_path / "state"
    shutil.copytree(run.state, copy, symlinks=True)
    assert judge(copy)["passed"] and recompute(copy)["problems"] == []
    for planted, claim in ((b"planted later, with a seed claim", "seed"), (b"planted later, no claim", None)):
        name = hashlib.sha256(planted).hexdigest()
        (copy / "corpus" / "objects" / name).write_bytes(planted)
        if claim:
            (copy / "corpus" / "claims" / name).write_text(claim)
        verdict = judge(copy)
        assert not verdict["passed"] and any(name in p for p in verdict["problems"]), verdict["problems"]
        assert any(name in p for p in recompute(copy)["problems"])
