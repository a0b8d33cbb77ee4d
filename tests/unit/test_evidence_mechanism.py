"""The mechanism figures (``evidence.mechanism``) on hand-made WAL records and log lines: edges per
kind, who reached each first in commit order, the redundant-edge ratio both ways, CPU per kind."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.coverage import branch_coverage, coverage_id
from symcc_ulfm.evidence.mechanism import latency, leases_of, markdown, summarize


def record(work: str, kind: str, edges: list[int], sliced: bool = False, cpu: float | None = 1.0,
           branches: tuple[int, ...] = (), **extra) -> dict:
    """A done record whose one object covers ``edges`` (two hit classes of the first: one edge)."""
    coverage = [coverage_id(e, 1) for e in edges] + [coverage_id(edges[0], 5)] if edges else []
    coverage += [branch_coverage(site, True) for site in branches]
    stats = {"seconds": 1.0, **({"cpu_seconds": cpu} if cpu is not None else {})}
    manifest = {"kind": kind, "slice": {"kind": kind} if sliced else None, "stats": stats,
                "objects": [{"sha256": work * 64, "coverage": coverage}], **extra}
    return {"work_hash": work, "manifest": manifest, "done": {"claimed": []}}


def commits(*works: str) -> list[dict]:
    return [{"event": "commit", "work_hash": w, "t": float(i), "rank": 0} for i, w in enumerate(works)]


def test_edges_first_follow_the_commit_lines_not_the_record_order():
    records = [record("a", "symcc", [1, 2]), record("b", "afl", [2, 3], sliced=True)]
    summary = summarize(leases_of(records, commits("b", "a")), {})
    assert summary["kinds"]["afl"]["edges_first"] == 2 and summary["kinds"]["symcc"]["edges_first"] == 1
    pair = summary["redundancy"]["analysis_side"]
    assert pair["shared"] == 1 and pair["shared_first_by_fuzzers"] == 1 and pair["shared_first_by_analysis"] == 0
    again = summarize(leases_of(records, commits("a", "b")), {})
    assert again["redundancy"]["analysis_side"]["shared_first_by_analysis"] == 1


def test_the_redundant_edge_ratio_both_ways():
    records = [record("a", "afl", [1, 2, 3, 4], sliced=True), record("b", "symcc", [3, 4, 5]),
               record("c", "havoc", [5, 6], sliced=True), record("d", "concolic", [7])]
    summary = summarize(leases_of(records, commits("a", "b", "c", "d")), {})
    redundancy = summary["redundancy"]
    assert redundancy["fuzzer_kinds"] == ["afl", "havoc"] and redundancy["analysis_kinds"] == ["concolic", "symcc"]
    symcc = redundancy["by_analysis_kind"]["symcc"]
    assert (symcc["shared"], symcc["ratio"], symcc["fuzzer_ratio"]) == (3, 1.0, 0.5)  # 3 4 5 of 1..6
    assert symcc["shared_first_by_analysis"] == 1 and symcc["shared_first_by_fuzzers"] == 2  # 5 before havoc
    assert redundancy["by_analysis_kind"]["concolic"]["ratio"] == 0.0
    side = redundancy["analysis_side"]
    assert (side["analysis_edges"], side["shared"], side["ratio"]) == (4, 3, 0.75)
    assert summary["redundant_edge_ratio"] == 0.75 and summary["edges"] == 7


def test_branch_directions_are_not_edges_and_hit_classes_merge():
    summary = summarize(leases_of([record("a", "concolic", [1], branches=(1, 2, 3))], commits("a")), {})
    row = summary["kinds"]["concolic"]
    assert (row["edges"], row["branch_directions"]) == (1, 3)
    assert summary["single_kind"] and summary["redundancy"] is None and summary["redundant_edge_ratio"] is None
    assert "single kind" in markdown(summary)


def test_cpu_per_kind_its_share_and_new_edges_per_cpu_second():
    records = [record("a", "afl", [1, 2, 3], sliced=True, cpu=3.0), record("b", "symcc", [4], cpu=1.0),
               record("c", "afl", [], sliced=True, cpu=2.0)]
    summary = summarize(leases_of(records, commits("a", "b", "c")), {})
    afl, symcc = summary["kinds"]["afl"], summary["kinds"]["symcc"]
    assert (afl["cpu_seconds"], afl["cpu_share"], afl["edges_first_per_cpu_s"]) == (5.0, 0.8333, 0.6)
    assert (symcc["cpu_seconds"], symcc["cpu_share"], symcc["edges_first_per_cpu_s"]) == (1.0, 0.1667, 1.0)
    assert summary["cpu_seconds"] == 6.0


def test_a_lease_without_cpu_time_leaves_the_cpu_figures_unknown():
    records = [record("a", "afl", [1], sliced=True, cpu=None), record("b", "symcc", [2])]
    summary = summarize(leases_of(records, commits("a", "b")), {})
    assert summary["kinds"]["afl"]["cpu_seconds"] is None and summary["kinds"]["afl"]["cpu_share"] is None
    assert summary["kinds"]["symcc"]["cpu_seconds"] == 1.0 and summary["kinds"]["symcc"]["cpu_share"] is None
    assert summary["cpu_seconds"] is None


def test_records_without_a_commit_line_come_last_and_quarantines_are_no_lease():
    records = [record("a", "afl", [1], sliced=True), record("b", "symcc", [1]),
               record("q", "symcc", [], quarantine={"strikes": []})]
    summary = summarize(leases_of(records, commits("b")), {})
    assert summary["leases"] == 2 and summary["leases_without_commit_line"] == 1
    assert summary["kinds"]["symcc"]["edges_first"] == 1 and summary["kinds"]["afl"]["edges_first"] == 0


@pytest.mark.parametrize("times, expected", [
    ([], {"n": 0, "median_s": None, "p90_s": None}),
    ([4.0], {"n": 1, "median_s": 4.0, "p90_s": 4.0}),
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], {"n": 11, "median_s": 6.0, "p90_s": 10.0}),
])
def test_handoff_latencies(times, expected):
    assert latency(times) == expected
