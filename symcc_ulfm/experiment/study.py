"""A sealed scaling study: the matrix directory plus the executed notebook, figures and the seal.

::

    scale-<UTC time>-<first 8 hex of the protocol SHA-256>/
        protocol.json plan.json provenance.json cells/ selection.json analysis/ report.json   (:mod:`.matrix`)
        figures/<name>.{svg,png}       drawn by notebooks/f447_scale.ipynb
        scale.ipynb                    the executed notebook (papermill)
        SHA256SUMS.txt                 ``sha256sum -c`` list of every other file

``symcc-ulfm verify`` checks one campaign's run directory (``state/`` at the top); a study holds
one campaign state per cell, so :func:`verify_study` is its counterpart. Beyond the seal (the
same strict check as :func:`symcc_ulfm.evidence.verify.check_seal`) it requires that

- ``protocol.json`` is a valid, normalised protocol whose digest the plan, provenance, report
  and selection all name, and ``plan.json`` is exactly the plan of that protocol;
- every complete cell's campaign state recomputes (independent verifier and a fresh oracle) to
  the ``result_sha256`` its ``state/oracle.json`` and ``result.json`` record, under the policy
  of the plan; an ``ok`` cell passes both and its metrics are exactly its WAL counts over the
  window; a ``failed`` cell shows why (a job failure, or an oracle that does not pass);
- each complete cell ran under the sealed source tree, after a live provenance check;
- ``selection.json`` and ``analysis/*.json`` are what the analysis computes from those cells;
- the report names the failed cells.

``result_sha256`` of a study is the SHA-256 of the canonical JSON of ``{protocol_sha256,
cells: {name: the cell's oracle result_sha256}, analysis: {file: SHA-256 of its bytes}}``.

``python -m symcc_ulfm.experiment.study new BASE PROTOCOL`` creates a new study directory and
prints it; ``verify DIR [--json]`` exits 0 pass, 1 fail; ``sealed-with-failed-cells DIR`` exits 0
when the study is sealed and its report names failed cells (the Makefile then keeps the study
and exits 3), else 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..core.canonical import canonical_json, digest
from ..evidence.oracle.judge import judge
from ..evidence.recompute import recompute
from ..evidence.verify import SUMS, check_seal
from . import analysis, protocol
from .cell import STATE_DIR, cell_failed, measurements
from .jsonfile import dumps, json_or_problem, read_json
from .matrix import PLAN_FILE, PROVENANCE_FILE, REPORT_FILE
from .selection import CELLS_DIR, PROTOCOL_FILE, RESULT_FILE, load_protocol, read_cells, select

STUDY_PREFIX = "scale"
NOTEBOOK_NAME = "scale.ipynb"
FIGURES_DIR = "figures"


def study_id(protocol_sha256: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{STUDY_PREFIX}-{stamp}-{protocol_sha256[:8]}"


def new_study_dir(base: str | Path, protocol_path: str | Path) -> Path:
    """Create ``<base>/<study id>/`` for the (validated) protocol; never reuses a directory."""
    sha = protocol.protocol_digest(protocol.load(protocol_path))
    base = Path(base)
    base.mkdir(parents=True, exist_ok=True)
    root = base / study_id(sha)
    root.mkdir()
    return root.absolute()


def is_study(path: str | Path) -> bool:
    return (Path(path) / PROTOCOL_FILE).is_file() and (Path(path) / PLAN_FILE).is_file()


def load_study(path: str | Path) -> dict[str, Any]:
    """Everything the notebook shows: protocol, plan, report, selection, analysis files and cell results."""
    root = Path(path)
    results = {e.name: e.result for e in read_cells(root) if e.complete and isinstance(e.result, dict)}
    return {
        "protocol": load_protocol(root),
        "plan": read_json(root / PLAN_FILE),
        "report": read_json(root / REPORT_FILE),
        "selection": read_json(root / analysis.SELECTION_FILE),
        **{name: read_json(root / analysis.ANALYSIS_DIR / f"{name}.json") for name in analysis.OUTPUTS},
        "results": results,
    }


def _check_documents(root: Path, problems: list[str]) -> tuple[dict | None, dict | None]:
    """Protocol, plan, provenance and report agree with each other; returns (protocol, plan)."""
    raw = json_or_problem(root / PROTOCOL_FILE, problems, PROTOCOL_FILE)
    if raw is None:
        return None, None
    try:
        normalised = protocol.validate(raw)
    except protocol.StudyProtocolError as exc:
        problems.append(f"{PROTOCOL_FILE}: not a valid protocol: {exc}")
        return None, None
    if normalised != raw:
        problems.append(f"{PROTOCOL_FILE}: not in normalised form")
    sha = protocol.protocol_digest(raw)
    plan = protocol.plan(normalised)
    if (root / PLAN_FILE).is_file() and (root / PLAN_FILE).read_bytes() != canonical_json(plan):
        problems.append(f"{PLAN_FILE}: is not the plan of {PROTOCOL_FILE} (order, seed or policies differ)")
    for rel in (PLAN_FILE, PROVENANCE_FILE, REPORT_FILE, analysis.SELECTION_FILE):
        document = json_or_problem(root / rel, problems, rel)
        if document is not None and document.get("protocol_sha256") != sha:
            problems.append(f"{rel}: names protocol {str(document.get('protocol_sha256'))[:12]}, "
                            f"{PROTOCOL_FILE} is {sha[:12]}")
    return normalised, plan


def _check_cell(root: Path, name: str, result: dict, context: dict, problems: list[str]) -> str | None:
    """One complete cell against its state; returns its oracle result_sha256 (recomputed)."""
    rel = f"{CELLS_DIR}/{name}"
    state = root / CELLS_DIR / name / STATE_DIR
    planned = context["planned"].get(name)
    if planned is None:
        problems.append(f"{rel}: not a cell of the plan")
        return None
    if result.get("source_tree_sha256") != context["source_tree"]:
        problems.append(f"{rel}: ran under another source tree than the sealed provenance")
    if f"cell {name}" not in context["live_units"]:
        problems.append(f"{rel}: no live provenance check before it in {PROVENANCE_FILE}")
    job_failed = result.get("job_returncode") != 0 or result.get("job_timed_out") is not False
    try:
        mine = recompute(state)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        if result.get("status") != "failed" or not job_failed:  # a killed job may leave no readable state
            problems.append(f"{rel}/state: the verifier cannot read it: {type(exc).__name__}: {exc}")
        return None
    verdict = judge(state)
    ours = mine["result_sha256"]
    if verdict.get("result_sha256") != ours:
        problems.append(f"{rel}: the oracle's result_sha256 {verdict.get('result_sha256')} != the verifier's {ours}")
    recorded = json_or_problem(state / "oracle.json", problems, f"{rel}/state/oracle.json") or {}
    for where, value in (("state/oracle.json", recorded.get("result_sha256")),
                         (RESULT_FILE, result.get("oracle_result_sha256"))):
        if value != ours:
            problems.append(f"{rel}/{where}: records result_sha256 {value}, recomputed {ours}")
    if mine["summary"]["policy_sha256"] != planned["policy_sha256"]:
        problems.append(f"{rel}: the state's policy is not the planned one")
    if result.get("status") == "ok":
        if not (mine["summary"]["passed"] and verdict["passed"]) or job_failed:
            problems.append(f"{rel}: recorded ok, but the campaign does not pass")
        expected = measurements(float(context["window_s"]), mine["summary"])
        for key, value in expected.items():
            if result.get(key) != value:
                problems.append(f"{rel}/{RESULT_FILE}: {key} is {result.get(key)}, the state gives {value}")
    elif not job_failed and verdict["passed"]:
        problems.append(f"{rel}: recorded failed, but its job exited 0 and the oracle passes")
    return ours


def _check_analysis(root: Path, problems: list[str]) -> dict[str, str]:
    """The analysis files equal a fresh computation; returns their SHA-256 by file."""
    proto = load_protocol(root)
    selection = select(proto, read_cells(root))
    fresh = {
        analysis.SELECTION_FILE: selection.record,
        **{f"{analysis.ANALYSIS_DIR}/{name}.json": value for name, value in analysis.compute(proto, selection).items()},
    }
    digests = {}
    for rel, value in fresh.items():
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        data = path.read_bytes()
        digests[rel] = hashlib.sha256(data).hexdigest()
        if json.loads(data) != json.loads(dumps(value)):
            problems.append(f"{rel}: differs from the analysis of the cells")
    return digests


def verify_study(path: str | Path) -> dict[str, Any]:
    """``passed, result_sha256, files_checked, cells_checked, problems`` (reports, does not raise)."""
    root = Path(path)
    problems: list[str] = []
    if not is_study(root):
        return {"passed": False, "result_sha256": None, "files_checked": 0, "cells_checked": 0,
                "problems": [f"{root}: not a study directory (no {PROTOCOL_FILE} and {PLAN_FILE})"]}
    checked = check_seal(root, problems)
    proto, plan = _check_documents(root, problems)
    cells: dict[str, str | None] = {}
    result_sha = None
    if proto is not None:
        record = json_or_problem(root / PROVENANCE_FILE, problems, PROVENANCE_FILE) or {}
        context = {
            "planned": {c["cell"]: c for c in plan["cells"]},
            "source_tree": record.get("source_tree", {}).get("sha256"),
            "live_units": {check.get("unit") for check in record.get("live_checks", [])},
            "window_s": proto["window_s"],
        }
        failed = []
        for entry in read_cells(root):
            if entry.is_dir and entry.complete and entry.name in context["planned"]:
                if not isinstance(entry.result, dict):
                    problems.append(f"{CELLS_DIR}/{entry.name}/{RESULT_FILE}: {entry.read_error or 'not an object'}")
                    continue
                cells[entry.name] = _check_cell(root, entry.name, entry.result, context, problems)
                if cell_failed(entry.result):
                    failed.append(entry.name)
        report = json_or_problem(root / REPORT_FILE, problems, REPORT_FILE) or {}
        if sorted(report.get("cells_failed", [])) != sorted(failed):
            problems.append(f"{REPORT_FILE}: cells_failed {report.get('cells_failed')} != the failed cells {failed}")
        digests = _check_analysis(root, problems)
        result_sha = digest({"protocol_sha256": protocol.protocol_digest(proto), "cells": cells, "analysis": digests})
    return {"passed": not problems, "result_sha256": result_sha, "files_checked": checked,
            "cells_checked": len(cells), "problems": problems}


def sealed_with_failed_cells(path: str | Path) -> bool:
    root = Path(path)
    try:
        report = read_json(root / REPORT_FILE)
    except (FileNotFoundError, ValueError):
        return False
    return (root / SUMS).is_file() and bool(report.get("cells_failed"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcc_ulfm.experiment.study")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("new", help="create a new study directory under BASE and print it")
    p.add_argument("base")
    p.add_argument("protocol")
    p = sub.add_parser("verify", help="verify a sealed study: exit 0 pass, 1 fail")
    p.add_argument("dir")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("sealed-with-failed-cells", help="exit 0 when the study is sealed and names failed cells")
    p.add_argument("dir")
    args = parser.parse_args(argv)
    if args.command == "new":
        try:
            print(new_study_dir(args.base, args.protocol))
        except protocol.StudyProtocolError as exc:
            print(f"symcc-ulfm: {exc}", file=sys.stderr)
            return exc.exit_code
        return 0
    if args.command == "sealed-with-failed-cells":
        return 0 if sealed_with_failed_cells(args.dir) else 1
    result = verify_study(args.dir)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"verify: {'PASS' if result['passed'] else 'FAIL'}  files_checked={result['files_checked']}  "
              f"cells_checked={result['cells_checked']}  result_sha256={result['result_sha256']}")
        for problem in result["problems"]:
            print(f"problem: {problem}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
