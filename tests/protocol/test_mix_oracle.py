"""The oracle's check of the adaptive mix (``evidence.oracle.mix_checks``) on the WAL of a real
master and two real workers (the loopback scenario ``the-adaptive-mix-lends-an-analysis-worker``):
it accepts the decisions as written, and catches each way of tampering with one."""

from __future__ import annotations

import copy

import pytest
from protocol.scenarios import SCENARIOS, mix_decisions, run_loopback

from symcc_ulfm.core.canonical import digest
from symcc_ulfm.core.slices import slice_hash

SCENARIO = next(s for s in SCENARIOS if s.name == "the-adaptive-mix-lends-an-analysis-worker")


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    root = tmp_path_factory.mktemp("mix") / "state"
    run_loopback(root, SCENARIO)
    return root


def lent_record(done: dict, reason: str = "yield") -> str:
    return next(w for w, r in sorted(done.items()) if r["manifest"].get("mix", {}).get("reason") == reason)


def resigned(record: dict) -> None:
    """Name the (changed) decision in the descriptor again and the descriptor in the input hash: a
    forger who knows the formats; only the decision's inputs against the WAL and the rule remain."""
    manifest = record["manifest"]
    manifest["slice"]["mix"] = digest(manifest["mix"])
    record["input_hash"] = slice_hash(manifest["slice"])


def test_the_decisions_of_a_real_master_check_out(state):
    done, problems, lent = mix_decisions(state)
    assert problems == [] and lent == sum(1 for r in done.values() if "mix" in r["manifest"]) > 0


def tamper_lent(record: dict) -> None:
    record["manifest"]["mix"]["lent"] = 0


def tamper_window(record: dict) -> None:
    window = record["manifest"]["mix"]["window"]["simfuzz"]
    window[0] = [window[0][0], window[0][1] + 50, window[0][2]]
    resigned(record)


def tamper_unknown_record(record: dict) -> None:
    record["manifest"]["mix"]["window"]["simulate"][0][0] = "0" * 64
    resigned(record)


def tamper_rule(record: dict) -> None:
    """Inputs as the WAL holds them, a decision they do not give: the analysis kind yields plenty."""
    decision = record["manifest"]["mix"]
    decision["previous"], decision["novel_queued"] = 0, True  # the floor keeps the worker analyzing
    resigned(record)


def tamper_worker(record: dict) -> None:
    record["manifest"]["mix"]["slots"] = [2, 0]
    resigned(record)


@pytest.mark.parametrize("tamper, problem", [
    (tamper_lent, "not the one its slice descriptor names"),
    (tamper_window, "the WAL says"),
    (tamper_unknown_record, "not a done record of the WAL"),
    (tamper_rule, "its inputs give 0 (floor)"),
    (tamper_worker, "counts slots [2, 0]"),
])
def test_a_tampered_decision_is_caught(state, tamper, problem):
    done, _, _ = mix_decisions(state)
    done = copy.deepcopy(done)
    work = lent_record(done)
    tamper(done[work])
    _, problems, _ = mix_decisions(state, done=done)
    assert len(problems) == 1 and problem in problems[0] and work in problems[0], problems


def test_a_lent_slice_under_a_fixed_mix_is_caught(state):
    done, _, _ = mix_decisions(state)
    policy = {"executor": "simulate", "worker_kinds": "simfuzz:1,simulate:1"}
    _, problems, _ = mix_decisions(state, policy=policy, done=done)
    assert problems and all("the policy's mix is fixed" in p for p in problems)
