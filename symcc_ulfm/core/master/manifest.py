"""Commit manifests: the one builder of what a ``committing`` WAL record holds.

A manifest names the lease it settles (generation, master, worker and the worker's kind, shard,
lease token, input and work hash; for a fuzzer's slice its descriptor, ``core.slices``),
the objects it publishes (SHA-256, length, whether it added coverage, the coverage and the
search hint), the SHA-256s of the candidates it drops (``keep = novel``: staged, verified, adding
nothing), ``generated`` (objects plus dropped: derived from what was staged, ``core.master.report``),
its findings, the worker's statistics as reported and the worker's error; in edge order
(``core.master.branches``) the ids the run added to the campaign's record of tried branches
(``tried``, the worker's word: they only steer which branches are tried, never a count; written
only when there are some); a result's manifest also counts the edges it added (``new_edges``)
and names the mix decision that lent its worker. A quarantine manifest
(``core.master.poison``) settles an input that killed its workers: no objects, one ``crash``
finding, and the strikes that condemned it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..envelope import Fence
from .frontier import Judged
from .poison import SIGNATURE, Strike, detail


def result_manifest(generation: int, master: int, worker: int, kind: str, fence: Fence, kept: Sequence[Judged],
                    dropped: list[str], findings: list[dict], stats: dict, error: str | None,
                    slice_: dict | None = None, tried: Sequence[int] = (), new_edges: int = 0,
                    mix: dict | None = None) -> dict:
    """The manifest of a RESULT the master verified against ``fence``: ``new_edges``, the edges its
    kept objects added to the master's coverage, and ``mix``, the decision that lent the worker this
    slice (``core.master.mix``), where there is one."""
    objects = [{"sha256": j.sha256, "length": j.length, "novel": j.novel, "coverage": list(j.coverage),
                "hint": j.hint} for j in kept]
    manifest = _manifest(generation, master, worker, kind, fence.shard, fence.lease, fence.input_hash,
                         fence.work_hash, objects, dropped, findings, stats, error, slice_)
    if tried:
        manifest["tried"] = sorted(set(tried))
    manifest["new_edges"] = new_edges
    if mix is not None:
        manifest["mix"] = mix
    return manifest


def quarantine_manifest(generation: int, master: int, kind: str, shard: str, token: str, input_hash: str,
                        work_hash: str, strikes: Sequence[Strike], now: float) -> dict:
    """The manifest that settles a poison input as a ``crash`` finding, leased to the master itself
    (``kind``: of the work it settles)."""
    finding = {"kind": "crash", "signature": SIGNATURE, "detail": detail(list(strikes)), "sha256": input_hash,
               "time": now}
    manifest = _manifest(generation, master, master, kind, shard, token, input_hash, work_hash, [], [], [finding],
                         {}, None, None)
    manifest["quarantine"] = {"strikes": [s.to_json() for s in strikes]}
    return manifest


def _manifest(generation: int, master: int, worker: int, kind: str, shard: str, lease: str, input_hash: str,
              work_hash: str, objects: list[dict], dropped: list[str], findings: list[dict], stats: dict,
              error: str | None, slice_: dict | None) -> dict:
    return {
        "generation": generation, "master": master, "worker": worker, "kind": kind, "shard": shard, "lease": lease,
        "input_hash": input_hash, "work_hash": work_hash, "objects": objects, "dropped": sorted(dropped),
        "generated": len(objects) + len(dropped), "findings": findings, "stats": stats, "error": error,
        "slice": slice_,
    }
