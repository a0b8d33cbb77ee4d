"""Smoke test of ``benchmarks/bench_engine.py``'s two-core campaign tools (a campaign per cell, its
corpus objects measured under ``coverage.py``), never its figures: the Python hybrid on ``json``,
ended once each worker committed a result (the concolic worker's first is the seed: it is queued
before a worker is lent to fuzzing), the window only bounding it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import bench_engine  # noqa: E402


@pytest.mark.mpi
def test_a_hybrid_campaign_cell_is_run_and_measured(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative --out, as `--out runs/x` from the checkout: the tools run elsewhere
    monkeypatch.delenv("BENCH_STOP_AFTER", raising=False)  # main() sets it for its tools: undone afterwards
    out = tmp_path / "out"
    assert bench_engine.main(["--seconds", "240", "--stop-after", "1", "--jobs", "1", "--parsers", "json",
                              "--tools", "hybrid", "--out", "out"]) == 0
    [cell] = json.loads((out / "results.json").read_text())
    assert cell["error"] is None, cell
    assert cell["stats"]["kinds"] == "havoc:1,concolic:1" and cell["stats"]["analyzed"] > 0
    assert cell["corpus_size"] > 0 and 0 < cell["covered_branches"] <= cell["num_branches"]
    assert not (out / "before").exists()  # the engine of the base commit is extracted only for its tool
    table = (out / "table.md").read_text()
    assert "| json |" in table and f"({cell['corpus_size']} inputs)" in table
