"""The files of a comparison study's directory (the layout in :mod:`.runner`'s docstring): their
names, which cells are complete, and what ``selection.json``, ``analysis/compare.json`` and
``analysis/mechanism.json`` hold for them (computed again by the report notebook and the audit).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import StoreError, SymccUlfmError
from ..experiment.jsonfile import DIR_MODE, read_json, write_json
from ..store.dirs import ensure_dir
from . import design as protocols
from .analyze import analyze, analyze_mechanism
from .cell_run import CELLS_DIR, COMPLETE_MARKER, PLAN_FILE, PROTOCOL_FILE, RESULT_FILE, SYSTEM_DIR
from .systems.campaign_system import STATE_DIR

PROVENANCE_FILE = "provenance.json"
ATTEMPTS_FILE = "attempts.json"
REPORT_FILE = "report.json"
SELECTION_FILE = "selection.json"
ANALYSIS_DIR = "analysis"
ANALYSIS_FILE = "compare.json"
MECHANISM_FILE = "mechanism.json"  # in ANALYSIS_DIR: what each worker kind of the campaign cells added
LOGS_DIR = "logs"
ATTEMPTS_DIR = ".attempts"
STUDY_FILES = (PROTOCOL_FILE, PLAN_FILE, PROVENANCE_FILE, CELLS_DIR, REPORT_FILE)


def is_compare_study(path: str | Path) -> bool:
    try:
        return protocols.is_compare_protocol(read_json(Path(path) / PROTOCOL_FILE))
    except (OSError, ValueError):
        return False


def read_attempts(out: Path) -> list[dict]:
    try:
        return list(read_json(out / ATTEMPTS_FILE))
    except FileNotFoundError:
        return []


def complete_results(out: Path, plan: dict) -> dict[str, Any]:
    """The ``result.json`` (or ``None`` when unreadable) of every planned cell marked COMPLETE; a cell
    directory that is a link is not one."""
    done = {}
    for cell in plan["cells"]:
        directory = out / CELLS_DIR / cell["cell"]
        if (directory / COMPLETE_MARKER).is_file() and not directory.is_symlink():
            try:
                done[cell["cell"]] = read_json(directory / RESULT_FILE)
            except (FileNotFoundError, ValueError, StoreError):  # missing, not JSON, a link, too large
                done[cell["cell"]] = None
    return done


def is_ok(result: Any) -> bool:
    return isinstance(result, dict) and result.get("status") == "ok"


def compute_analysis(out: Path, protocol: dict, plan: dict) -> tuple[dict, dict]:
    """What selection.json and analysis/compare.json hold for the complete cells (each names the protocol)."""
    selection, analysis = analyze(protocol, complete_results(out, plan), read_attempts(out))
    sha = plan["protocol_sha256"]
    return {**selection, "protocol_sha256": sha}, {**analysis, "protocol_sha256": sha}


def compute_mechanism(out: Path, protocol: dict, selection: dict) -> dict:
    """What ``analysis/mechanism.json`` holds: :func:`.analyze.analyze_mechanism` of each counted
    campaign cell's state (``evidence.mechanism``), naming the protocol."""
    from ..evidence.mechanism import mechanism

    summaries: dict[str, dict | str] = {}
    for name in selection["counted_cells"]:
        if protocol["systems"][name.rsplit(".", 1)[1]]["kind"] != "campaign":
            continue
        try:
            summaries[name] = mechanism(out / CELLS_DIR / name / SYSTEM_DIR / STATE_DIR)
        except (OSError, SymccUlfmError, ValueError, KeyError, TypeError) as exc:  # paths relative: the study may move
            summaries[name] = f"{type(exc).__name__}: {exc}".replace(f"{out}{os.sep}", "")
    return {**analyze_mechanism(protocol, selection, summaries), "protocol_sha256": selection["protocol_sha256"]}


def write_analysis(out: Path, protocol: dict, plan: dict) -> tuple[dict, dict]:
    selection, analysis = compute_analysis(out, protocol, plan)
    write_json(out / SELECTION_FILE, selection)
    analysis_dir = ensure_dir(out / ANALYSIS_DIR, DIR_MODE)
    write_json(analysis_dir / ANALYSIS_FILE, analysis)
    write_json(analysis_dir / MECHANISM_FILE, compute_mechanism(out, protocol, selection))
    return selection, analysis
