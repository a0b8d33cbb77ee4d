"""The oracle's rule for the worker kind a manifest names (``evidence.oracle.wal_checks``): its
slot's kind, or, for a slice an idle analysis worker ran, the campaign's idle kind, and only
when the campaign lends its analysis workers (``idle`` fuzz)."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.slices import descriptor, slice_hash
from symcc_ulfm.evidence.oracle.rules import lent_kind
from symcc_ulfm.evidence.oracle.wal_checks import WalChecks

GROUPS = [[0, 1, 2]]  # master 0; worker 1 in the simfuzz slot, worker 2 in the simulate slot
SLOTS = ["simfuzz", "simulate"]


class Probe(WalChecks):
    def __init__(self, policy: dict):
        self.slots = SLOTS
        self.lent_kind = lent_kind(policy, SLOTS)
        self.lent: dict[str, int] = {}
        self.problems: list[str] = []

    def fail(self, message: str) -> None:
        self.problems.append(message)


def record(worker: int, kind: str, sliced: str | None) -> dict:
    hint = descriptor(sliced, 0, 0, worker, 1, 5.0) if sliced else None
    manifest = {"generation": 0, "master": 0, "worker": worker, "kind": kind, "slice": hint}
    return {"manifest": manifest, "input_hash": slice_hash(hint) if hint else "a" * 64}


POLICY = {"executor": "simulate", "worker_kinds": "simfuzz:1,simulate:1"}


@pytest.mark.parametrize("policy, worker, kind, sliced, lent, problem", [
    (POLICY, 1, "simfuzz", "simfuzz", 0, None),  # the fuzzer worker's own slice
    (POLICY, 2, "simulate", None, 0, None),  # the analysis worker's own lease
    (POLICY, 2, "simfuzz", "simfuzz", 1, None),  # lent: idle fuzz is the default
    ({**POLICY, "idle": "fuzz"}, 2, "simfuzz", "simfuzz", 1, None),
    ({**POLICY, "idle": "wait"}, 2, "simfuzz", "simfuzz", 0, "its slot's kind is 'simulate'"),
    (POLICY, 2, "simfuzz", None, 0, "its slot's kind is 'simulate'"),  # an analysis lease is never lent
    (POLICY, 1, "simulate", "simulate", 0, "its slot's kind is 'simfuzz'"),  # a fuzzer is never lent
    (POLICY, 2, "simfuzz", "simulate", 0, "slice descriptor"),  # the descriptor names another kind
])
def test_a_manifest_names_its_slot_kind_or_the_idle_kind_it_was_lent_to(policy, worker, kind, sliced, lent, problem):
    probe = Probe(policy)
    probe._check_kind("w", record(worker, kind, sliced), GROUPS, "simulate")
    assert probe.lent == ({kind: lent} if lent else {})
    if problem is None:
        assert probe.problems == []
    else:
        assert any(problem in p for p in probe.problems), probe.problems
