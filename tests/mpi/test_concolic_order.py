"""Concolic work by edge in real ULFM campaigns (``launch --concolic-order edge``, ``core.master.branches``).

A Python target small enough that its search is exhausted; two masters, so the record of tried
branches and the analyzed edges travel between them in FRONTIER messages; a master killed
mid-campaign, so its successor rebuilds both from the WAL. The oracle must account for every input
skipped as for an input analyzed.
"""

from __future__ import annotations

import json
import shutil
import textwrap

from helpers.mpi import launch

from symcc_ulfm.evidence.oracle.judge import judge

GATES = textwrap.dedent('''
    def parse(data: bytes) -> str:
        if len(data) < 4:
            return "short"
        if data[0] == 0x41:
            if data[1] == 0x42:
                if data[2] == 0x43:
                    return "abc"
                return "ab"
            return "a"
        if data[3] == 0x5A:
            return "z"
        return "other"
''')


def _manifests(state) -> list[dict]:
    out = []
    for path in (state / "wal" / "records").glob("*.json"):
        record = json.loads(path.read_bytes().split(b"\n")[-2])
        if record["state"] == "done":
            out.append(record["manifest"])
    return out


def test_an_edge_ordered_campaign_shares_its_record_skips_and_passes_the_oracle_after_a_master_dies(tmp_path):
    target = tmp_path / "gates.py"
    target.write_text(GATES)
    run = launch(tmp_path / "state", "--ranks", "7", "--warm-spares", "1", "--workers-per-master", "2",
                 "--failure-schedule", "0:3@work", "--deadline", "300", "--target", f"{target}:parse",
                 "--concolic-order", "edge", "--executor-option", f"seeds={json.dumps([b'xxxx'.hex()])}")
    v = run.verdict
    assert run.returncode == 0, run.stderr + json.dumps(v.get("problems"))
    assert v["passed"] and v["receipts"] == [{"generation": 1, "missing": [3]}]
    assert run.outcome == "exhausted"
    policy = json.loads((run.state / "policy.json").read_text())
    assert policy["concolic_order"] == "edge"
    tried = [m["tried"] for m in _manifests(run.state) if "tried" in m]
    assert tried and all(t == sorted(set(t)) for t in tried)
    skipped = [e["input_hash"] for e in run.log_events("input-skipped")]
    stops = run.log_events("master-stop")
    assert sum(e["totals"]["skipped"] for e in stops if e["generation"] == 1) <= len(skipped)
    taken = [e for e in run.log_events("frontier-taken")]
    assert taken  # the masters share what they learn


def test_the_oracle_accounts_for_skipped_inputs_and_fails_a_run_whose_skips_are_not_logged(tmp_path):
    # the tokenizer's hybrid mutants reach the same edges by many inputs: some are skipped
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--failure-schedule", "", "--deadline", "300", "--target", "tokenizer", "--concolic-order", "edge",
                 "--keep", "novel", "--executor-option", "mutate_clock=false", "--executor-option", "mutations=64")
    v = run.verdict
    assert run.returncode == 0 and v["passed"], run.stderr + json.dumps(v.get("problems"))
    assert run.outcome == "exhausted"
    skipped = {e["input_hash"] for e in run.log_events("input-skipped")}
    assert skipped
    forged = tmp_path / "forged"
    shutil.copytree(run.state, forged, symlinks=True)
    for log in (forged / "logs").glob("rank-*.jsonl"):
        kept = [line for line in log.read_text().splitlines(keepends=True) if '"input-skipped"' not in line]
        log.write_text("".join(kept))
    problems = judge(forged)["problems"]
    assert any("were never analyzed" in p for p in problems), problems
