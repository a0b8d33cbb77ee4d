"""The mechanism summary (``evidence.mechanism``) of a real hybrid campaign (``helpers.hybrid_state``:
the real master and two real workers, a ``simfuzz`` fuzzer and a ``simulate`` analysis worker, on
the loopback transport). Its figures are recounted here from the done WAL records by hand; the
command line prints the same summary; a study summarises a campaign cell from its state."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers.hybrid_state import hybrid_state

from symcc_ulfm.cli.main import main
from symcc_ulfm.core.coverage import edge_of, is_branch_coverage
from symcc_ulfm.evidence.mechanism import mechanism
from symcc_ulfm.evidence.timeline import done_records, handoffs
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.runlog import read_events


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    return hybrid_state(tmp_path_factory.mktemp("mechanism"))


def recount(root) -> tuple[dict[str, set[int]], dict[int, str]]:
    """Edges per kind and the kind that first reached each edge, by commit line order."""
    records = {r["work_hash"]: r for r in done_records(StateDir(root))}
    order = []
    for event in read_events(StateDir(root).logs, "commit"):
        if event["work_hash"] in records and event["work_hash"] not in order:
            order.append(event["work_hash"])
    assert set(order) == set(records)  # every lease of this run was committed by a logged round
    edges: dict[str, set[int]] = {}
    first: dict[int, str] = {}
    for work in order:
        manifest = records[work]["manifest"]
        for obj in manifest["objects"]:
            for cov in obj["coverage"]:
                if not is_branch_coverage(cov):
                    edges.setdefault(manifest["kind"], set()).add(edge_of(cov))
                    first.setdefault(edge_of(cov), manifest["kind"])
    return edges, first


def test_the_summary_of_a_hybrid_campaign_is_its_wal_recounted(state):
    summary = mechanism(state)
    edges, first = recount(state)
    assert set(summary["kinds"]) == {"simfuzz", "simulate"} == set(edges)
    assert summary["kinds"]["simfuzz"]["family"] == "fuzzer" and summary["kinds"]["simulate"]["family"] == "analysis"
    assert summary["edges"] == len(first) == len(edges["simfuzz"] | edges["simulate"])
    for kind, row in summary["kinds"].items():
        assert row["edges"] == len(edges[kind])
        assert row["edges_first"] == sum(1 for who in first.values() if who == kind)
        assert row["leases"] >= 6  # the budget: six results each
    shared = edges["simfuzz"] & edges["simulate"]
    assert shared, "the scenario's small edge universe makes both kinds reach some edges alike"
    pair = summary["redundancy"]["by_analysis_kind"]["simulate"]
    assert pair == summary["redundancy"]["analysis_side"]  # one analysis kind
    assert pair["shared"] == len(shared)
    assert summary["redundant_edge_ratio"] == pair["ratio"] == round(len(shared) / len(edges["simulate"]), 4)
    assert pair["fuzzer_ratio"] == round(len(shared) / len(edges["simfuzz"]), 4)
    assert pair["shared_first_by_analysis"] == sum(1 for e in shared if first[e] == "simulate")
    assert pair["shared_first_by_fuzzers"] == sum(1 for e in shared if first[e] == "simfuzz")
    assert not summary["single_kind"] and summary["leases_without_commit_line"] == 0


def test_every_committed_lease_carries_its_cpu_time(state):
    records = done_records(StateDir(state))
    assert records and all(type(r["manifest"]["stats"]["cpu_seconds"]) is float
                           and r["manifest"]["stats"]["cpu_seconds"] >= 0 for r in records)
    summary = mechanism(state)
    cpu = {kind: sum(r["manifest"]["stats"]["cpu_seconds"] for r in records if r["manifest"]["kind"] == kind)
           for kind in summary["kinds"]}
    for kind, row in summary["kinds"].items():
        assert row["cpu_seconds"] == pytest.approx(cpu[kind], abs=1e-3)
    if summary["cpu_seconds"]:
        assert sum(row["cpu_share"] for row in summary["kinds"].values()) == pytest.approx(1.0, abs=1e-3)


def test_the_handoffs_are_the_timelines_with_their_quantiles(state):
    times = handoffs(state)
    summary = mechanism(state)
    assert {d: h["n"] for d, h in summary["handoffs"].items()} == {d: len(t) for d, t in times.items()}
    assert times["to_analysis"], "the analysis worker analyzed inputs the fuzzer found"
    ordered = sorted(times["to_analysis"])
    assert ordered[0] <= summary["handoffs"]["to_analysis"]["median_s"] <= summary["handoffs"]["to_analysis"]["p90_s"]
    assert summary["handoffs"]["to_analysis"]["p90_s"] <= round(ordered[-1], 3)


def test_the_command_prints_the_summary(state, capsys):
    assert main(["mechanism", str(state), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(mechanism(state)))
    assert main(["mechanism", str(state)]) == 0
    shown = capsys.readouterr().out
    assert "| simfuzz | fuzzer |" in shown and "| simulate | analysis |" in shown and "redundant-edge ratio" in shown


def test_a_study_summarises_a_campaign_cell_from_its_state(state, tmp_path):
    from symcc_ulfm.compare import design, study_files
    from symcc_ulfm.compare.cell_run import CELLS_DIR, SYSTEM_DIR
    from symcc_ulfm.compare.systems.campaign_system import STATE_DIR

    protocol = design.validate({"targets": {"t": {"python": "tokenizer"}},
                                "systems": {"hybrid": {"kind": "campaign", "launch": []}}, "reference": "hybrid",
                                "trials": 2, "min_trials": 2, "window_s": 10, "cores": 2, "seed": 0})
    cell = tmp_path / CELLS_DIR / "0.t.hybrid" / SYSTEM_DIR
    cell.mkdir(parents=True)
    shutil.copytree(state, cell / STATE_DIR, symlinks=True)
    record = study_files.compute_mechanism(tmp_path, protocol, {"counted_cells": ["0.t.hybrid"], "protocol_sha256": "x"})
    assert record["unreadable"] == [] and record["cells"]["0.t.hybrid"] == mechanism(state)
    figures = record["targets"]["t"]["hybrid"]
    assert figures["redundant_edge_ratio"]["median"] == mechanism(state)["redundant_edge_ratio"]
