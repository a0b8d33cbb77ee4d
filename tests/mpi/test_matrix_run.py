"""Real matrices (mpiexec --with-ft ulfm, simulate executor): cells, resume, provenance, the analysis,
the study verifier, and an honest internal failure that exits 3 after the report.

Every cell searches a finite simulate space and ends when it is exhausted, so its counts are the
search's closure whatever the load; the 60-s window is the rates' denominator and a bound that a
passing run never reaches."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mpi import FINITE, simulate_closure

from symcc_ulfm.errors import ProvenanceChanged
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.experiment import study
from symcc_ulfm.experiment.matrix import run_matrix
from symcc_ulfm.experiment.selection import METRICS

REPO = Path(__file__).resolve().parents[2]
WINDOW_S = 60
TINY = {"tiers": [1, 2], "repeats": 2, "window_s": WINDOW_S, "cores": 2, "executor": "simulate", "target": None,
        "executor_options": {**FINITE, "cost_s": 0}, "seed": 5, "masters_rule": {"workers_per_master": 3},
        "stop_rule": {}}

pytestmark = pytest.mark.mpi


def write_protocol(path: Path, **changes) -> Path:
    path.write_text(json.dumps({**TINY, **changes}, indent=1))
    return path


def read(path: Path):
    return json.loads(path.read_text())


def live_units(out: Path) -> list[str]:
    return [c["unit"] for c in read(out / "provenance.json")["live_checks"]]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A tiny matrix run once for the tests of this module (4 cells)."""
    base = tmp_path_factory.mktemp("matrix")
    protocol = write_protocol(base / "tiny.json")
    out = base / "out"
    report = run_matrix(protocol, out, echo=lambda line: None)
    return protocol, out, report


def test_every_cell_is_a_failure_free_campaign_with_its_metrics(finished):
    _, out, report = finished
    plan = read(out / "plan.json")
    closure = simulate_closure(TINY["executor_options"])
    assert report["complete"] and not report["stopped_early"] and report["cells_failed"] == []
    assert report["cells_run"] == [c["cell"] for c in plan["cells"]]
    assert live_units(out) == [f"cell {c['cell']}" for c in plan["cells"]]
    for cell in plan["cells"]:
        directory = out / "cells" / cell["cell"]
        result = read(directory / "result.json")
        assert (directory / "COMPLETE").read_bytes() == b""
        assert result["status"] == "ok" and result["internal_failures"] == 0 and result["problems"] == []
        assert (result["block"], result["tier"], result["order"]) == (cell["block"], cell["tier"], cell["order"])
        assert result["ranks"] == cell["tier"] + 1 and result["masters"] == 1
        oracle = read(directory / "state" / "oracle.json")
        policy = read(directory / "state" / "policy.json")
        outcome = read(directory / "state" / "outcome.json")
        assert policy["failure_schedule"] == "" and policy["warm_spares"] == 0 and policy["deadline_s"] == WINDOW_S
        assert outcome["status"] == "exhausted", outcome  # not the 60-s bound
        assert oracle["passed"] and oracle["workers"] == list(range(1, cell["tier"] + 1))
        assert {k: oracle[f"wal_{k}"] for k in closure} == closure
        assert result["counts"] == {**closure, "novel": oracle["wal_novel"]}
        assert result["generated_per_s"] == oracle["wal_generated"] / WINDOW_S
        assert result["unique_per_s"] == oracle["wal_unique"] / WINDOW_S
        assert result["novel_per_s"] == oracle["wal_novel"] / WINDOW_S
        assert result["retention"] == oracle["wal_unique"] / oracle["wal_generated"]
        assert result["endpoint_edges"] == oracle["endpoint_edges"]
        assert result["oracle_result_sha256"] == oracle["result_sha256"]
        assert result["seconds"] == outcome["ended_at"] - outcome["started_at"]


def test_the_analysis_is_written_after_the_last_cell(finished):
    _, out, report = finished
    selection = read(out / "selection.json")
    assert selection["performance_blocks"] == [0, 1] and len(selection["counted_cells"]) == 4
    summary = read(out / "analysis" / "summary.json")
    assert [row["n"] for row in summary["tiers"]] == [2, 2] and set(summary["tiers"][0]["metrics"]) == set(METRICS)
    models = read(out / "analysis" / "models.json")
    assert "usl_unique_per_s: usl_fit_error=too few tiers" in models["refusals"]  # two tiers: refused, not fitted
    assert models["usl_unique_per_s"]["sigma"] is None
    assert report["analysis"]["refusals"] == models["refusals"]
    assert read(out / "analysis" / "reliability.json")["tiers"][0]["failures"] == 0


