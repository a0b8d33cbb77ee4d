"""Triage of a binary target: afl-tmin on the AFL build shrinks a crash (the SymCC stand-in of
tests/fixtures/symcc dies with SIGSEGV on inputs starting with CRSH) while the signature, checked
by the contained symcc executor, is kept; replay shows the binary's stderr."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.symcc import AFL_MISSING, afl_available, afl_twin, stand_in


@pytest.mark.skipif(not afl_available(), reason=AFL_MISSING)
def test_minimize_a_c_crash_with_afl_tmin(tmp_path):
    binary, twin = stand_in(tmp_path / "build"), afl_twin(tmp_path / "build")
    crash = tmp_path / "crash"
    crash.write_bytes(b"CRSH" + bytes(range(60)))
    out = tmp_path / "crash.min"
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "minimize", "--input", str(crash), "--target",
                           str(binary), "--executor", "symcc", "--executor-option", f"afl_binary={twin}",
                           "--out", str(out), "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["tools"] == ["afl-tmin", "ddmin+simplify"] and row["kind"] == "crash"
    assert row["signature"].startswith("SIGSEGV") and out.read_bytes() == b"CRSH"
    replayed = subprocess.run([sys.executable, "-m", "symcc_ulfm", "replay", "--input", str(out), "--target",
                               str(binary), "--executor", "symcc", "--repeat", "3", "--json"],
                              capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    measured = json.loads(replayed.stdout)
    assert measured["reproduction"]["rate"] == 1.0 and measured["signature"] == row["signature"]
