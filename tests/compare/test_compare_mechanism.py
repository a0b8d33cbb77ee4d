"""The mechanism record of a comparison study (``compare.analyze.analyze_mechanism``, laid out by
``compare.tables.mechanism_table`` and computed from the cells by ``compare.study_files.compute_mechanism``):
per target and campaign system, over the counted trials, the redundant-edge ratio, the median hand-off
times and each kind's CPU share."""

from __future__ import annotations

import json

from symcc_ulfm.compare import analyze, design, study_files, tables
from symcc_ulfm.evidence.mechanism import summarize
from symcc_ulfm.experiment.jsonfile import dumps

PROTOCOL = design.validate({
    "targets": {"t": {"python": "tokenizer"}},
    "systems": {"hybrid": {"kind": "campaign", "launch": ["--worker-kinds", "havoc:1,concolic:1"]},
                "plain": {"kind": "campaign", "launch": []}, "seeds": {"kind": "seeds"}},
    "reference": "plain", "trials": 3, "min_trials": 2, "window_s": 10, "cores": 2, "seed": 0})


def lease(kind: str, edges: list[int], cpu: float) -> dict:
    return {"work_hash": "w", "kind": kind, "slice": kind == "havoc", "edges": set(edges), "branches": set(),
            "cpu_seconds": cpu, "seconds": cpu, "committed": True}


def hybrid(shared: int, handoff: float) -> dict:
    """Havoc reaches edges 0..9 first; concolic reaches ``shared`` of them and 2 of its own; CPU 3:1."""
    return summarize([lease("havoc", list(range(10)), 3.0), lease("concolic", [*range(shared), 100, 101], 1.0)],
                     {"to_analysis": [handoff, 3 * handoff], "to_fuzzers": []})


SUMMARIES = {"0.t.hybrid": hybrid(2, 1.0), "1.t.hybrid": hybrid(6, 2.0), "2.t.hybrid": hybrid(8, 3.0),
             "0.t.plain": summarize([lease("concolic", [1, 2], 2.0)], {}), "1.t.plain": "StoreError: no WAL",
             "2.t.plain": summarize([lease("concolic", [1], 2.0)], {})}
SELECTION = {"counted_cells": sorted([*SUMMARIES, "0.t.seeds"]), "protocol_sha256": "0" * 64}


def test_the_figures_over_the_trials_of_each_campaign_system():
    record = analyze.analyze_mechanism(PROTOCOL, SELECTION, SUMMARIES)
    assert record["systems"] == ["hybrid", "plain"]
    figures = record["targets"]["t"]["hybrid"]
    assert (figures["cells"], figures["hybrid_cells"]) == (3, 3)
    ratio = figures["redundant_edge_ratio"]  # 2/4, 6/8, 8/10 of the concolic side's edges
    assert (ratio["n"], ratio["median"], ratio["min"], ratio["max"]) == (3, 0.75, 0.5, 0.8)
    assert figures["handoff_median_s"]["to_analysis"]["median"] == 4.0  # each trial's median: 2, 4, 6
    assert figures["handoff_median_s"]["to_fuzzers"]["n"] == 0
    assert figures["kinds"]["havoc"]["family"] == "fuzzer" and figures["kinds"]["havoc"]["cpu_share"]["median"] == 0.75
    assert figures["kinds"]["concolic"]["edges_first"]["median"] == 2.0
    plain = record["targets"]["t"]["plain"]  # one kind: no ratio; the cell without a state is listed
    assert (plain["cells"], plain["hybrid_cells"], plain["redundant_edge_ratio"]["n"]) == (2, 0, 0)
    assert record["unreadable"] == [{"cell": "1.t.plain", "reason": "StoreError: no WAL"}]
    assert set(record["cells"]) == {"0.t.hybrid", "1.t.hybrid", "2.t.hybrid", "0.t.plain", "2.t.plain"}
    assert json.loads(dumps(record)) == json.loads(json.dumps(record))  # strict JSON, finite numbers


def test_cells_not_counted_are_left_out():
    selection = {**SELECTION, "counted_cells": ["0.t.hybrid"]}
    record = analyze.analyze_mechanism(PROTOCOL, selection, SUMMARIES)
    assert list(record["cells"]) == ["0.t.hybrid"] and record["unreadable"] == []


def test_the_table_shows_each_system_with_its_medians():
    shown = tables.mechanism_table(analyze.analyze_mechanism(PROTOCOL, SELECTION, SUMMARIES))
    assert "| t | hybrid | 3/3 | 0.75 (0.625 – 0.775) | 4 (3 – 5) | – |" in shown
    assert "havoc (fuzzer) 0.75 (0.75 – 0.75)" in shown and "| t | plain | 0/2 | – |" in shown
    assert "not summarised: 1.t.plain: StoreError: no WAL" in shown


def test_the_runner_summarises_each_counted_campaign_cell_from_its_state(tmp_path):
    selection = {**SELECTION, "counted_cells": ["0.t.hybrid", "0.t.seeds"]}
    record = study_files.compute_mechanism(tmp_path, PROTOCOL, selection)
    assert record["protocol_sha256"] == "0" * 64
    (missing,) = record["unreadable"]  # no state was written for it; the seeds cell is no campaign
    assert missing == {"cell": "0.t.hybrid", "reason": "StoreError: cannot list cells/0.t.hybrid/system/state/wal/records: "
                                                     "No such file or directory"}  # a path in the study
