"""The matrix directory without running a campaign: bad input exits 2 before anything is written,
a directory is continued only with its own protocol, the stop rule, moving cells aside."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.experiment import matrix
from symcc_ulfm.experiment import protocol as protocols

REPO = Path(__file__).resolve().parents[2]
SMALL = {"tiers": [1, 2], "repeats": 2, "window_s": 2, "cores": 2, "executor": "simulate", "target": None,
         "seed": 3, "masters_rule": {"workers_per_master": 3}, "stop_rule": {}}


def write_protocol(path: Path, **changes) -> Path:
    path.write_text(json.dumps({**SMALL, **changes}))
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_an_explicit_target_that_matches_nothing_exits_2_and_writes_nothing(tmp_path):
    protocol = write_protocol(tmp_path / "p.json", executor="concolic", target="no_such_target")
    done = cli("matrix", str(protocol), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert "no_such_target" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("changes", "field"), [({"tiers": [0]}, "tiers"),
                                                ({"executor_options": {"cost_s": -1}}, "executor_options.cost_s"),
                                                ({"stop_rule": {"max_cell": 3}}, "stop_rule")])
def test_a_bad_protocol_exits_2_naming_the_field(tmp_path, changes, field):
    done = cli("matrix", str(write_protocol(tmp_path / "p.json", **changes)), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and field in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def open_small(out: Path, resume: bool = False, **changes) -> dict:
    protocol = protocols.validate({**SMALL, **changes})
    return matrix.open_matrix(out, protocol, protocols.plan(protocol), resume)


def test_a_matrix_directory_is_continued_only_with_its_own_protocol(tmp_path):
    out = tmp_path / "m"
    record = open_small(out)
    assert record["protocol_sha256"] == json.loads((out / "plan.json").read_text())["protocol_sha256"]
    assert (out / "cells").is_dir() and record["live_checks"] == []
    with pytest.raises(ConfigError, match="already holds a matrix"):
        open_small(out)
    assert open_small(out, resume=True)["source_tree"] == record["source_tree"]
    with pytest.raises(ConfigError, match="only with its own protocol"):
        open_small(out, resume=True, seed=4)
    with pytest.raises(ConfigError, match="holds no matrix to resume"):
        open_small(tmp_path / "empty", resume=True)


def test_a_directory_holding_only_the_notebook_may_start_a_matrix(tmp_path):
    (tmp_path / "scale.ipynb").write_text("{}")
    open_small(tmp_path)
    assert (tmp_path / "protocol.json").is_file()


def test_stop_rule():
    done = {f"{b}-1": {"wall_s": 10.0} for b in range(3)}
    assert matrix.stop_reason({}, done) is None
    assert matrix.stop_reason({"max_cells": 4}, done) is None
    assert matrix.stop_reason({"max_cells": 3}, done) == "stop_rule max_cells=3 reached: 3 cells complete"
    assert matrix.stop_reason({"max_seconds": 31}, done) is None
    assert "max_seconds=30 reached" in matrix.stop_reason({"max_seconds": 30}, done)
    assert matrix.stop_reason({"max_seconds": 30}, {**done, "x": None}) is not None  # unreadable: counted, 0 s


def test_incomplete_cells_are_moved_aside_never_deleted(tmp_path):
    cells = tmp_path / "cells"
    for k in (1, 2):
        (cells / "0-8").mkdir(parents=True)
        (cells / "0-8" / "job-output.txt").write_text(f"attempt {k}")
        assert matrix.move_aside(cells / "0-8") == f".incomplete/0-8-{k}"
    assert not (cells / "0-8").exists()
    assert (cells / ".incomplete" / "0-8-2" / "job-output.txt").read_text() == "attempt 2"
