"""Smoke tests of the benchmark harness (``benchmarks/``): the machinery, never the speed."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import harness as h  # noqa: E402
from benchmarks.bench_runtime import table  # noqa: E402
from benchmarks.upstream_baseline import run_baseline  # noqa: E402

TINY = h.Workload("tiny", "simulate", None, {"cost_s": 0, "seeds": 2, "children": 3})


def test_one_unit_of_work_measures_every_distinct_child():
    executor = TINY.create()
    out = h.analyze_input(executor, executor.seeds()[0], None)
    assert out["generated"] == 3
    assert 1 <= len(out["children"]) <= 3
    for child, _hint, coverage in out["children"]:
        assert isinstance(child, bytes) and coverage == sorted(executor.measure(child).coverage)


def test_sequential_rate_and_efficiency():
    seq = h.sequential_rate(TINY, 60, max_inputs=3)  # a count; the 60 s only bound it
    assert seq["analyzed"] == 3 and seq["generated"] == 9 and seq["rate"] > 0 and seq["seconds"] < 60
    assert h.efficiency(2 * seq["rate"], seq["rate"], 2) == pytest.approx(1.0)
    assert h.efficiency(50.0, 100.0, 2) == pytest.approx(0.25)
    assert h.efficiency(1.0, 0.0, 2) is None


def test_frontier_dedups_by_content():
    frontier = h.Frontier([b"a", b"a", b"b"])
    assert len(frontier) == 2 and not frontier.offer(b"b", None) and frontier.offer(b"c", {"k": 1})
    assert [frontier.pop()[0] for _ in range(3)] == [b"a", b"b", b"c"] and frontier.pop() is None


def test_window_rate_counts_only_the_window():
    assert h.window_rate([0.5, 1.0, 2.5, 3.1], 1.0, 2.0) == pytest.approx(1.0)


def test_resumption_finds_the_stall_after_a_kill():
    before = [i / 100 for i in range(300)]  # 100/s for 3 s
    after = [3.3 + i / 100 for i in range(300)]  # nothing for 0.3 s after the kill at 3.0, then 100/s again
    r = h.resumption(before + after, 3.0)
    assert r["pre_rate"] == pytest.approx(100.0)
    assert 0.3 - 0.1 * 0.5 - 0.011 <= r["resume_s"] <= 0.31  # reads up to (1 - fraction) x probe_s early
    assert r["max_gap_s"] == pytest.approx(0.31, abs=0.011)
    assert r["first_after_s"] == pytest.approx(0.3, abs=1e-6)
    assert h.resumption(before, 3.0)["resume_s"] is None  # never resumes


def test_recovery_breakdown_from_logged_events():
    events = [
        {"event": "inject", "t": 10.0, "generation": 0, "rank": 2},
        {"event": "recovery-start", "t": 10.004, "generation": 0, "rank": 0},
        {"event": "recovery-start", "t": 10.006, "generation": 0, "rank": 1},
        {"event": "recovery-done", "t": 10.03, "generation": 1, "rank": 0, "steps": {"shrink": 0.01, "receipt": 0.005}},
        {"event": "recovery-done", "t": 10.03, "generation": 1, "rank": 1, "steps": {"shrink": 0.012, "receipt": 0.002}},
        {"event": "generation-start", "t": 10.04, "generation": 1, "rank": 0, "seconds": 0.008, "role": "master"},
        {"event": "master-ready", "t": 10.041, "generation": 1, "rank": 0, "seconds": 0.001},
        {"event": "first-work", "t": 10.05, "generation": 1, "rank": 0},
    ]
    (row,) = h.recovery_breakdown(events)
    assert row["to_first_work_s"] == pytest.approx(0.05) and row["detect_s"] == pytest.approx(0.004)
    assert row["phases_s"] == {"shrink": 0.012, "receipt": 0.005}
    assert row["resplit_s"] == 0.008 and row["replay_s"] == 0.001
    assert row["dispatch_s"] == pytest.approx(0.009)
    assert row["other_s"] == pytest.approx(0.05 - 0.004 - 0.017 - 0.009 - 0.009, abs=1e-4)
    assert h.median_max([0.1, None, 0.3, 0.2]) == {"n": 3, "median": 0.2, "max": 0.3}


def test_cpu_sampler_and_stack_summary():
    sampler = h.CpuSampler()
    sampler.sample({"me": os.getpid()})
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    sampler.sample({"me": os.getpid()})
    shares = sampler.shares()
    assert shares["me"] > 0 and shares["_wall_s"] > 0
    raw = "main (a/x.py:1);loop (a/x.py:9);wait (b/t.py:3) 3\nmain (a/x.py:1);work (a/x.py:20) 1\n"
    summary = h.summarize_stacks(raw)
    assert summary["samples"] == 4
    assert dict(summary["self"]) == {"wait (t.py)": 0.75, "work (x.py)": 0.25}
    assert dict(summary["inclusive"])["main (x.py)"] == 1.0
    assert "wait (t.py)" in h.format_profile("t", summary)


def test_table_renders_partial_results():
    results = {"cores": 2, "window_s": 1.0, "mode": "quick", "started": "now", "sections": {
        "limits": {"workloads": {"simulate-cpu-10ms": {"rate": 100.0, "physical_limit": 200.0}}},
        "control": {"rows": [{"masters": 1, "commits_per_s_per_master": 300.0, "commits_per_s": 300.0}]},
    }}
    text = table(results, "make bench")
    assert "1M 300/s" in text and "MISSED" in text and results["verdicts"]


@pytest.mark.mpi
def test_upstream_style_baseline_runs(tmp_path):
    result = run_baseline(TINY, workers=1, window=60.0, out=tmp_path / "upstream.json", completions=10)
    assert result["returncode"] == 0 and result["workers"] == 1
    assert result["analyzed"] == 10 and result["rate"] > 0  # ten results, then the loop ends; 60 s only bound it
    assert result["loops"] >= 1 and result["stopped_at"] < result["started_at"] + 60
    assert len(json.loads((tmp_path / "upstream.json").read_text())["completions"]) == 10
