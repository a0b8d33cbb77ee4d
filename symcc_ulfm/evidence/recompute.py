"""A second, separate computation of a run's canonical summary and ``result_sha256``.

Written apart from :mod:`symcc_ulfm.evidence.oracle.judge` and importing nothing from it, the
runtime's core or the store: it takes masters and workers from the final layout *file* (the
oracle derives them from the layout rule), walks the receipt chain by its digests, counts the
WAL from the done records and the corpus from the directory, and runs its own smaller set of
checks to decide ``passed``. When both implementations read the same files the same way, they
print the same ``result_sha256``; a disagreement means one of them (or the run) is wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..errors import UnsafeFile

_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_LIMIT = 64 << 20  # any one file this verifier reads (the runtime writes none larger)
# formats whose 'generated' is the worker's own count; from symcc-ulfm-wal/5 on it is the objects staged
_WORKER_COUNTED = ("symcc-ulfm-wal/1", "symcc-ulfm-wal/2", "symcc-ulfm-wal/3", "symcc-ulfm-wal/4")


def _canonical_bytes(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes:
    """A regular file's bytes, opened without following a link or blocking on a FIFO, at most
    ``_LIMIT`` of them; anything else is refused before it is read (UnsafeFile, exit 4)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnsafeFile(f"{path}: not readable as a regular file ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _LIMIT:
            raise UnsafeFile(f"{path}: not a regular file of at most {_LIMIT} bytes; refusing to read it")
        data = b""
        while len(data) <= _LIMIT and (chunk := os.read(fd, _LIMIT + 1 - len(data))):
            data += chunk
        if len(data) > _LIMIT:
            raise UnsafeFile(f"{path}: grew past {_LIMIT} bytes while read")
        return data
    finally:
        os.close(fd)


def _object(raw: bytes, name: str) -> Any:
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"{name}: nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"{name}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name}: not a JSON object")
    return value


def _load(path: Path) -> tuple[Any, bytes]:
    raw = _read(path)
    return _object(raw, path.name), raw


def _victims(schedule: str) -> list[tuple[int, int]]:
    """(generation, rank) of each ``G:R[@PHASE][!]`` event."""
    out = []
    for item in schedule.split(","):
        item = item.strip()
        if item:
            head = item.split("@")[0].rstrip("!")
            generation, rank = head.split(":")
            out.append((int(generation), int(rank)))
    return out


