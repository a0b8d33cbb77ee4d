"""A campaign whose seeds attack the fork server and the deadline (``tests/helpers/hostile_sandbox.py``),
under real ``mpiexec --with-ft ulfm``.

Before the fork server was guarded, its seeds ``P``, ``L`` and ``M`` (a fork server stopped,
starved or overwritten) held a worker in 10-s waits for a server that never answered, and the fork
bomb ``N`` cost up to four bounded hangs of each lease that executed it: ``launch`` of an 8-s
campaign of the seeds ``PLMONZKGD`` and two benign ones took 60 s, 3 of 11 seeds analyzed. Now every
rank lives, the ranks end within 12 s of the 8-s deadline (a time bound under test: a lease held
past it would keep them up for the 30-s final agreement), every seed is analyzed, and each attack
is a finding of its input; the flood ``O`` is not one (its output is discarded or kept as a bounded
tail, and it ends within its time limit).
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from helpers.hostile_sandbox import SEED, write_target
from helpers.mpi import launch

from symcc_ulfm.core.modes import modes_from_env
from symcc_ulfm.executors.sandbox import isolation
from symcc_ulfm.store.findings import read_findings
from symcc_ulfm.store.paths import StateDir

pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(isolation.unavailable() is not None, reason="no user namespaces here")]

ATTACKS = "PLMENZKGDO"
DEADLINE_S, BOUND_S = 8, 20


def test_seeds_that_attack_the_fork_server_and_the_deadline_are_findings_and_the_deadline_holds(tmp_path):
    target = write_target(tmp_path, f"hostile-{uuid.uuid4().hex}", ATTACKS)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for letter in ATTACKS + "ab":
        (seeds / letter).write_bytes(letter.encode() + SEED)
    run = launch(tmp_path / "state", "--ranks", "3", "--workers-per-master", "2", "--warm-spares", "0",
                 "--failure-schedule", "", "--deadline", str(DEADLINE_S), "--target", target, "--seeds", str(seeds),
                 "--executor-option", "mutations=0")
    v = run.verdict
    assert run.returncode == 0 and v["passed"], run.stderr + json.dumps(v.get("problems"))
    assert v["receipts"] == [] and v["final_generation"] == 0, "the target killed no rank"
    outcome = json.loads((run.state / "outcome.json").read_text())
    assert outcome["ended_at"] - outcome["started_at"] <= BOUND_S, outcome
    analyzed = set()
    for record in (run.state / "wal" / "records").iterdir():
        last = json.loads(record.read_text().splitlines()[-1])
        if last["state"] == "done":
            analyzed.add(last["input_hash"])
    objects = run.state / "corpus" / "objects"
    first = {(objects / sha).read_bytes()[:1].decode("latin-1") for sha in analyzed}
    assert set(ATTACKS + "ab") <= first, f"seeds not analyzed: {sorted(set(ATTACKS + 'ab') - first)}"
    by_attack: dict[str, set[tuple[str, str]]] = {}
    for row in read_findings(StateDir(run.state, modes_from_env(os.environ))):
        for sha256 in row.inputs:
            by_attack.setdefault((objects / sha256).read_bytes()[:1].decode("latin-1"), set()).add(
                (row.kind, row.signature.split(" ")[0]))
    assert set(ATTACKS) - {"O"} <= set(by_attack), by_attack
    for attack in "PLMEN":  # refused by the kernel: the target's own error
        assert {kind for kind, _ in by_attack[attack]} == {"exception"}, by_attack[attack]
    for attack in "ZD":
        assert ("crash", "sandbox:") in by_attack[attack], by_attack[attack]
    assert "O" not in by_attack, by_attack["O"]
    stop = run.log_events("master-stop")
    assert all(isinstance(row["abandoned_leases"], list) for row in stop)
