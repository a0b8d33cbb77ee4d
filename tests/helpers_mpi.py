"""Run real campaigns for tests: `symcc-ulfm launch` in a subprocess, then read the verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FAST_SIMULATE = ["--executor", "simulate", "--executor-option", "cost_s=0.02"]


@dataclass
class Launch:
    returncode: int
    verdict: dict
    stderr: str
    state: Path

    def log_events(self, event: str | None = None) -> list[dict]:
        rows = []
        for path in sorted((self.state / "logs").glob("rank-*.jsonl")):
            for line in path.read_text().splitlines():
                row = json.loads(line)
                if event is None or row["event"] == event:
                    rows.append(row)
        return rows


def launch(state: Path, *args: str, env: dict | None = None, timeout: float = 300) -> Launch:
    command = [sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state), "--json", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    verdict = json.loads(lines[-1]) if lines else {}
    return Launch(done.returncode, verdict, done.stderr, state)
