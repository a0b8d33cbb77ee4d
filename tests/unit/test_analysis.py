"""analyze() over a synthetic matrix directory with an incomplete, a failed and a missing cell."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.experiment.analysis import analyze
from symcc_ulfm.experiment.selection import METRICS

TIERS = [2, 4, 8]
BLOCKS = range(7)
PROTOCOL = {
    "tiers": TIERS,
    "repeats": 7,
    "window_s": 60,
    "cores": 16,
    "target": "maze",
    "executor": "simulate",
    "seed": 5,
    "masters_rule": "one master per 8 workers",
    "stop_rule": "stop after 30 cells",
}


def metrics_for(block, tier):
    """Deterministic values with block-to-block variation; coverage dips at tier 4 (non-monotonic)."""
    rng = np.random.default_rng(100 * block + tier)
    generated = 20.0 * tier / (1 + 0.2 * (tier - 1)) * (1 + 0.03 * rng.normal())
    unique = generated * (0.4 - 0.01 * tier) * (1 + 0.02 * rng.normal())
    edges = {2: 180.0, 4: 160.0, 8: 178.0}[tier] + rng.normal()
    return {
        "generated_per_s": generated,
        "unique_per_s": unique,
        "novel_per_s": unique / 10,
        "retention": unique / generated,
        "endpoint_edges": edges,
        "seconds": 60.0 + rng.random(),
    }


def write_cell(root, block, tier, *, complete=True, changes=None):
    cell = root / "cells" / f"{block}-{tier}"
    cell.mkdir(parents=True)
    result = {
        "block": block,
        "tier": tier,
        "order": 3 * block + TIERS.index(tier),
        "status": "ok",
        "internal_failures": 0,
        **metrics_for(block, tier),
        **(changes or {}),
    }
    (cell / "result.json").write_text(json.dumps(result))
    if complete:
        (cell / "COMPLETE").write_text("")
    return result


@pytest.fixture
def matrix(tmp_path):
    (tmp_path / "protocol.json").write_text(json.dumps(PROTOCOL))
    cells = {}
    for block in BLOCKS:
        for tier in TIERS:
            if (block, tier) == (5, 8):
                write_cell(tmp_path, block, tier, complete=False)  # still running
            elif (block, tier) == (6, 4):
                continue  # never ran: block 6 is missing a tier
            elif (block, tier) == (6, 2):
                write_cell(tmp_path, block, tier, changes={"tier": 4})  # disagrees with its directory
            elif (block, tier) == (1, 8):
                cells[(block, tier)] = write_cell(
                    tmp_path, block, tier, changes={"status": "failed", "unique_per_s": None}
                )
            elif (block, tier) == (2, 4):
                cells[(block, tier)] = write_cell(tmp_path, block, tier, changes={"internal_failures": 2})
            else:
                cells[(block, tier)] = write_cell(tmp_path, block, tier)
    (tmp_path / "cells" / "notes.txt").write_text("not a cell")
    return tmp_path, cells


def test_selection_records_every_rule(matrix):
    root, _ = matrix
    selection = analyze(root)["selection"]
    rules = {rule["rule"]: rule for rule in selection["rules"]}
    assert rules["cell_directory"]["excluded"] == ["notes.txt"]
    assert rules["complete_marker"]["excluded"] == ["5-8"]
    assert [e["cell"] for e in rules["valid_result"]["excluded"]] == ["6-2"]
    assert "do not match the directory name" in rules["valid_result"]["excluded"][0]["reason"]
    assert rules["complete_block"]["excluded_blocks"] == [
        {"block": 5, "missing_tiers": [8]},
        {"block": 6, "missing_tiers": [2, 4]},
    ]
    assert rules["no_failed_cell"]["excluded_blocks"] == [
        {"block": 1, "failed_cells": ["1-8"]},
        {"block": 2, "failed_cells": ["2-4"]},
    ]
    assert selection["reliability_blocks"] == [0, 1, 2, 3, 4]
    assert selection["performance_blocks"] == [0, 3, 4]
    assert "5-8" not in selection["counted_cells"] and "6-8" in selection["counted_cells"]
    assert len(selection["protocol_sha256"]) == 64


def test_summary_and_paired_comparisons_use_performance_blocks(matrix):
    root, cells = matrix
    out = analyze(root)
    blocks = [0, 3, 4]
    for row in out["summary"]["tiers"]:
        assert row["n"] == 3
        for metric in METRICS:
            values = np.array([cells[(b, row["tier"])][metric] for b in blocks])
            low, high = stats.norm.interval(0.95, loc=values.mean(), scale=stats.sem(values))
            got = row["metrics"][metric]
            assert got["mean"] == pytest.approx(values.mean(), rel=1e-12)
            assert (got["low"], got["high"]) == (pytest.approx(low, rel=1e-6), pytest.approx(high, rel=1e-6))
    paired = out["paired_comparisons"]
    assert paired["baseline_tier"] == 2 and [c["tier"] for c in paired["comparisons"]] == [4, 8]
    for comparison in paired["comparisons"]:
        for metric in METRICS:
            x = np.array([cells[(b, comparison["tier"])][metric] for b in blocks])
            base = np.array([cells[(b, 2)][metric] for b in blocks])
            change = (x - base) / base
            low, high = stats.t.interval(0.95, 2, loc=change.mean(), scale=stats.sem(change))
            got = comparison["metrics"][metric]
            assert got["n"] == 3
            assert (got["low"], got["high"]) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


def test_reliability_uses_complete_blocks_with_wilson(matrix):
    root, _ = matrix
    rows = {row["tier"]: row for row in analyze(root)["reliability"]["tiers"]}
    assert {t: (r["failures"], r["trials"]) for t, r in rows.items()} == {2: (0, 5), 4: (1, 5), 8: (1, 5)}
    z = stats.norm.ppf(0.975)
    root_term = z * math.sqrt(z * z + 4 * 5 * 0.2 * 0.8)
    assert rows[8]["low"] == pytest.approx((2 + z * z - root_term) / (2 * (5 + z * z)), abs=1e-7)
    assert rows[8]["high"] == pytest.approx((2 + z * z + root_term) / (2 * (5 + z * z)), abs=1e-7)
    assert rows[2]["low"] == 0.0


def test_models_and_refusals(matrix):
    root, _ = matrix
    models = analyze(root)["models"]
    assert models["usl_unique_per_s"]["refused"] is None
    assert models["usl_generated_per_s"]["n_observations"] == 9
    assert models["coverage_endpoint_edges"]["refused"] == "coverage_fit_error=invalid coverage observation"
    ceiling = models["ceiling"]
    assert "coverage_threshold" not in ceiling["used"] and "physical_limit" in ceiling["used"]
    assert ceiling["ceiling"] <= 16
    assert "coverage_endpoint_edges: coverage_fit_error=invalid coverage observation" in models["refusals"]


def test_files_are_written_sorted_and_atomically(matrix):
    root, _ = matrix
    out = analyze(root)
    files = {
        "selection": root / "selection.json",
        **{
            name: root / "analysis" / f"{name}.json"
            for name in ("summary", "paired_comparisons", "reliability")
        },
        "models": root / "analysis" / "models.json",
    }
    for name, path in files.items():
        text = path.read_text()
        assert json.loads(text) == out[name]
        assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert not [p for p in root.rglob(".tmp-*")]


def test_a_matrix_without_cells_refuses_models_instead_of_failing(tmp_path):
    (tmp_path / "protocol.json").write_text(json.dumps(PROTOCOL))
    out = analyze(tmp_path)
    assert out["selection"]["performance_blocks"] == []
    assert out["models"]["usl_unique_per_s"]["refused"] == "usl_fit_error=too few tiers"
    assert out["reliability"]["tiers"][0]["error"]
    assert out["summary"]["tiers"][0]["metrics"]["unique_per_s"]["error"]


@pytest.mark.parametrize(
    ("protocol", "field"),
    [
        (None, "protocol.json"),
        ({**PROTOCOL, "tiers": [2, 2]}, "protocol.json.tiers"),
        ({k: v for k, v in PROTOCOL.items() if k != "stop_rule"}, "protocol.json.stop_rule"),
        ({**PROTOCOL, "cores": 0}, "protocol.json.cores"),
    ],
)
def test_bad_protocol_is_a_config_error(tmp_path, protocol, field):
    if protocol is not None:
        (tmp_path / "protocol.json").write_text(json.dumps(protocol))
    with pytest.raises(ConfigError) as info:
        analyze(tmp_path)
    assert info.value.field.endswith(field)
