"""Every sealed run committed under evidence/ still verifies (CI re-verification)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.evidence.verify import verify

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence"
RUNS = sorted(p for p in EVIDENCE.glob("f447-*") if (p / "SHA256SUMS.txt").is_file())


@pytest.mark.skipif(not RUNS, reason="no sealed run under evidence/")
@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_committed_run_verifies(run):
    assert subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS.txt"], cwd=run).returncode == 0
    result = verify(run)
    assert result["passed"], result["problems"]
    assert result["result_sha256"] == judge(run)["result_sha256"]
    assert result["result_sha256"] == json.loads((run / "oracle.json").read_text())["result_sha256"]
    assert (run / "run.ipynb").is_file()
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "verify", str(run)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
