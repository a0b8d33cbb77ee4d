"""Plot data from a real run's logs, the incremental log reader, and the figures drawn from them."""

from __future__ import annotations

import json

import pytest
from helpers.evidence import sealed_run

from symcc_ulfm import plots
from symcc_ulfm.evidence.timeline import LogTail, timeline


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


def test_log_tail_reads_complete_lines_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "rank-0.jsonl"
    log.write_text('{"event":"generation-start","generation":0,"t":100.0,"rank":0}\n{"event":"comm')
    tail = LogTail(tmp_path)
    assert [e["event"] for e in tail.poll()] == ["generation-start"]
    assert tail.poll() == [] and tail.commits == 0 and tail.elapsed(103.0) == 3.0
    with open(log, "a") as handle:
        handle.write('it","generation":1,"t":101.0,"rank":0}\n')
    assert [e["event"] for e in tail.poll()] == ["commit"]
    assert tail.commits == 1 and tail.generation == 1


def test_log_tail_before_the_campaign_starts(tmp_path):
    tail = LogTail(tmp_path)
    assert tail.poll() == [] and tail.elapsed(5.0) == 0.0


def test_timeline_of_an_empty_state_is_empty(tmp_path):
    (tmp_path / "membership").mkdir()
    assert all(rows == [] for rows in timeline(tmp_path).values())
