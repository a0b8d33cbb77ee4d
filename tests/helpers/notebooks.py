"""Running a notebook of ``notebooks/`` with papermill, as ``make`` does, and reading what it printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"


def papermill(notebook: str, output: Path, **params: str) -> subprocess.CompletedProcess:
    """``notebooks/<notebook>`` executed into ``output`` with ``-p`` for each of ``params``."""
    command = [str(Path(sys.executable).parent / "papermill"), "--log-level", "WARNING",
               str(NOTEBOOKS / notebook), str(output)]
    for name, value in params.items():
        command += ["-p", name, value]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def outputs_text(notebook: Path) -> str:
    """The streams and the Markdown an executed notebook displayed, cell after cell."""
    parts = []
    for cell in json.loads(notebook.read_text())["cells"]:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)
