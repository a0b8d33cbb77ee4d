"""Plot data from a real run's logs (rates over complete bins), and the figures drawn from them."""

from __future__ import annotations

import json

import pytest
from helpers.evidence import sealed_run

from symcc_ulfm import plots
from symcc_ulfm.evidence.timeline import timeline


@pytest.mark.mpi
def test_timeline_of_a_run_with_one_failure_and_one_promotion():
    data = timeline(sealed_run() / "state")
    assert [(f["rank"], f["spec"]) for f in data["failures"]] == [(2, "0:2")]
    assert [(p["rank"], p["generation"]) for p in data["promotions"]] == [(5, 1)]
    roles = {(m["rank"], m["generation"]): m["role"] for m in data["membership"]}
    assert roles[(5, 0)] == "spare" and roles[(5, 1)] == "worker" and (2, 1) not in roles
    assert all(m["end"] >= m["start"] for m in data["membership"])
    victim = next(m for m in data["membership"] if m["rank"] == 2)
    assert victim["end"] == data["failures"][0]["t"]
    verdict = json.loads((sealed_run() / "oracle.json").read_text())
    assert sum(m["analyzed"] for m in data["masters"]) == verdict["logged_analyzed"]
    assert data["throughput"][-1]["novel_total"] == sum(m["novel"] for m in data["masters"])
    assert {m["master"] for m in data["masters"]} <= {0, 1, 3, 4}


@pytest.mark.mpi
def test_figures_are_saved_as_svg_and_png(tmp_path):
    data = timeline(sealed_run() / "state")
    for name, chart in plots.all_charts(data).items():
        svg, png = plots.save_chart(chart, tmp_path, name)
        assert svg.read_text().lstrip().startswith("<svg") and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rates_are_drawn_over_complete_bins_only(tmp_path):
    """The commits of the final drain, 0.2 s into the last bin, are counted in the totals but never
    divided by that sliver of a bin (a spike no worker ran at)."""
    (tmp_path / "membership").mkdir()
    (tmp_path / "logs").mkdir()
    snapshot = {"started_at": 100.0, "spares": []}
    (tmp_path / "membership" / "generation-0-snapshot.json").write_text(json.dumps(snapshot))
    layout = {"groups": [{"master": 0, "workers": [1]}]}
    (tmp_path / "membership" / "generation-0-layout.json").write_text(json.dumps(layout))
    commits = [100.5, 101.5, 101.6] + [102.1] * 40  # two quiet seconds, then a drain of 40 commits
    lines = [{"event": "commit", "t": t, "rank": 0, "generation": 0, "generated": 2, "novel": 1, "unique": 1}
             for t in commits]
    (tmp_path / "logs" / "rank-0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows = timeline(tmp_path)["throughput"]
    assert [r["complete"] for r in rows] == [True, True, False]
    assert [r["analyzed_per_s"] for r in rows] == [1.0, 2.0, None]
    assert rows[-1]["novel_total"] == len(commits) and rows[-1]["t"] == 2.1
    chart = plots.throughput_chart(timeline(tmp_path))
    svg, _ = plots.save_chart(chart, tmp_path / "figures", "throughput")
    assert svg.read_text().lstrip().startswith("<svg")


def test_the_live_chart_draws_a_trackers_history(tmp_path):
    history = [{"elapsed_s": t, "corpus": 4 + 3 * t, "coverage_ids": 10 + t} for t in (0.0, 1.0, 2.5)]
    svg, png = plots.save_chart(plots.status_chart(history), tmp_path, "live")
    assert svg.read_text().lstrip().startswith("<svg") and png.read_bytes()[:4] == b"\x89PNG"


def test_timeline_of_an_empty_state_is_empty(tmp_path):
    (tmp_path / "membership").mkdir()
    assert all(rows == [] for rows in timeline(tmp_path).values())
