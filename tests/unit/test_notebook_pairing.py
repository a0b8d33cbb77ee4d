"""The notebooks' .ipynb and jupytext .py stay paired, and the committed .ipynb has no outputs."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jupytext
import pytest

from symcc_ulfm.core.reference import REFERENCE

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PARAMETERS = {"ranks", "warm_spares", "workers_per_master", "failure_schedule", "deadline_s", "executor", "target",
              "hosts", "minimum_hosts", "seed", "run_dir"}


@pytest.mark.parametrize("name", ["f447_run"])
def test_ipynb_and_py_have_the_same_cells(name):
    from_py = jupytext.read(NOTEBOOKS / f"{name}.py")
    from_ipynb = jupytext.read(NOTEBOOKS / f"{name}.ipynb")
    assert [(c.cell_type, c.source) for c in from_py.cells] == [(c.cell_type, c.source) for c in from_ipynb.cells]
    assert from_ipynb.metadata["jupytext"]["formats"] == "ipynb,py:percent"


def test_committed_ipynb_is_stripped():
    for path in NOTEBOOKS.glob("*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


def test_the_parameters_cell_holds_the_reference_campaign():
    cells = jupytext.read(NOTEBOOKS / "f447_run.py").cells
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    values = {}
    for node in ast.parse(params.source).body:
        if isinstance(node, ast.Assign):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    assert PARAMETERS <= set(values)
    assert {k: values[k] for k in REFERENCE} == REFERENCE  # papermill needs literals: they must match the one owner
