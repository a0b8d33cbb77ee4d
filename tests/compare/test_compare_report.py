"""notebooks/compare_report.ipynb: paired with its .py and executed for real with papermill on a
synthetic study directory written here as the study runner writes one: tables with the refusals,
the figures, what each kind of the hybrid campaign cells added (each holds a real loopback
campaign's state, ``helpers.hybrid_state``), and the oracle check, which fails the notebook once the
recorded analysis, or a campaign cell's state under the recorded mechanism, is altered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jupytext
import pytest
from helpers.hybrid_state import hybrid_state
from helpers.notebooks import NOTEBOOKS, outputs_text, papermill

from symcc_ulfm.compare import design, study_files, tables
from symcc_ulfm.evidence.mechanism import mechanism
from symcc_ulfm.experiment.jsonfile import write_json

NOTEBOOK = NOTEBOOKS / "compare_report.ipynb"
PROTOCOL = {"format": "symcc-ulfm-compare-protocol/1", "description": "synthetic report study",
            "targets": {"json": {"python": "json_parser"}, "toml": {"python": "toml_parser"}},
            "systems": {"atheris": {"kind": "atheris", "processes": 2},
                        "hybrid": {"kind": "campaign", "launch": ["--worker-kinds", "havoc:1,concolic:1"]},
                        "seeds": {"kind": "seeds"}},
            "reference": "atheris", "trials": 5, "min_trials": 5, "window_s": 60, "cores": 2, "snapshots": 3,
            "seed": 0, "rerun": {"max_attempts": 2}, "stop_rule": {}}
FINALS = {"atheris": 50, "hybrid": 80, "seeds": 10}  # hybrid above atheris above the seeds, by construction


def result(trial: int, target: str, system: str) -> dict:
    final = FINALS[system] + trial
    first = None if system == "seeds" else 10.0 + trial
    return {"format": "symcc-ulfm-compare-cell/1", "cell": f"{trial}.{target}.{system}", "trial": trial,
            "target": target, "system": system, "attempt": 1, "status": "ok", "problems": [], "window_s": 60,
            "wall_s": 60.5, "cores": [0, 1], "load_before": 0.0, "load_after": 0.0,
            "measure": {"measurer": "coverage.py branch arcs", "unit": "arcs", "final": final,
                        "curve": [[0, 5], [30, final - 3], [60, final]], "inputs": 4, "hangs": 0,
                        "findings": [] if first is None else [{"signature": "KeyError@json:1", "first_s": first,
                                                               "sha256": "0" * 64}],
                        "first_finding_s": first}}


def write_study(root: Path, campaign_state: Path) -> None:
    """As the runner leaves a study: every planned cell complete but two toml seeds cells never run and
    0.json.hybrid still running (its result.json without COMPLETE), one attempt moved aside; each
    hybrid cell holds ``campaign_state`` as its campaign's state, but 1.toml.hybrid, which has none."""
    protocol = design.validate(PROTOCOL)
    plan = design.plan(protocol)
    write_json(root / "protocol.json", protocol)
    for cell in plan["cells"]:
        if cell["target"] == "toml" and cell["system"] == "seeds" and cell["trial"] >= 3:
            continue
        (root / "cells" / cell["cell"]).mkdir(parents=True)
        if cell["system"] == "hybrid" and cell["cell"] != "1.toml.hybrid":
            shutil.copytree(campaign_state, root / "cells" / cell["cell"] / "system" / "state", symlinks=True)
        write_json(root / "cells" / cell["cell"] / "result.json", result(cell["trial"], cell["target"], cell["system"]))
        if cell["cell"] != "0.json.hybrid":
            (root / "cells" / cell["cell"] / "COMPLETE").write_bytes(b"")
    write_json(root / "attempts.json", [{"cell": "1.json.hybrid", "attempt": 1, "reason": "interrupted",
                                         "moved_to": "cells/.attempts/1.json.hybrid-1"}])
    study_files.write_analysis(root, protocol, plan)


@pytest.mark.notebook
def test_the_report_shows_the_study_draws_its_figures_and_fails_on_an_altered_analysis(tmp_path):
    from_py, from_ipynb = jupytext.read(NOTEBOOK.with_suffix(".py")), jupytext.read(NOTEBOOK)
    assert [(c.cell_type, c.source) for c in from_py.cells] == [(c.cell_type, c.source) for c in from_ipynb.cells]
    assert all(not c.get("outputs") for c in from_ipynb.cells)  # stored stripped
    root = tmp_path / "study"
    root.mkdir()
    write_study(root, hybrid_state(tmp_path / "campaign"))
    done = papermill("compare_report.ipynb", root / "report.ipynb", study_dir=str(root))
    assert done.returncode == 0, done.stderr[-4000:]
    text = outputs_text(root / "report.ipynb")
    assert "oracle check: selection and analysis recomputed from 27 cell results: equal" in text
    assert "| hybrid | 4 * | 82.5 |" in text and "1.000 large" in text  # 0.json.hybrid never completed
    assert "| seeds | 3 * | 11 |" in text and "refused: needs >= 5 counted cells each: seeds has 3, atheris has 5" in text
    assert "| complete |" in text and "0.json.hybrid" in text and "1.json.hybrid" in text
    assert "critical difference refused: needs >= 3 systems and >= 5 targets" in text
    # what each kind added: one and the same hybrid campaign in every counted hybrid cell
    added = mechanism(root / "cells" / "2.json.hybrid" / "system" / "state")
    assert "oracle check: the mechanism of 8 campaign cells recomputed from their states: equal" in text
    assert f"| json | hybrid | 4/4 | {added['redundant_edge_ratio']:.3g} (" in text
    assert "| toml | hybrid | 4/4 |" in text
    assert "not summarised: 1.toml.hybrid: StoreError: cannot list cells/1.toml.hybrid/system/state/wal" in text
    assert "simfuzz (fuzzer)" in text and "simulate (analysis)" in text
    for name in ("compare-coverage", "compare-final", "compare-survival", "compare-ranks"):
        figure = root / tables.FIGURES_DIR / f"{name}.svg"
        assert figure.stat().st_size > 1000 and figure.with_suffix(".png").is_file(), name

    recorded = json.loads((root / "analysis" / "compare.json").read_text())
    recorded["targets"]["json"]["against_reference"]["seeds"]["a12"] = 0.9
    write_json(root / "analysis" / "compare.json", recorded)
    altered = papermill("compare_report.ipynb", tmp_path / "altered.ipynb", study_dir=str(root))
    assert altered.returncode != 0 and "analysis/compare.json differs from the recomputed analysis" in altered.stderr
    (root / "analysis" / "compare.json").unlink()
    study_files.write_analysis(root, design.validate(PROTOCOL), design.plan(design.validate(PROTOCOL)))
    shutil.rmtree(root / "cells" / "3.json.hybrid" / "system" / "state" / "wal")  # the record no longer follows
    altered = papermill("compare_report.ipynb", tmp_path / "mechanism.ipynb", study_dir=str(root))
    assert altered.returncode != 0 and "analysis/mechanism.json differs from the recomputed mechanism" in altered.stderr