def test_a_sealed_matrix_verifies_and_tampering_is_named(finished, tmp_path):
    _, out, _ = finished
    copy = tmp_path / "study"
    shutil.copytree(out, copy)
    seal(copy)
    result = study.verify_study(copy)
    assert result["passed"], result["problems"]
    assert result["cells_checked"] == 4 and result["files_checked"] > 100
    cell = read(copy / "plan.json")["cells"][0]["cell"]
    path = copy / "cells" / cell / "result.json"
    tampered = read(path)
    tampered["unique_per_s"] *= 1.5
    path.write_text(json.dumps(tampered))
    assert not study.verify_study(copy)["passed"]  # the seal catches it
    seal(copy)  # even re-sealed, the state and the analysis do not agree with it
    problems = study.verify_study(copy)["problems"]
    assert any(f"cells/{cell}/result.json: unique_per_s" in p for p in problems), problems
    assert any("analysis/summary.json: differs" in p for p in problems), problems


def test_resume_skips_complete_cells_and_reruns_incomplete_ones_moved_aside(finished, tmp_path):
    protocol, out, _ = finished
    copy = tmp_path / "m"
    shutil.copytree(out, copy)
    order = [c["cell"] for c in read(copy / "plan.json")["cells"]]
    interrupted, never_started = order[2], order[3]
    (copy / "cells" / interrupted / "COMPLETE").unlink()  # killed before its marker
    shutil.rmtree(copy / "cells" / never_started)
    old = read(copy / "cells" / interrupted / "result.json")

    record = read(copy / "provenance.json")  # a changed source file refuses the resume (exit 6) ...
    record["source_tree"]["sha256"] = "0" * 64
    record["source_tree"]["files"][0][1] = "0" * 64
    original = (copy / "provenance.json").read_text()
    (copy / "provenance.json").write_text(json.dumps(record))
    with pytest.raises(ProvenanceChanged) as info:
        run_matrix(protocol, copy, resume=True, echo=lambda line: None)
    assert info.value.exit_code == 6 and record["source_tree"]["files"][0][0] in str(info.value)
    assert read(copy / "report.json")["stop_reason"].startswith("provenance changed")
    assert (copy / "cells" / interrupted / "result.json").exists()  # ... and changes nothing
    assert not (copy / "cells" / ".incomplete").exists()
    (copy / "provenance.json").write_text(original)

    report = run_matrix(protocol, copy, resume=True, echo=lambda line: None)
    assert report["cells_skipped"] == sorted(order[:2]) and report["cells_run"] == [interrupted, never_started]
    assert report["cells_moved_aside"] == [f".incomplete/{interrupted}-1"]
    assert read(copy / "cells" / ".incomplete" / f"{interrupted}-1" / "result.json") == old
    assert report["complete"] and all((copy / "cells" / name / "COMPLETE").is_file() for name in order)
    excluded = read(copy / "selection.json")["rules"][0]
    assert excluded["rule"] == "cell_directory" and excluded["excluded"] == [".incomplete"]
    assert live_units(copy)[-2:] == [f"cell {interrupted}", f"cell {never_started}"]

    again = run_matrix(protocol, copy, resume=True, echo=lambda line: None)
    assert again["cells_run"] == [] and again["cells_skipped"] == sorted(order)
    seal(copy)
    assert study.verify_study(copy)["passed"]


def test_the_stop_rule_stops_after_the_current_cell(tmp_path):
    protocol = write_protocol(tmp_path / "p.json", stop_rule={"max_cells": 1})
    report = run_matrix(protocol, tmp_path / "out", echo=lambda line: None)
    assert report["stopped_early"] and report["stop_reason"] == "stop_rule max_cells=1 reached: 1 cells complete"
    assert len(report["cells_complete"]) == 1 and len(report["cells_not_run"]) == 3
    assert read(tmp_path / "out" / "selection.json")["reliability_blocks"] == []


def test_a_cell_that_fails_internally_exits_3_after_the_report(tmp_path):
    # Bounds far below what the job takes: run_job kills the job (a real failure, no mock). The job's
    # bound (startup + window + grace, 4.3 s) ends before the run that starts at 3 s (3 s each) does.
    protocol = write_protocol(tmp_path / "p.json", tiers=[1], repeats=1, window_s=4,
                              executor_options={"cost_s": 3.0},
                              timeouts={"startup_s": 0.1, "shutdown_grace_s": 0.1, "job_grace_s": 0.1})
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "matrix", str(protocol), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "MatrixCellsFailed" in done.stderr and "0-1" in done.stderr
    report = read(out / "report.json")
    assert report["cells_failed"] == ["0-1"] and report["complete"]
    result = read(out / "cells" / "0-1" / "result.json")
    # killed past its bound, or its ranks gave up first (startup_s 0.1): a failed job either way
    assert result["status"] == "failed" and result["internal_failures"] == 1
    assert result["job_timed_out"] or result["job_returncode"] not in (0, None), result
    assert result["problems"][0].startswith(("job timed out after", "job exit"))  # the oracle may pass or not: the job failed
    reliability = read(out / "analysis" / "reliability.json")["tiers"][0]
    assert (reliability["failures"], reliability["trials"]) == (1, 1)
    assert read(out / "selection.json")["performance_blocks"] == []
    seal(out)
    check = study.verify_study(out)  # a failed cell is a finding, consistently recorded: the study verifies
    assert check["passed"], check["problems"]
    assert study.sealed_with_failed_cells(out)
