"""``symcc-ulfm matrix PROTOCOL --out DIR [--resume]``: run a preregistered scaling matrix (DESIGN.md §10).

The matrix directory (cells in the format of :mod:`.selection`)::

    protocol.json        the normalised protocol as canonical JSON: its SHA-256 is the protocol digest
    plan.json            the randomised run order (:func:`.protocol.plan`), canonical JSON
    provenance.json      captured once when the matrix starts (the sealed provenance), plus one
                         live check per cell (``unit: cell <block>-<tier>``)
    cells/<block>-<tier>/               state/, result.json, COMPLETE (:mod:`.cell`)
    cells/.incomplete/<block>-<tier>-<k>/   a cell directory found without COMPLETE on --resume
    selection.json, analysis/           :func:`.analysis.analyze`, after the last cell
    report.json          where the matrix stands and what this invocation did

In this order: the protocol is validated and its target resolved, so that a bad protocol or an
explicit target matching nothing exits 2 before anything is written; ``protocol.json``,
``plan.json`` and ``provenance.json`` are written (on ``--resume`` they must match: the same
protocol continues the same plan under the same provenance); then the cells run in plan order.
Before each cell the provenance is re-verified live (a change raises ``ProvenanceChanged``,
exit 6, after writing the report; finished cells are kept) and the stop rule is checked: once
the complete cells reach ``max_cells``, or their summed wall time ``max_seconds``, no further
cell starts. Complete cells are never rerun; an incomplete cell directory is moved aside, not
deleted, and its cell runs again. After the last cell the analysis and ``report.json`` are
written; then, if any complete cell failed internally, ``MatrixCellsFailed`` (exit 3).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.canonical import canonical_json, digest
from ..core.modes import modes_from_env
from ..errors import ConfigError, MatrixCellsFailed, ProvenanceChanged
from ..evidence import provenance
from ..launch.prepare import check_executor
from ..store.dirs import ensure_dir
from . import protocol as protocols
from .analysis import analyze
from .cell import cell_failed, run_cell
from .jsonfile import DIR_MODE, read_json, write_json, write_or_match
from .selection import CELLS_DIR, COMPLETE_MARKER, PROTOCOL_FILE, RESULT_FILE

PLAN_FILE = "plan.json"
PROVENANCE_FILE = "provenance.json"
REPORT_FILE = "report.json"
INCOMPLETE_DIR = ".incomplete"
REPORT_FORMAT = "symcc-ulfm-scale-report/1"
MATRIX_FILES = (PROTOCOL_FILE, PLAN_FILE, PROVENANCE_FILE, CELLS_DIR, REPORT_FILE)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def open_matrix(out: Path, protocol: dict, plan: dict, resume: bool) -> dict:
    """Create the matrix directory (or check it on resume); returns the sealed provenance record."""
    present = [name for name in MATRIX_FILES if (out / name).exists()]
    if present and not resume:
        raise ConfigError("--out", f"{out} already holds a matrix ({', '.join(present)}); "
                          "use --resume to continue it, or a new directory")
    if resume and PROTOCOL_FILE not in present:
        raise ConfigError("--resume", f"{out} holds no matrix to resume")
    ensure_dir(out, DIR_MODE)
    write_or_match(out / PROTOCOL_FILE, protocols.protocol_bytes(protocol), "protocol", "matrix")
    write_or_match(out / PLAN_FILE, canonical_json(plan), PLAN_FILE, "matrix")
    path = out / PROVENANCE_FILE
    if path.exists():
        record = read_json(path)
    elif (out / CELLS_DIR).exists():
        raise ConfigError(PROVENANCE_FILE, f"{path} is missing but cells exist: their provenance cannot be shown")
    else:
        record = provenance.capture(protocol["executor"], protocol["target"], protocol["executor_options"])
        record["protocol_sha256"] = plan["protocol_sha256"]
        write_json(path, record)
    if record.get("protocol_sha256") != plan["protocol_sha256"]:
        raise ConfigError(PROVENANCE_FILE, "recorded for another protocol")
    ensure_dir(out / CELLS_DIR, DIR_MODE)
    return record


def complete_results(out: Path, plan: dict) -> dict[str, Any]:
    """The ``result.json`` (parsed, or ``None`` if unreadable) of every planned cell marked COMPLETE."""
    done = {}
    for cell in plan["cells"]:
        directory = out / CELLS_DIR / cell["cell"]
        if (directory / COMPLETE_MARKER).is_file():
            try:
                done[cell["cell"]] = read_json(directory / RESULT_FILE)
            except (FileNotFoundError, ValueError):
                done[cell["cell"]] = None
    return done


def stop_reason(rule: dict, done: dict[str, Any]) -> str | None:
    """Why the stop rule forbids starting another cell, or ``None``."""
    if "max_cells" in rule and len(done) >= rule["max_cells"]:
        return f"stop_rule max_cells={rule['max_cells']} reached: {len(done)} cells complete"
    seconds = sum(r.get("wall_s", 0) for r in done.values() if isinstance(r, dict))
    if "max_seconds" in rule and seconds >= rule["max_seconds"]:
        return f"stop_rule max_seconds={rule['max_seconds']} reached: the complete cells took {seconds:.1f} s"
    return None


def move_aside(cell_dir: Path) -> str:
    """Move an incomplete cell directory to ``cells/.incomplete/<name>-<k>``; returns that path relative to cells/."""
    aside = ensure_dir(cell_dir.parent / INCOMPLETE_DIR, DIR_MODE)
    k = 1
    while (aside / f"{cell_dir.name}-{k}").exists():
        k += 1
    target = aside / f"{cell_dir.name}-{k}"
    os.rename(cell_dir, target)
    return target.relative_to(cell_dir.parent).as_posix()


def _describe(result: dict) -> str:
    if result["status"] != "ok":
        return "  FAILED: " + "; ".join(result["problems"])
    return (f"  ok: generated {result['generated_per_s']:.1f}/s, unique {result['unique_per_s']:.1f}/s, "
            f"novel {result['novel_per_s']:.2f}/s, retention {100 * (result['retention'] or 0):.1f}%, "
            f"endpoint edges {result['endpoint_edges']} ({result['wall_s']:.1f} s)")


def build_report(out: Path, plan: dict, record: dict, done: dict, actions: dict, stop: str | None,
                 analysis: dict | None) -> dict:
    planned = [c["cell"] for c in plan["cells"]]
    failed = [name for name in planned if name in done and cell_failed(done[name])]
    not_run = [name for name in planned if name not in done]
    report = {
        "format": REPORT_FORMAT,
        "protocol_sha256": plan["protocol_sha256"],
        "plan_sha256": digest(plan),
        "source_tree_sha256": record["source_tree"]["sha256"],
        "cells_planned": len(planned),
        "cells_complete": [name for name in planned if name in done],
        "cells_failed": failed,
        "cells_not_run": not_run,
        **actions,
        "complete": not not_run,
        "stopped_early": stop is not None,
        "stop_reason": stop,
        "oversubscribed_tiers": sorted({c["tier"] for c in plan["cells"] if c["oversubscribed"]}),
        "analysis": None,
    }
    if analysis is not None:
        models = analysis["models"]
        report["analysis"] = {
            "performance_blocks": analysis["selection"]["performance_blocks"],
            "reliability_blocks": analysis["selection"]["reliability_blocks"],
            "ceiling": models["ceiling"]["ceiling"],
            "ceiling_used": models["ceiling"]["used"],
            "refusals": models["refusals"],
        }
    summary = (f"{len(done)}/{len(planned)} cells complete ({len(actions['cells_run'])} run now, "
               f"{len(actions['cells_skipped'])} already complete), {len(failed)} failed internally")
    if stop:
        summary += f"; stopped early: {stop}"
    if report["analysis"]:
        summary += (f"; ceiling {report['analysis']['ceiling']} (from {', '.join(report['analysis']['ceiling_used'])})"
                    f"; {len(report['analysis']['refusals'])} refusals recorded")
    report["summary"] = summary
    write_json(out / REPORT_FILE, report)
    return report


def run_matrix(protocol_path: str | Path, out_dir: str | Path, resume: bool = False,
               echo: Callable[[str], None] | None = None,
               on_cell: Callable[[dict], None] | None = None) -> dict:
    """Run (or continue) the matrix; returns the report. See the module docstring for the order of events."""
    echo = echo or _stderr
    protocol = protocols.load(protocol_path)
    check_executor(protocols.cell_policy(protocol, protocol["tiers"][0]))
    modes = modes_from_env(os.environ)
    out = Path(out_dir).absolute()
    plan = protocols.plan(protocol)
    record = open_matrix(out, protocol, plan, resume)
    done = complete_results(out, plan)
    actions = {"started_at": _utc(), "cells_run": [], "cells_skipped": sorted(done), "cells_moved_aside": []}
    echo(f"matrix {out}: protocol {plan['protocol_sha256'][:12]}, {len(plan['cells'])} cells planned, "
         f"{len(done)} already complete")
    stop = None
    try:
        for planned in plan["cells"]:
            name = planned["cell"]
            if name in done:
                continue
            stop = stop_reason(protocol["stop_rule"], done)
            if stop:
                echo(f"stopping early: {stop}")
                break
            provenance.verify_live(record, unit=f"cell {name}")
            write_json(out / PROVENANCE_FILE, record)
            cell_dir = out / CELLS_DIR / name
            if os.path.lexists(cell_dir):
                actions["cells_moved_aside"].append(moved := move_aside(cell_dir))
                echo(f"cell {name} was incomplete: moved aside to cells/{moved}")
            echo(f"[{planned['order'] + 1}/{len(plan['cells'])}] cell {name}: {planned['workers']} workers, "
                 f"{planned['masters']} masters, {planned['ranks']} ranks"
                 + (f" (oversubscribed: {protocol['cores']} cores)" if planned["oversubscribed"] else ""))
            result = run_cell(protocol, planned, cell_dir, modes, record["source_tree"]["sha256"], echo)
            done[name] = result
            actions["cells_run"].append(name)
            echo(_describe(result))
            if on_cell:
                on_cell(result)
    except ProvenanceChanged as exc:
        actions["finished_at"] = _utc()
        build_report(out, plan, record, done, actions, f"provenance changed: {exc}", None)
        raise
    actions["finished_at"] = _utc()
    report = build_report(out, plan, record, done, actions, stop, analyze(out))
    if report["cells_failed"]:
        raise MatrixCellsFailed(f"{len(report['cells_failed'])} cell(s) failed internally "
                                f"({', '.join(report['cells_failed'])}); report: {out / REPORT_FILE}")
    return report
