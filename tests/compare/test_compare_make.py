"""``make compare`` end to end: the study, its report notebook (papermill), the seal, ``sha256sum -c``
and ``symcc-ulfm verify``; a study whose cells stand failed is kept sealed and the recipe exits 3.

The campaigns stop by count (``launch --stop-after``) and a cell ends with its system, so the
window is only a bound no passing cell reaches."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from symcc_ulfm.compare.audit import verify_compare

REPO = Path(__file__).resolve().parents[2]
TINY = {"description": "make compare test", "targets": {"tok": {"python": "tokenizer"}},
        "systems": {"seeds": {"kind": "seeds"}, "fuzz": {"kind": "campaign", "launch": ["--stop-after", "2"]}},
        "reference": "seeds", "trials": 2, "min_trials": 2, "window_s": 240, "cores": 1, "seed": 3, "snapshots": 2}


def make_compare(tmp_path: Path, protocol: dict) -> tuple[subprocess.CompletedProcess, Path]:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol))
    study = tmp_path / "study"
    done = subprocess.run(["make", "compare", f"COMPARE_PROTOCOL={path}", f"COMPARE_OUT={study}"], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    return done, study


def test_make_compare_ends_with_a_sealed_verified_study_and_its_report(tmp_path):
    done, study = make_compare(tmp_path, TINY)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"compare: {study}" in done.stdout and "verify: PASS" in done.stdout
    assert subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS.txt"], cwd=study).returncode == 0
    sums = (study / "SHA256SUMS.txt").read_text()
    assert "  compare_report.ipynb\n" in sums and "  figures/compare-coverage.svg\n" in sums
    assert verify_compare(study)["passed"]
    again = subprocess.run([sys.executable, "-m", "symcc_ulfm", "verify", str(study), "--remeasure", "--json"],
                           cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and json.loads(again.stdout)["cells_checked"] == 4, again.stdout + again.stderr
    pair = json.loads((study / "analysis" / "compare.json").read_text())["targets"]["tok"]["against_reference"]
    assert pair["fuzz"]["a12"] == 1.0  # the campaign starts from the seeds and adds what it finds


@pytest.mark.slow
def test_make_compare_keeps_a_study_whose_cells_stand_failed_sealed_and_exits_3(tmp_path):
    failing = {**TINY, "systems": {"seeds": {"kind": "seeds"},
                                   "broken": {"kind": "campaign", "launch": ["--worker-kinds", "nosuch:1"]}}}
    done, study = make_compare(tmp_path, failing)
    assert done.returncode != 0 and "Error 3" in done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((study / "report.json").read_text())
    assert sorted(report["cells_failed"]) == ["0.tok.broken", "1.tok.broken"]
    attempts = json.loads((study / "attempts.json").read_text())
    assert sorted(a["cell"] for a in attempts) == ["0.tok.broken", "1.tok.broken"]  # each tried twice
    assert all(a["reason"].startswith("failed") for a in attempts)
    assert verify_compare(study)["passed"]
