"""Comparison studies end to end: real campaigns in real cells, the statistics' direction, a killed
cell and a lost study taken up again, the sealed study verified.

Campaigns here stop by count (``launch --stop-after``) and a cell ends when its system's processes
have ended, so no verdict depends on how much work fits into a window: the window is only a bound.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.processes import wait_for

from symcc_ulfm.compare.audit import verify_compare
from symcc_ulfm.compare.runner import run_study
from symcc_ulfm.compare.study_files import ATTEMPTS_FILE, REPORT_FILE
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.experiment.jsonfile import read_json, write_json

ROOT = Path(__file__).resolve().parents[2]
BOUND_S = 240  # a window no passing cell reaches: the campaigns stop by count
FUZZ = {"kind": "campaign", "launch": ["--stop-after", "2"]}


def write_protocol(path: Path, **changes) -> Path:
    value = {"description": "test", "targets": {"tok": {"python": "tokenizer"}},
             "systems": {"seeds": {"kind": "seeds"}, "fuzz": FUZZ}, "reference": "seeds",
             "trials": 4, "min_trials": 4, "window_s": BOUND_S, "cores": 1, "seed": 11, "snapshots": 4}
    value.update(changes)
    path.write_text(json.dumps(value))
    return path


def test_known_direction_sealed_and_verified(tmp_path):
    """The seeds alone against a campaign that starts from them and adds what it finds: the campaign's
    coverage is at least the seeds' by construction, so A12 of the campaign against the seeds is 1.0."""
    study = tmp_path / "study"
    report = run_study(write_protocol(tmp_path / "p.json"), study, echo=lambda _: None)
    assert report["complete"] and not report["cells_failed"] and report["cells_planned"] == 8
    analysis = read_json(study / "analysis" / "compare.json")
    pair = analysis["targets"]["tok"]["against_reference"]["fuzz"]
    assert pair["a12"] == 1.0 and pair["p_value"] < 0.05
    systems = analysis["targets"]["tok"]["systems"]
    assert systems["fuzz"]["median"] > systems["seeds"]["median"]
    for name in report["cells_complete"]:
        result = read_json(study / "cells" / name / "result.json")
        curve = result["measure"]["curve"]
        assert [t for t, _ in curve] == [0.0, 60.0, 120.0, 180.0, 240.0]
        assert all(a[1] <= b[1] for a, b in zip(curve, curve[1:], strict=False))
        assert result["cores"] == [result["cores"][0]]  # pinned to one core, as the protocol says
        assert result["placement"]["host"] and result["placement"]["slurm_step"] is None
    mechanism = read_json(study / "analysis" / "mechanism.json")  # one kind: no ratio, no CPU per kind
    assert sorted(mechanism["cells"]) == sorted(n for n in report["cells_complete"] if n.endswith(".fuzz"))
    assert mechanism["unreadable"] == [] and mechanism["targets"]["tok"]["fuzz"]["hybrid_cells"] == 0
    assert all(cell["edges"] > 0 and cell["single_kind"] and cell["cpu_seconds"] is None
               for cell in mechanism["cells"].values())
    seal(study)
    verified = verify_compare(study, remeasure=True)
    assert verified["passed"], verified["problems"]
    assert verified["cells_checked"] == 8
    # the verifier catches a changed mechanism record: no longer what the campaign states give
    write_json(study / "analysis" / "mechanism.json", {**mechanism, "unreadable": [{"cell": "0.tok.fuzz", "reason": "?"}]})
    assert "analysis/mechanism.json: differs from the analysis of the cells" in verify_compare(study)["problems"]
    # the verifier catches a changed figure: analysis no longer what the cells give
    (study / "cells" / report["cells_complete"][0] / "result.json").write_text("{}")
    assert not verify_compare(study)["passed"]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _compare(protocol: Path, study: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "symcc_ulfm", "compare", str(protocol), "--out", str(study),
                             *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _campaign_started(study: Path):
    return [p for p in (study / "cells").glob("*/system/state/corpus") if p.is_dir()]


def test_killed_cell_is_run_again_and_lost_study_resumes(tmp_path):
    protocol = write_protocol(tmp_path / "p.json", systems={"fuzz": FUZZ}, reference="fuzz", trials=2, min_trials=2)
    study = tmp_path / "study"
    runner = _compare(protocol, study)
    try:
        # 1. the first cell's process is killed while its campaign runs: the runner runs it again
        wait_for(lambda: _campaign_started(study), seen=lambda: "a campaign to start")
        cell_pid = wait_for(lambda: _children(runner.pid), seen=lambda: "the cell process")[0]
        os.kill(cell_pid, signal.SIGKILL)
        wait_for(lambda: (study / ATTEMPTS_FILE).exists(), seen=lambda: "the attempt to be moved aside")
        # 2. the whole study is lost while a later attempt runs (the cells die with the runner)
        wait_for(lambda: _campaign_started(study), seen=lambda: "the next campaign to start")
        runner.kill()
        runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    attempts = read_json(study / ATTEMPTS_FILE)
    assert [a["reason"].split(":")[0] for a in attempts] == ["interrupted"]
    # a resume takes up the lost study: the incomplete cell is moved aside and run again
    resumed = _compare(protocol, study, "--resume")
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    report = read_json(study / REPORT_FILE)
    assert report["complete"] and not report["cells_failed"]
    attempts = read_json(study / ATTEMPTS_FILE)
    assert len(attempts) >= 2 and all(a["reason"].startswith("interrupted") for a in attempts)
    for attempt in attempts:
        assert (study / attempt["moved_to"]).is_dir()
    selection = read_json(study / "selection.json")
    (rule,) = [r for r in selection["rules"] if r["rule"] == "attempts"]
    assert [(a["cell"], a["attempt"]) for a in rule["attempts"]] == [(a["cell"], a["attempt"]) for a in attempts]
    seal(study)
    verified = verify_compare(study)
    assert verified["passed"], verified["problems"]


def test_refused_before_anything_is_written(tmp_path):
    protocol = write_protocol(tmp_path / "p.json", targets={"h": {"harness": "missing"}})
    proc = _compare(protocol, tmp_path / "study")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "--harnesses" in err and not (tmp_path / "study").exists()


@pytest.mark.parametrize("parallel", [3])
def test_parallel_cells_need_disjoint_cores(tmp_path, parallel):
    proc = _compare(write_protocol(tmp_path / "p.json", cores=len(os.sched_getaffinity(0))), tmp_path / "study",
                    "--parallel", str(parallel))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "--parallel" in err


def test_slurm_steps_need_an_allocation_that_holds_the_cells():
    from symcc_ulfm.compare.placement import step_prefix, step_slots
    from symcc_ulfm.errors import ConfigError

    with pytest.raises(ConfigError, match="not inside a Slurm allocation"):
        step_slots(2, 1, {})
    allocation = {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "2(x2)"}
    assert step_slots(2, 2, allocation) == [[], []]
    with pytest.raises(ConfigError, match="need 6 CPUs; the allocation 42 has 4"):
        step_slots(2, 3, allocation)
    prefix = step_prefix(2, "0.t.s")
    assert "--exact" in prefix and "--cpus-per-task=2" in prefix and "--nodes=1" in prefix
