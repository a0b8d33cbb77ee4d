"""The scaling protocol: validation with named fields, the canonical digest, the masters rule and
the randomised plan (checked against an independent re-derivation)."""

from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path

import pytest

from symcc_ulfm.core.canonical import digest
from symcc_ulfm.core.layout import compute_layout
from symcc_ulfm.experiment import protocol as protocols
from symcc_ulfm.experiment.selection import PROTOCOL_FILE, load_protocol

REPO = Path(__file__).resolve().parents[2]
BASE = {"tiers": [1, 2, 4, 8], "repeats": 3, "window_s": 8, "cores": 2, "executor": "simulate", "target": None,
        "seed": 447, "masters_rule": {"workers_per_master": 3}, "stop_rule": {}}


def test_the_shipped_protocols_are_valid():
    default = protocols.load(REPO / "protocols" / "default.json")
    large = protocols.load(REPO / "protocols" / "large.json")
    assert default["tiers"] == [1, 2, 4, 8] and default["cores"] == 2 and default["executor"] == "concolic"
    assert large["tiers"] == [8, 32, 128] and large["repeats"] == 20 and large["window_s"] == 60


def test_tiers_and_repeats_are_one_line_of_the_default_protocol():
    lines = (REPO / "protocols" / "default.json").read_text().splitlines()
    (line,) = [x for x in lines if '"tiers"' in x]
    assert '"repeats"' in line
    text = (REPO / "protocols" / "default.json").read_text().replace(line, '  "tiers": [8, 32, 128], "repeats": 20,')
    changed = protocols.validate(json.loads(text))
    assert (changed["tiers"], changed["repeats"]) == ([8, 32, 128], 20)


def test_defaults_are_filled_in():
    protocol = protocols.validate(BASE)
    assert protocol["format"] == protocols.PROTOCOL_FORMAT
    assert protocol["executor_options"] == {} and protocol["timeouts"] == {} and protocol["description"] == ""


@pytest.mark.parametrize(("change", "field"), [
    ({"tier": [1]}, "tier"),
    ({"tiers": []}, "tiers"),
    ({"tiers": [1, 1]}, "tiers"),
    ({"tiers": [0, 2]}, "tiers"),
    ({"tiers": [True, 2]}, "tiers"),
    ({"tiers": [1.5]}, "tiers"),
    ({"repeats": 0}, "repeats"),
    ({"repeats": "3"}, "repeats"),
    ({"window_s": 0}, "window_s"),
    ({"window_s": True}, "window_s"),
    ({"cores": 0}, "cores"),
    ({"seed": -1}, "seed"),
    ({"executor": "qemu"}, "executor"),
    ({"target": ""}, "target"),
    ({"executor_options": []}, "executor_options"),
    ({"masters_rule": {"masters": 2}}, "masters_rule"),
    ({"masters_rule": {"workers_per_master": 0}}, "masters_rule.workers_per_master"),
    ({"stop_rule": {"after": 3}}, "stop_rule"),
    ({"stop_rule": None}, "stop_rule"),
    ({"stop_rule": {"max_cells": 0}}, "stop_rule.max_cells"),
    ({"stop_rule": {"max_seconds": -5}}, "stop_rule.max_seconds"),
    ({"format": "symcc-ulfm-scale-protocol/0"}, "format"),
    ({"timeouts": {"lease": 3}}, "tier 1"),
    ({"tiers": [4096]}, "tier 4096"),  # 1366 masters + 4096 workers: more ranks than a policy allows
])
def test_a_bad_field_is_named_and_exits_2(change, field):
    with pytest.raises(protocols.StudyProtocolError) as info:
        protocols.validate({**BASE, **change})
    assert info.value.field == field
    assert info.value.exit_code == 2


def test_a_missing_field_is_named():
    for name in protocols._REQUIRED:
        with pytest.raises(protocols.StudyProtocolError) as info:
            protocols.validate({k: v for k, v in BASE.items() if k != name})
        assert info.value.field == name


