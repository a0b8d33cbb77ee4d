"""One matrix cell: a campaign of one tier without injected failures, and its ``result.json``.

The campaign runs as ``launch`` runs one (:mod:`symcc_ulfm.launch.launcher`: one ``mpiexec``
job, the lease fitted unless the protocol's ``timeouts`` give it) with its state directory at
``cells/<block>-<tier>/state/``. Then
``result.json`` is written atomically and the empty ``COMPLETE`` marker last: a cell directory
without the marker never counts (:mod:`.selection`).

What is divided by what (``window_s`` is the protocol's window = the campaign deadline, counted
from generation 0 like every campaign deadline)::

    generated_per_s = oracle wal_generated / window_s    distinct candidates staged and verified, from the
                                                         done WAL manifests' objects (WAL format 5; the
                                                         worker's own count, duplicates included, before)
    unique_per_s    = oracle wal_unique / window_s       of those, new to the corpus by content
    novel_per_s     = oracle wal_novel / window_s        of those, adding coverage
    retention       = wal_unique / wal_generated         (null when nothing was generated)
    endpoint_edges  = oracle endpoint_edges              edges of the final corpus, re-measured after the job
    seconds         = outcome ended_at - started_at      the campaign as the ranks measured it
    first_finding_s = earliest finding time - started_at (null: no finding in the window)
    findings_unique = oracle findings_unique             distinct (kind, signature) pairs found

The cell is ``failed`` (``internal_failures = 1``) when the job did not exit 0, was killed for
overrunning its timeout, or the oracle did not pass; the reasons are kept in ``problems``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.modes import FileModes
from ..launch.job import JobResult
from ..launch.launcher import Mpiexec, plan
from ..store.atomic import write_new
from ..store.dirs import ensure_dir
from ..store.findings import read_findings
from ..store.paths import StateDir
from .jsonfile import DIR_MODE, FILE_MODE, read_json, write_json
from .protocol import cell_policy
from .selection import COMPLETE_MARKER, RESULT_FILE

STATE_DIR = "state"
COUNTS = ("analyzed", "generated", "unique", "novel")
BASIS = {
    "generated_per_s": "wal_generated / window_s",
    "unique_per_s": "wal_unique / window_s",
    "novel_per_s": "wal_novel / window_s",
    "retention": "wal_unique / wal_generated",
    "endpoint_edges": "oracle endpoint_edges (final corpus, re-measured)",
    "seconds": "outcome.json ended_at - started_at",
    "first_finding_s": "earliest finding time in the done manifests - generation 0 started_at",
    "findings_unique": "oracle findings_unique",
}


def first_finding_s(state: StateDir) -> float | None:
    """Seconds from the campaign's start to its first finding (None: nothing found)."""
    found = read_findings(state)
    if not found:
        return None
    started = read_json(state.snapshot(0))["started_at"]
    return round(min(f.first_time for f in found) - float(started), 3)


def campaign_seconds(state_dir: Path) -> float | None:
    """How long the campaign ran by its own outcome record, or ``None`` when it never ended."""
    try:
        outcome = read_json(StateDir(state_dir).outcome)
        return float(outcome["ended_at"]) - float(outcome["started_at"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def cell_failed(result: Any) -> bool:
    """A complete cell counts as failed unless its result is a well-formed ``ok`` with no internal failure."""
    return not isinstance(result, dict) or result.get("status") != "ok" or result.get("internal_failures") != 0


def job_problems(job: JobResult) -> list[str]:
    problems = []
    if job.timed_out:
        problems.append(f"job timed out after {job.seconds:.1f} s and was killed")
    if job.returncode != 0:
        problems.append(f"job exit {job.returncode} (a cell has no injected failure: only 0 is expected)")
    return problems


def measurements(window_s: float, verdict: dict[str, Any]) -> dict[str, Any]:
    """The metrics of a cell from the oracle's verdict (see the module docstring)."""
    counts = {name: verdict.get(f"wal_{name}") for name in COUNTS}

    def rate(name: str) -> float | None:
        return None if counts[name] is None else counts[name] / window_s

    generated, unique = counts["generated"], counts["unique"]
    return {
        "counts": counts,
        "generated_per_s": rate("generated"),
        "unique_per_s": rate("unique"),
        "novel_per_s": rate("novel"),
        "retention": unique / generated if generated and unique is not None else None,
        "endpoint_edges": verdict.get("endpoint_edges"),
    }


def run_cell(protocol: dict, planned: dict, cell_dir: Path, modes: FileModes, source_tree_sha256: str,
             echo: Callable[[str], None]) -> dict[str, Any]:
    """Run the planned cell into ``cell_dir`` (new) and return what ``result.json`` holds."""
    launch = plan(Mpiexec(echo=echo), modes, cell_policy(protocol, planned["tier"]),
                  lease_given="lease_s" in protocol["timeouts"])
    ensure_dir(cell_dir, DIR_MODE)
    state = launch.prepare(cell_dir / STATE_DIR)
    started = time.monotonic()
    campaign = launch.run()
    policy, job, verdict = campaign.policy, campaign.job, campaign.verdict
    problems = job_problems(job) + [f"oracle: {p}" for p in verdict["problems"]]
    result = {
        "block": planned["block"],
        "tier": planned["tier"],
        "order": planned["order"],
        "workers": planned["workers"],
        "masters": planned["masters"],
        "ranks": planned["ranks"],
        "status": "failed" if problems else "ok",
        "internal_failures": 1 if problems else 0,
        "problems": problems,
        **measurements(float(protocol["window_s"]), verdict),
        "seconds": campaign_seconds(state.root),
        "first_finding_s": first_finding_s(state),
        "findings_unique": verdict.get("findings_unique"),
        "window_s": protocol["window_s"],
        "basis": BASIS,
        "policy_sha256": policy.sha256,
        "source_tree_sha256": source_tree_sha256,
        "oracle_passed": verdict["passed"],
        "oracle_result_sha256": verdict.get("result_sha256"),
        "job_returncode": job.returncode,
        "job_timed_out": job.timed_out,
        "job_seconds": round(job.seconds, 3),
        "wall_s": round(time.monotonic() - started, 3),
        "command": job.command,
    }
    write_json(cell_dir / RESULT_FILE, result)
    write_new(cell_dir / COMPLETE_MARKER, b"", FILE_MODE)
    return result
