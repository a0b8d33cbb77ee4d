"""notebooks/f447_run.ipynb executed for real with papermill: a good run is sealed and verifies;
a run whose engines lack ``--with-ft ulfm`` fails closed and papermill (and make) exit non-zero."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.evidence.verify import verify
from symcc_ulfm.launch.engines import cluster_processes, ipp_root

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "f447_run.ipynb"
# ended by a budget by count (the deadline only bounds a run that goes wrong): the scheduled death
# and the work after it happen however loaded the machine is
SMALL = {"ranks": "6", "warm_spares": "1", "workers_per_master": "2", "failure_schedule": "0:2",
         "deadline_s": "240", "stop_after": "3", "executor": "simulate"}

pytestmark = [pytest.mark.notebook, pytest.mark.mpi, pytest.mark.host_wide]


def papermill(output: Path, run_dir: Path, **params: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "papermill"), "--log-level", "WARNING",
               str(NOTEBOOK), str(output), "-p", "run_dir", str(run_dir)]
    for name, value in {**SMALL, **params}.items():
        command += ["-p", name, value]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=400)


def new_run_dir(tmp_path: Path) -> Path:
    run = tmp_path / f"nbtest-{uuid.uuid4().hex[:8]}"
    run.mkdir()
    return run


def assert_no_cluster_left(run: Path) -> None:
    """The notebook uses the run directory's name as the cluster id."""
    assert not (ipp_root() / run.name).exists()
    assert cluster_processes(run.name) == []


def outputs_text(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    parts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")) + "".join(out.get("traceback", [])) + out.get("evalue", ""))
    return "\n".join(parts)


def outputs_of(notebook: Path, mime: str) -> list[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return ["".join(out.get("data", {}).get(mime, "")) for cell in cells for out in cell.get("outputs", [])
            if mime in out.get("data", {})]


def stream_names(notebook: Path) -> set[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return {out["name"] for cell in cells for out in cell.get("outputs", []) if out.get("output_type") == "stream"}


def test_the_notebook_runs_seals_and_verifies(tmp_path):
    run = new_run_dir(tmp_path)
    done = papermill(run / "run.ipynb", run)
    assert done.returncode == 0, done.stderr[-4000:]
    assert_no_cluster_left(run)
    assert (run / "SHA256SUMS.txt").exists() and not (run / "INCOMPLETE").exists()  # the notebook's own seal cell
    for name in ("membership", "throughput", "masters"):
        assert (run / "figures" / f"{name}.svg").exists() and (run / "figures" / f"{name}.png").exists()
    engines = json.loads((run / "engines.json").read_text())
    assert engines["as_scheduled"] and engines["died"] == [2]
    record = json.loads((run / "provenance.json").read_text())
    assert [c["unit"] for c in record["live_checks"]] == ["campaign"]
    seal(run)  # as make evidence does, now that papermill has written the final notebook
    assert "  run.ipynb\n" in (run / "SHA256SUMS.txt").read_text()
    result = verify(run)
    assert result["passed"], result["problems"]
    assert result["result_sha256"] == judge(run)["result_sha256"]
    assert "sealed" in outputs_text(run / "run.ipynb")
    # the live view is HTML in the output (nothing on stderr), in its final state once the engines returned
    pages = outputs_of(run / "run.ipynb", "text/html")
    assert any("finished: budget-reached" in page for page in pages), pages
    assert not any("starting" in page for page in pages)  # start-up messages were redrawn over
    assert "stderr" not in stream_names(run / "run.ipynb")
    assert any("campaign so far" in svg for svg in outputs_of(run / "run.ipynb", "image/svg+xml"))
    assert (run / "state" / "stats" / "fuzzer_stats").read_text().count("campaign_phase    : finished") == 1
    assert "single kind (simulate in every worker slot)" in outputs_text(run / "run.ipynb")


def test_a_hybrid_run_shows_what_each_kind_added(tmp_path):
    run = new_run_dir(tmp_path)
    done = papermill(run / "run.ipynb", run, worker_kinds="simfuzz:1,simulate:1", keep="novel")
    assert done.returncode == 0, done.stderr[-4000:]
    (table,) = [t for t in outputs_of(run / "run.ipynb", "text/markdown") if "| kind | family |" in t]
    assert "| simfuzz | fuzzer |" in table and "| simulate | analysis |" in table
    assert "redundant-edge ratio (analysis side against the fuzzers)" in table


def test_engines_without_ft_fail_closed_and_papermill_exits_non_zero(tmp_path):
    run = new_run_dir(tmp_path)
    done = papermill(tmp_path / "out.ipynb", run, with_ft="False")
    assert done.returncode != 0
    text = outputs_text(tmp_path / "out.ipynb")
    assert "run FAILED" in text and "fault tolerance disabled" in text
    assert not (run / "SHA256SUMS.txt").exists()
    assert not judge(run)["passed"]
    assert_no_cluster_left(run)
    assert (run / "INCOMPLETE").exists()  # the failed run says so, and verify too
    assert verify(run)["problems"][0].startswith("INCOMPLETE: the run is incomplete")


def make_evidence(tmp_path: Path, **params: str) -> subprocess.CompletedProcess:
    words = " ".join(f"{k}={v}" for k, v in {**SMALL, **params}.items())
    return subprocess.run(["make", "evidence", f"EVIDENCE_DIR={tmp_path}", f"EVIDENCE_PARAMS={words}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_make_evidence_ends_with_a_verified_sealed_run(tmp_path):
    done = make_evidence(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = [p for p in tmp_path.iterdir() if p.name.startswith("f447-")]
    assert "verify: PASS" in done.stdout and (run / "run.ipynb").exists()
    assert verify(run)["passed"]


@pytest.mark.slow
def test_make_evidence_rejects_a_failing_run(tmp_path):
    done = make_evidence(tmp_path, with_ft="False")
    assert done.returncode != 0
    assert "not accepted" in done.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("f447-")]
    (run,) = (tmp_path / ".failed").iterdir()
    assert not (run / "SHA256SUMS.txt").exists()
