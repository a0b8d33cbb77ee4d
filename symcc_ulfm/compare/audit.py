"""Verify a sealed comparison study (``symcc-ulfm verify STUDY``), reporting rather than raising.

Beyond the seal (the strict check of :func:`symcc_ulfm.evidence.verify.check_seal`):

- ``protocol.json`` is a valid, normalised comparison protocol; ``plan.json`` is exactly its plan;
  the plan, provenance, report, selection and analysis all name its digest;
- every complete cell is a planned cell whose ``result.json`` names it; each input the measurer
  ran is kept under ``inputs/`` with its SHA-256 as its name, and ``listing.json`` names only kept
  inputs; its ``measure.inputs`` is the number of kept inputs; a live provenance check preceded it;
- a campaign cell's state recomputes (independent verifier and a fresh oracle) to one
  ``result_sha256``, and an ``ok`` campaign cell's campaign passed;
- every attempt moved aside is where ``attempts.json`` says;
- ``selection.json`` and ``analysis/compare.json`` are what the analysis computes from the cells,
  and so is ``analysis/mechanism.json`` where the study has one (a study made before it has none);
- the report names the failed cells;
- with ``remeasure``: the one measurer, run again on each ``ok`` cell's kept inputs, gives the
  recorded final coverage, curve and finding signatures.

``result_sha256`` is the SHA-256 of the canonical JSON of ``{protocol_sha256, cells: {name:
SHA-256 of its result.json}, analysis: SHA-256 of analysis/compare.json}``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..core.canonical import canonical_json, digest
from ..evidence.oracle.judge import judge
from ..evidence.recompute import recompute
from ..evidence.verify import check_seal
from ..experiment.jsonfile import dumps, json_or_problem, read_json
from ..store.reads import read_bytes
from . import design as protocols
from .cell_run import CELLS_DIR, COMPLETE_MARKER, PLAN_FILE, PROTOCOL_FILE, RESULT_FILE, SYSTEM_DIR
from .listing import INPUTS_DIR, LISTING_FILE, Input
from .study_files import (
    ANALYSIS_DIR,
    ANALYSIS_FILE,
    ATTEMPTS_FILE,
    MECHANISM_FILE,
    PROVENANCE_FILE,
    REPORT_FILE,
    SELECTION_FILE,
    compute_analysis,
    compute_mechanism,
    is_ok,
)
from .study_targets import resolve
from .systems.campaign_system import STATE_DIR


def _documents(root: Path, problems: list[str]) -> tuple[dict | None, dict | None]:
    raw = json_or_problem(root / PROTOCOL_FILE, problems, PROTOCOL_FILE)
    if raw is None:
        return None, None
    try:
        protocol = protocols.validate(raw)
    except protocols.CompareProtocolError as exc:
        problems.append(f"{PROTOCOL_FILE}: not a valid comparison protocol: {exc}")
        return None, None
    if protocol != raw:
        problems.append(f"{PROTOCOL_FILE}: not in normalised form")
    plan = protocols.plan(protocol)
    if (root / PLAN_FILE).is_file() and read_bytes(root / PLAN_FILE) != canonical_json(plan):
        problems.append(f"{PLAN_FILE}: is not the plan of {PROTOCOL_FILE}")
    sha = plan["protocol_sha256"]
    mechanism = [f"{ANALYSIS_DIR}/{MECHANISM_FILE}"] if (root / ANALYSIS_DIR / MECHANISM_FILE).is_file() else []
    for rel in (PLAN_FILE, PROVENANCE_FILE, REPORT_FILE, SELECTION_FILE, f"{ANALYSIS_DIR}/{ANALYSIS_FILE}", *mechanism):
        document = json_or_problem(root / rel, problems, rel)
        if isinstance(document, dict) and document.get("protocol_sha256") != sha:
            problems.append(f"{rel}: names protocol {str(document.get('protocol_sha256'))[:12]}, not {sha[:12]}")
    return protocol, plan


def _kept_inputs(cell: Path, rel: str, result: dict, problems: list[str]) -> None:
    folder = cell / INPUTS_DIR
    names = set()
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.is_symlink() or not path.is_file():
            problems.append(f"{rel}/{INPUTS_DIR}/{path.name}: not a regular file")
            continue
        if hashlib.sha256(read_bytes(path)).hexdigest() != path.name:
            problems.append(f"{rel}/{INPUTS_DIR}/{path.name}: its SHA-256 is not its name")
        names.add(path.name)
    listing = json_or_problem(cell / LISTING_FILE, problems, LISTING_FILE) or {}
    for entry in listing.get("files", []):
        if entry.get("sha256") and entry["sha256"] not in names:
            problems.append(f"{rel}/{LISTING_FILE}: {entry.get('path')} names an input not kept")
    measured = result.get("measure")
    if isinstance(measured, dict) and measured.get("inputs") != len(names):
        problems.append(f"{rel}: measured {measured.get('inputs')} inputs, {len(names)} are kept")


def _campaign(cell: Path, rel: str, result: dict, problems: list[str]) -> None:
    state = cell / SYSTEM_DIR / STATE_DIR
    try:
        mine = recompute(state)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        if is_ok(result):
            problems.append(f"{rel}: its campaign state cannot be verified: {type(exc).__name__}: {exc}")
        return
    verdict = judge(state)
    if verdict.get("result_sha256") != mine["result_sha256"]:
        problems.append(f"{rel}: the oracle's result_sha256 differs from the verifier's")
    if is_ok(result) and not (verdict["passed"] and mine["summary"]["passed"]):
        problems.append(f"{rel}: recorded ok, but its campaign does not pass")


def _remeasure(root: Path, rel: str, protocol: dict, result: dict, harnesses: Path | None,
               problems: list[str]) -> None:
    from .measure import measure

    cell = root / rel
    listing = read_json(cell / LISTING_FILE)
    inputs = [Input(**entry) for entry in listing["inputs"]]
    target = resolve(result["target"], protocol["targets"][result["target"]], harnesses)
    scratch = cell.parent.parent / ".remeasure"
    scratch.mkdir(exist_ok=True)
    again = measure(target, inputs, cell / INPUTS_DIR, protocols.curve_times(protocol), scratch)
    recorded = result["measure"]
    for key in ("final", "curve"):
        if again[key] != recorded[key]:
            problems.append(f"{rel}: measured again, {key} is {again[key]}, recorded {recorded[key]}")
    signatures = sorted(f["signature"] for f in again["findings"])
    if signatures != sorted(f["signature"] for f in recorded["findings"]):
        problems.append(f"{rel}: measured again, the findings are {signatures}")


def verify_compare(path: str | Path, remeasure: bool = False) -> dict[str, Any]:
    """``passed, result_sha256, files_checked, cells_checked, problems``."""
    root = Path(path)
    problems: list[str] = []
    checked = check_seal(root, problems)
    protocol, plan = _documents(root, problems)
    cells: dict[str, str] = {}
    analysis_sha = None
    if protocol is not None:
        planned = {c["cell"] for c in plan["cells"]}
        record = json_or_problem(root / PROVENANCE_FILE, problems, PROVENANCE_FILE) or {}
        live = {check.get("unit") for check in record.get("live_checks", [])}
        harness_roots = {Path(t["harness"]).parent for t in record.get("targets", {}).values() if "harness" in t}
        harnesses = next(iter(harness_roots)) if len(harness_roots) == 1 else None
        failed = []
        for cell in sorted((root / CELLS_DIR).iterdir()) if (root / CELLS_DIR).is_dir() else []:
            rel = f"{CELLS_DIR}/{cell.name}"
            if cell.name.startswith(".") or not (cell / COMPLETE_MARKER).is_file():
                continue
            if cell.name not in planned:
                problems.append(f"{rel}: not a cell of the plan")
                continue
            result = json_or_problem(root / f"{rel}/{RESULT_FILE}", problems, f"{rel}/{RESULT_FILE}")
            if not isinstance(result, dict) or result.get("cell") != cell.name:
                problems.append(f"{rel}/{RESULT_FILE}: not this cell's result")
                continue
            cells[cell.name] = hashlib.sha256(read_bytes(cell / RESULT_FILE)).hexdigest()
            if f"cell {cell.name}" not in live:
                problems.append(f"{rel}: no live provenance check before it in {PROVENANCE_FILE}")
            _kept_inputs(cell, rel, result, problems)
            if protocol["systems"][result["system"]]["kind"] == "campaign":
                _campaign(cell, rel, result, problems)
            if not is_ok(result):
                failed.append(cell.name)
            elif remeasure:
                _remeasure(root, rel, protocol, result, harnesses, problems)
        for attempt in json_or_problem(root / ATTEMPTS_FILE, [], ATTEMPTS_FILE) or []:
            if not (root / attempt["moved_to"]).is_dir():
                problems.append(f"{ATTEMPTS_FILE}: attempt {attempt['moved_to']} is missing")
        report = json_or_problem(root / REPORT_FILE, problems, REPORT_FILE) or {}
        if sorted(report.get("cells_failed", [])) != sorted(failed):
            problems.append(f"{REPORT_FILE}: cells_failed {report.get('cells_failed')} != the failed cells {failed}")
        selection, analysis = compute_analysis(root, protocol, plan)
        fresh_records = [(SELECTION_FILE, selection), (f"{ANALYSIS_DIR}/{ANALYSIS_FILE}", analysis)]
        if (root / ANALYSIS_DIR / MECHANISM_FILE).is_file():  # a study made before it was recorded has none
            fresh_records.append((f"{ANALYSIS_DIR}/{MECHANISM_FILE}", compute_mechanism(root, protocol, selection)))
        for rel, fresh in fresh_records:
            if (root / rel).is_file() and json.loads(read_bytes(root / rel)) != json.loads(dumps(fresh)):
                problems.append(f"{rel}: differs from the analysis of the cells")
        if (root / ANALYSIS_DIR / ANALYSIS_FILE).is_file():
            analysis_sha = hashlib.sha256(read_bytes(root / ANALYSIS_DIR / ANALYSIS_FILE)).hexdigest()
    result_sha = None if protocol is None else digest(
        {"protocol_sha256": plan["protocol_sha256"], "cells": cells, "analysis": analysis_sha})
    return {"passed": not problems, "result_sha256": result_sha, "files_checked": checked,
            "cells_checked": len(cells), "problems": problems}
