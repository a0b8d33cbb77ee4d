"""notebooks/f447_scale.ipynb: paired with its .py, and executed for real with papermill on a tiny
protocol (simulate, 3 tiers x 2 blocks): tables, figures, a sealed study that verifies.

Every cell searches a finite simulate space and ends when it is exhausted: each tier measures the
same closure over the same 60-s window, so the analysis (the USL fit included) is the same on every
run, whatever the load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jupytext
import pytest
from helpers import notebooks
from helpers.mpi import FINITE, simulate_closure
from helpers.notebooks import outputs_text

from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.experiment import study

pytestmark = pytest.mark.host_wide  # a notebook's kernel and cluster: one at a time under xdist

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
TINY = {"tiers": [1, 2, 3], "repeats": 2, "window_s": 60, "cores": 2, "executor": "simulate", "target": None,
        "executor_options": {**FINITE, "cost_s": 0}, "seed": 11, "masters_rule": {"workers_per_master": 3},
        "stop_rule": {}}
FIGURES = ("scale_throughput", "scale_paired", "scale_retention", "scale_coverage")


def test_ipynb_and_py_have_the_same_cells():
    from_py = jupytext.read(NOTEBOOKS / "f447_scale.py")
    from_ipynb = jupytext.read(NOTEBOOKS / "f447_scale.ipynb")
    assert [(c.cell_type, c.source) for c in from_py.cells] == [(c.cell_type, c.source) for c in from_ipynb.cells]
    assert from_ipynb.metadata["jupytext"]["formats"] == "ipynb,py:percent"


def test_the_parameters_cell():
    cells = jupytext.read(NOTEBOOKS / "f447_scale.py").cells
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert 'protocol_path = "protocols/default.json"' in params.source
    assert "study_dir = None" in params.source and "resume = False" in params.source


def papermill(output: Path, **params: str) -> subprocess.CompletedProcess:
    return notebooks.papermill("f447_scale.ipynb", output, **params)


@pytest.mark.notebook
@pytest.mark.mpi
def test_the_notebook_runs_the_matrix_shows_it_and_seals_a_study_that_verifies(tmp_path):
    protocol = tmp_path / "tiny.json"
    protocol.write_text(json.dumps(TINY))
    root = tmp_path / "study"
    root.mkdir()
    done = papermill(root / "scale.ipynb", protocol_path=str(protocol), study_dir=str(root))
    assert done.returncode == 0, done.stderr[-4000:]
    for name in FIGURES:
        assert (root / "figures" / f"{name}.svg").stat().st_size > 1000 and (root / "figures" / f"{name}.png").is_file()
    text = outputs_text(root / "scale.ipynb")
    assert "| 3 vs 1 |" in text and "recommended ceiling" in text and "verify: PASS (6 cells)" in text
    assert "usl_unique_per_s: USL" in text  # three tiers: fitted
    usl = json.loads((root / "analysis" / "models.json").read_text())["usl_unique_per_s"]
    # every tier published the same closure in its window: flat throughput, no gain past one worker
    assert usl["refused"] is None and usl["threshold"] == 1, usl
    assert usl["gamma"] == pytest.approx(simulate_closure(TINY["executor_options"])["unique"] / TINY["window_s"])
    assert usl["sigma"] == pytest.approx(1, abs=1e-6) and usl["kappa"] == pytest.approx(0, abs=1e-6), usl
    assert "### Reliability" in text
    seal(root)  # as make scale does, now that papermill has written the final notebook
    assert "  scale.ipynb\n" in (root / "SHA256SUMS.txt").read_text()
    result = study.verify_study(root)
    assert result["passed"], result["problems"]
    assert result["cells_checked"] == 6

    # loading the finished study again runs no cell and re-draws the same analysis
    again = papermill(tmp_path / "again.ipynb", protocol_path=str(protocol), study_dir=str(root), resume="True")
    assert again.returncode == 0, again.stderr[-4000:]
    assert "6/6 cells complete (0 run now, 6 already complete)" in outputs_text(tmp_path / "again.ipynb")


@pytest.mark.slow
def test_make_scale_ends_with_a_sealed_verified_study(tmp_path):
    protocol = tmp_path / "tiny.json"
    protocol.write_text(json.dumps(TINY))
    done = subprocess.run(["make", "scale", f"SCALE_DIR={tmp_path}", f"SCALE_PROTOCOL={protocol}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (root,) = [p for p in tmp_path.iterdir() if p.name.startswith("scale-")]
    assert "verify: PASS" in done.stdout and (root / "scale.ipynb").is_file()
    assert subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS.txt"], cwd=root).returncode == 0
    assert study.verify_study(root)["passed"]


@pytest.mark.slow
def test_make_scale_keeps_a_study_with_failed_cells_sealed_and_its_recipe_exits_3(tmp_path):
    protocol = tmp_path / "failing.json"  # bounds far too small for 3-s runs: run_job kills the job
    protocol.write_text(json.dumps({**TINY, "tiers": [1], "repeats": 1, "window_s": 1, "executor_options": {"cost_s": 3.0},
                                    "timeouts": {"startup_s": 0.1, "shutdown_grace_s": 0.1, "job_grace_s": 0.1}}))
    done = subprocess.run(["make", "scale", f"SCALE_DIR={tmp_path}", f"SCALE_PROTOCOL={protocol}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "Error 3" in done.stderr, done.stdout[-3000:] + done.stderr[-3000:]  # make: 2
    assert "cells failed internally (exit 3)" in done.stdout
    (root,) = [p for p in tmp_path.iterdir() if p.name.startswith("scale-")]
    assert json.loads((root / "report.json").read_text())["cells_failed"] == ["0-1"]
    assert "  scale.ipynb\n" in (root / "SHA256SUMS.txt").read_text() and study.verify_study(root)["passed"]
