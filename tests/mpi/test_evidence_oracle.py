"""The oracle's DESIGN.md §9 checks on doctored copies of a real run, and its independence."""

from __future__ import annotations

import hashlib
import json

import pytest
from helpers.evidence import fresh_copy, sealed_run

from symcc_ulfm.evidence.oracle.judge import canonical, judge
from symcc_ulfm.evidence.recompute import recompute

pytestmark = pytest.mark.mpi


def rewrite(path, change) -> None:
    value = json.loads(path.read_text())
    change(value)
    path.write_bytes(canonical(value))


def problems_of(run, **kwargs) -> list[str]:
    verdict = judge(run, **kwargs)
    assert not verdict["passed"]
    return verdict["problems"]


def test_the_reference_run_passes_with_the_expected_membership():
    verdict = judge(sealed_run())
    assert verdict["passed"], verdict["problems"]
    assert verdict["receipts"] == [{"generation": 1, "missing": [2]}]
    assert verdict["promoted"] == [5] and verdict["final_active"] == [0, 1, 3, 4, 5]
    assert verdict["result_sha256"] == hashlib.sha256(canonical(verdict["summary"])).hexdigest()
    assert verdict["result_sha256"] == recompute(sealed_run() / "state")["result_sha256"]


def test_a_prepared_plan_that_differs_from_its_receipt_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    rewrite(state / "membership" / "prepare-1.json", lambda v: v.update(missing=[3]))
    assert "prepare-1.json plans another transition than receipt-1" in problems_of(state)


def test_a_receipt_without_a_prepared_plan_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    (state / "membership" / "prepare-1.json").unlink()
    assert any("has no prepare-1.json" in p for p in problems_of(state))


def test_a_layout_of_another_generation_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    rewrite(state / "membership" / "generation-1-layout.json", lambda v: v.update(generation=0))
    found = problems_of(state)
    assert any("is not the canonical layout of generation 1" in p for p in found)
    assert any("does not match the SHA-256 in its snapshot" in p for p in found)


def test_a_rank_without_working_ulfm_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    log = state / "logs" / "rank-3.jsonl"
    lines = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "capability":
            event["facts"]["ft_enabled"] = False
        lines.append(json.dumps(event, sort_keys=True))
    log.write_text("\n".join(lines) + "\n")
    assert any("ranks [3] ran without working ULFM" in p for p in problems_of(state))


def test_an_outcome_of_another_generation_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    rewrite(state / "outcome.json", lambda v: v.update(final_generation=7))
    assert any("outcome.json names another final generation" in p for p in problems_of(state))


def test_minimum_surviving_hosts(tmp_path):
    state = sealed_run() / "state"
    assert judge(state, minimum_hosts=1)["passed"]
    assert any("surviving hosts" in p and "< minimum 2" in p for p in problems_of(state, minimum_hosts=2))


def test_a_commit_logged_twice_is_double_counting(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    for log in sorted((state / "logs").glob("rank-*.jsonl")):
        commits = [line for line in log.read_text().splitlines() if json.loads(line)["event"] == "commit"]
        if commits:
            with open(log, "a") as handle:
                handle.write(commits[0] + "\n")
            break
    assert any("logged as committed twice" in p for p in problems_of(state))


def test_an_object_claimed_by_two_done_records_is_double_counting(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    done = []
    for path in sorted((state / "wal" / "records").glob("*.json")):
        record = json.loads(path.read_text().splitlines()[-1])  # a record is its last line
        if record["state"] == "done" and record["done"]["claimed"]:
            done.append((path, record))
    (path_a, a), (path_b, b) = done[:2]
    stolen = a["done"]["claimed"][0]
    b["manifest"]["objects"].append(next(o for o in a["manifest"]["objects"] if o["sha256"] == stolen))
    b["done"]["claimed"].append(stolen)
    body = {k: v for k, v in b.items() if k != "checksum"}
    b["checksum"] = hashlib.sha256(canonical(body)).hexdigest()
    path_b.write_bytes(b"".join(path_b.read_bytes().splitlines(keepends=True)[:-1]) + canonical(b) + b"\n")
    assert any("counted by two done records" in p for p in problems_of(state))
    assert any("counted by" in p for p in recompute(state)["problems"])


def test_a_corpus_object_whose_name_is_not_its_hash_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    victim = sorted((state / "corpus" / "objects").iterdir())[0]
    victim.write_bytes(victim.read_bytes() + b"!")
    assert any("content does not hash to its name" in p for p in problems_of(state))
    assert any("is not the SHA-256 of the content" in p for p in recompute(state)["problems"])


def test_records_of_the_first_format_still_verify(tmp_path):
    """Runs sealed before records became a line per state (one state per file, no newline)."""
    state = fresh_copy(tmp_path) / "state"
    for path in sorted((state / "wal" / "records").glob("*.json")):
        record = json.loads(path.read_bytes().splitlines()[-1])
        record["format"] = "symcc-ulfm-wal/1"
        body = {k: v for k, v in record.items() if k != "checksum"}
        record["checksum"] = hashlib.sha256(canonical(body)).hexdigest()
        path.write_bytes(canonical(record))  # in place: the claims linked to it follow
    verdict = judge(state)
    assert verdict["passed"], verdict["problems"]
    assert recompute(state)["problems"] == []


def test_a_claim_that_is_not_a_record_listing_the_object_fails(tmp_path):
    state = fresh_copy(tmp_path) / "state"
    claims = sorted(p for p in (state / "corpus" / "claims").iterdir() if p.read_bytes() != b"seed")
    claims[0].write_bytes(b"a" * 64)  # the format of a plain work hash: no manifest, not accepted
    target = claims[1]
    other = next(c.read_bytes() for c in claims[2:]
                 if target.name not in {o["sha256"] for o in json.loads(c.read_bytes().splitlines()[-1])["manifest"]["objects"]})
    target.write_bytes(other)  # a real record, but its manifest does not list this object
    problems = problems_of(state)
    for claim in (claims[0], target):
        assert any(f"corpus/claims/{claim.name}: neither 'seed' nor a WAL record" in p for p in problems)