def test_a_protocol_file_that_is_not_json(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{tiers: [1]}")
    with pytest.raises(protocols.StudyProtocolError, match="not valid JSON"):
        protocols.load(path)
    with pytest.raises(protocols.StudyProtocolError, match="no such protocol file"):
        protocols.load(tmp_path / "absent.json")


def test_the_digest_is_canonical_and_is_what_selection_records(tmp_path):
    protocol = protocols.validate(BASE)
    shuffled = protocols.validate(dict(reversed(list(BASE.items()))))
    explicit = protocols.validate({**BASE, "executor_options": {}, "timeouts": {}, "description": ""})
    assert protocols.protocol_digest(protocol) == protocols.protocol_digest(shuffled) == protocols.protocol_digest(explicit)
    assert protocols.protocol_digest(protocols.validate({**BASE, "seed": 448})) != protocols.protocol_digest(protocol)
    (tmp_path / PROTOCOL_FILE).write_bytes(protocols.protocol_bytes(protocol))
    assert hashlib.sha256((tmp_path / PROTOCOL_FILE).read_bytes()).hexdigest() == protocols.protocol_digest(protocol)
    assert digest(load_protocol(tmp_path)) == protocols.protocol_digest(protocol)


@pytest.mark.parametrize("per_master", [1, 2, 3, 5])
def test_masters_rule_gives_exactly_the_tier_of_workers(per_master):
    protocol = protocols.validate({**BASE, "masters_rule": {"workers_per_master": per_master}})
    for workers in range(1, 40):
        policy = protocols.cell_policy(protocol, workers)
        masters = math.ceil(workers / per_master)
        assert policy.ranks == masters + workers and policy.warm_spares == 0 and policy.failure_schedule == ()
        assert policy.deadline_s == 8.0
        layout = compute_layout(0, list(range(policy.ranks)), per_master)
        assert len(layout.masters) == masters and len(layout.workers) == workers


def test_the_reference_tier_of_eight_workers():
    policy = protocols.cell_policy(protocols.validate(BASE), 8)
    assert policy.ranks == 11
    assert compute_layout(0, list(range(11)), 3).masters == (0, 4, 8)


def independent_order(seed: int, repeats: int, tiers: list[int]) -> list[tuple[int, int]]:
    """The documented randomisation, written out again."""
    rng = random.Random(seed)
    blocks = list(range(repeats))
    rng.shuffle(blocks)
    order = []
    for block in blocks:
        inner = list(tiers)
        rng.shuffle(inner)
        order += [(block, tier) for tier in inner]
    return order


def test_the_plan_is_deterministic_paired_and_follows_the_documented_randomisation():
    protocol = protocols.validate({**BASE, "repeats": 6})
    plan = protocols.plan(protocol)
    assert plan == protocols.plan(protocols.validate({**BASE, "repeats": 6}))
    assert plan["protocol_sha256"] == protocols.protocol_digest(protocol)
    cells = plan["cells"]
    assert [(c["block"], c["tier"]) for c in cells] == independent_order(447, 6, [1, 2, 4, 8])
    assert [c["order"] for c in cells] == list(range(24))
    assert [c["cell"] for c in cells] == [f"{c['block']}-{c['tier']}" for c in cells]
    for start in range(0, 24, 4):  # each block is contiguous and holds every tier once
        block = cells[start : start + 4]
        assert len({c["block"] for c in block}) == 1 and sorted(c["tier"] for c in block) == [1, 2, 4, 8]
    assert sorted(plan["block_order"]) == list(range(6))
    assert [c["ranks"] for c in cells if c["tier"] == 8][0] == 11
    assert {c["tier"] for c in cells if c["oversubscribed"]} == {2, 4, 8}  # 3, 6, 11 ranks on 2 cores
    other = protocols.plan(protocols.validate({**BASE, "repeats": 6, "seed": 448}))
    assert [c["cell"] for c in other["cells"]] != [c["cell"] for c in cells]
