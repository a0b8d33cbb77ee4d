"""Running an operational gate (``python -m symcc_ulfm.gates.NAME --out DIR``) from a test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_gate(name: str, out: Path, *args: str, timeout: float = 600) -> dict:
    """Run the gate into ``out``; its ``gate.json`` once it exited 0 (the output in the failure)."""
    done = subprocess.run([sys.executable, "-m", f"symcc_ulfm.gates.{name}", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-4000:]
    gate = json.loads((out / "gate.json").read_text())
    assert gate["passed"] and gate["problems"] == []
    return gate