def recompute(state: Path) -> dict[str, Any]:
    """``{"summary", "result_sha256", "problems"}`` of the state directory ``state``."""
    problems: list[str] = []
    policy_raw = _read(state / "policy.json")
    policy = _object(policy_raw, "policy.json")
    membership = state / "membership"

    # membership: follow generation 0 and each receipt whose previous_sha256 chains to it
    snapshot, snapshot_raw = _load(membership / "generation-0-snapshot.json")
    receipts = []
    generation = 0
    while (membership / f"receipt-{generation + 1}.json").exists():
        receipt, _ = _load(membership / f"receipt-{generation + 1}.json")
        if receipt.get("previous_sha256") != _hex(snapshot_raw):
            problems.append(f"receipt-{generation + 1}.json does not chain to generation {generation}")
        snapshot, snapshot_raw = _load(membership / f"generation-{generation + 1}-snapshot.json")
        if receipt.get("snapshot_sha256") != _hex(snapshot_raw):
            problems.append(f"receipt-{generation + 1}.json names another snapshot")
        receipts.append(receipt)
        generation += 1
    layout, layout_raw = _load(membership / f"generation-{generation}-layout.json")
    if _hex(layout_raw) != snapshot.get("layout_sha256"):
        problems.append(f"generation-{generation}-layout.json is not the layout of the final snapshot")
    masters = [group["master"] for group in layout["groups"]]
    workers = [w for group in layout["groups"] for w in group["workers"]]

    resumed = {r["generation"] for r in receipts if r.get("kind") == "resume"}
    for g, rank in _victims(policy["failure_schedule"]):
        # a generation that ended with the whole job lost (a resume receipt follows) never reached its failure
        if g + 1 not in resumed and not any(r["generation"] > g and rank in r["missing"] for r in receipts):
            problems.append(f"scheduled victim {g}:{rank} is missing from every receipt")
    live = set(snapshot["active"]) | set(snapshot["spares"])
    host_names = {snapshot["hosts"][r] for r in live} if snapshot["hosts"] else set()
    if len(host_names) < policy["minimum_hosts"]:
        problems.append(f"only {len(host_names)} hosts survive; the policy needs {policy['minimum_hosts']}")

    # WAL: done records only, each checked against its own checksum
    analyzed = generated = novel = slices = 0
    kinds_format = False  # since symcc-ulfm-wal/6: worker kinds, fuzzer slices, dropped candidates
    by_kind: dict[str, dict[str, Any]] = {}
    counted: dict[str, str] = {}
    committing: set[str] = set()  # objects of records not done yet (a master that died publishing)
    found: set[tuple[str, str, str]] = set()  # (kind, signature, input) of every finding
    for path in sorted((state / "wal" / "records").glob("*.json")):
        # one line per state; the record is the last complete line (after it: nothing, or a torn
        # append); a record of the first format (symcc-ulfm-wal/1) is one state without a newline
        raw = _read(path)
        lines = [raw] if b"\n" not in raw and b'"format":"symcc-ulfm-wal/1"' in raw else raw.split(b"\n")[:-1]
        if not lines:
            problems.append(f"wal/records/{path.name}: no complete line")
            continue
        for line in lines:
            record = _object(line, f"wal/records/{path.name}")
            body = {k: v for k, v in record.items() if k != "checksum"}
            if record.get("checksum") != _hex(_canonical_bytes(body)):
                problems.append(f"wal/records/{path.name}: checksum does not match its body")
        if record.get("state") == "committing":
            committing |= {obj["sha256"] for obj in record["manifest"]["objects"]}
        if record.get("state") != "done":
            continue
        manifest = record["manifest"]
        newer = record["format"] == "symcc-ulfm-wal/6"
        kinds_format |= newer
        sliced = newer and manifest["slice"] is not None
        slices += sliced
        analyzed += not sliced
        generated += manifest["generated"]
        distinct = len({obj["sha256"] for obj in manifest["objects"]}) + (len(manifest["dropped"]) if newer else 0)
        if record["format"] not in _WORKER_COUNTED and manifest["generated"] != distinct:
            problems.append(f"wal/records/{path.name}: generated is not the number of its objects (and dropped)")
        mine = {(f["kind"], f["signature"], f["sha256"]) for f in manifest.get("findings", [])}
        found |= mine
        claimed = set(record["done"]["claimed"])
        fresh = sum(1 for obj in manifest["objects"] if obj["sha256"] in claimed and obj["novel"])
        novel += fresh
        if newer:
            row = by_kind.setdefault(manifest["kind"], {"inputs": 0, "novel": 0, "found": set(), "works": 0})
            row["inputs"] += len(claimed)
            row["novel"] += fresh
            row["found"] |= mine
            row["works"] += 1
        for name in claimed:
            if name in counted:
                problems.append(f"object {name} is counted by {counted[name]} and {path.stem}")
            counted[name] = path.stem

    # corpus: every object is named by the SHA-256 of its bytes
    objects = state / "corpus" / "objects"
    names = sorted(p.name for p in objects.iterdir() if not p.name.startswith("."))
    for name in names:
        if not _HEX64.match(name) or _hex(_read(objects / name)) != name:
            problems.append(f"corpus/objects/{name}: the name is not the SHA-256 of the content")
    lost = sorted(set(counted) - set(names))
    if lost:
        problems.append(f"{len(lost)} counted objects are not in the corpus, e.g. {lost[0]}")
    seed_dir = state / "seeds"
    if seed_dir.is_dir() or kinds_format:  # since seed records exist, every object is accounted for
        seeds = set()
        for path in sorted(seed_dir.glob("seeds-*.json")) if seed_dir.is_dir() else []:
            seeds |= {item["sha256"] for item in _object(_read(path), f"seeds/{path.name}")["seeds"]}
        for name in sorted(set(names) - set(counted) - seeds - committing):
            problems.append(f"corpus/objects/{name}: neither a seed record nor a done record accounts for it")

    outcome_path, endpoint_path = state / "outcome.json", state / "endpoint.json"
    outcome = _object(_read(outcome_path), "outcome.json") if outcome_path.exists() else {}
    endpoint = _object(_read(endpoint_path), "endpoint.json") if endpoint_path.exists() else {}
    if outcome.get("status") not in ("deadline-reached", "exhausted", "budget-reached"):
        problems.append(f"the campaign outcome is {outcome.get('status')!r}")
    summary = {
        "policy_sha256": _hex(policy_raw),
        "final_generation": generation,
        "receipts": [{"generation": r["generation"], "missing": r["missing"]} for r in receipts],
        "promoted": [rank for r in receipts for rank in r["promoted"]],
        "final_active": snapshot["active"],
        "masters": masters,
        "workers": workers,
        "surviving_hosts": len(host_names),
        "wal_analyzed": analyzed,
        "wal_generated": generated,
        "wal_unique": len(counted),
        "wal_novel": novel,
        "public_objects": len(names),
        "corpus_sha256": _hex("\n".join(names).encode()),
        "endpoint_edges": endpoint.get("edges"),
        "findings_unique": len({(kind, signature) for kind, signature, _ in found}),
        "findings_hits": len(found),
        "passed": not problems,
    }
    if kinds_format:
        summary["wal_slices"] = slices
        summary["attribution"] = {kind: {"inputs": row["inputs"], "novel": row["novel"], "findings": len(row["found"]),
                                         "works": row["works"]} for kind, row in sorted(by_kind.items())}
    return {"summary": summary, "result_sha256": _hex(_canonical_bytes(summary)), "problems": problems}
