"""Commit manifests: the one builder of what a ``committing`` WAL record holds.

A manifest names the lease it settles (generation, master, worker, shard, lease token, input
and work hash), the objects it publishes (SHA-256, length, whether it added coverage, the
coverage and the search hint), ``generated`` (derived from those objects, ``core.master.report``),
its findings, the worker's statistics as reported and the worker's error. A quarantine manifest
(``core.master.poison``) settles an input that killed its workers: no objects, one ``crash``
finding, and the strikes that condemned it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..envelope import Fence
from .frontier import Judged
from .poison import SIGNATURE, Strike, detail


def result_manifest(generation: int, master: int, worker: int, fence: Fence, judged: Sequence[Judged],
                    findings: list[dict], stats: dict, error: str | None) -> dict:
    """The manifest of a RESULT the master verified against ``fence``."""
    objects = [{"sha256": j.sha256, "length": j.length, "novel": j.novel, "coverage": list(j.coverage),
                "hint": j.hint} for j in judged]
    return _manifest(generation, master, worker, fence.shard, fence.lease, fence.input_hash, fence.work_hash,
                     objects, findings, stats, error)


def quarantine_manifest(generation: int, master: int, shard: str, token: str, input_hash: str, work_hash: str,
                        strikes: Sequence[Strike], now: float) -> dict:
    """The manifest that settles a poison input as a ``crash`` finding, leased to the master itself."""
    finding = {"kind": "crash", "signature": SIGNATURE, "detail": detail(list(strikes)), "sha256": input_hash,
               "time": now}
    manifest = _manifest(generation, master, master, shard, token, input_hash, work_hash, [], [finding], {}, None)
    manifest["quarantine"] = {"strikes": [s.to_json() for s in strikes]}
    return manifest


def _manifest(generation: int, master: int, worker: int, shard: str, lease: str, input_hash: str, work_hash: str,
              objects: list[dict], findings: list[dict], stats: dict, error: str | None) -> dict:
    return {
        "generation": generation, "master": master, "worker": worker, "shard": shard, "lease": lease,
        "input_hash": input_hash, "work_hash": work_hash, "objects": objects, "generated": len(objects),
        "findings": findings, "stats": stats, "error": error,
    }
