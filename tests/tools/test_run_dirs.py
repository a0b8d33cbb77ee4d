"""Run directories: the notebook's default place is ignored by git, a run is marked INCOMPLETE
from its making until its seal, and `verify` calls an unsealed run incomplete."""

from __future__ import annotations

import subprocess
import sys

import pytest

from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.evidence.rundir import interactive_base, new_run_dir, open_run_dir, repo_root
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.evidence.verify import verify

POLICY = build_policy(executor="simulate")


def test_interactive_runs_go_to_a_folder_git_ignores():
    base = interactive_base()
    assert base == repo_root() / "runs" / "notebook"
    probe = base / "f447-20990101T000000Z-00000000" / "state" / "policy.json"
    ignored = subprocess.run(["git", "-C", str(repo_root()), "check-ignore", "-q", str(probe)])
    assert ignored.returncode == 0, f"{probe} would be committed"
    evidence = subprocess.run(["git", "-C", str(repo_root()), "check-ignore", "-q",
                               str(repo_root() / "evidence" / probe.parent.parent.name / "SHA256SUMS.txt")])
    assert evidence.returncode == 1  # make evidence's runs are meant to be committed


def test_a_run_is_incomplete_until_sealed(tmp_path):
    run = new_run_dir(POLICY, tmp_path)
    assert run.incomplete.exists() and run.root.parent == tmp_path
    result = verify(run.root)
    assert not result["passed"] and result["problems"] == [
        "INCOMPLETE: the run is incomplete: it was interrupted or failed before it was sealed, so it is not "
        "evidence (symcc-ulfm oracle judges the state it holds)"]
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "verify", str(run.root)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "problem: INCOMPLETE: the run is incomplete" in done.stdout
    (run.root / "figures").mkdir()
    (run.root / "figures" / "a.svg").write_text("<svg/>")
    seal(run.root)
    assert not run.incomplete.exists()
    assert [line.split("  ")[1] for line in run.sums.read_text().splitlines()] == ["figures/a.svg"]
    assert "INCOMPLETE" not in " ".join(verify(run.root)["problems"])  # judged now, as any sealed run


def test_make_evidence_s_run_directory_is_opened_by_the_notebook_and_stays_marked(tmp_path):
    made = new_run_dir(POLICY, tmp_path)  # what `python -m symcc_ulfm.evidence.rundir BASE` does for make
    (made.root / "run.ipynb").write_text("{}")  # papermill's first write
    assert open_run_dir(made.root).incomplete.exists()
    (made.root / "provenance.json").write_text("{}")
    with pytest.raises(FileExistsError, match="already holds provenance.json"):
        open_run_dir(made.root)
    fresh = open_run_dir(tmp_path / "given")  # papermill -p run_dir DIR on a new directory
    assert fresh.incomplete.exists()
