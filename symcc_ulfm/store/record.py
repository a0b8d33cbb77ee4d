"""A WAL record's bytes: one canonical, checksummed JSON line per state, and their checks.

The file format of ``wal/records/<work_hash>.json`` (see :mod:`.wal` for what the states
mean and who writes them): every line is the whole record in one state, canonical JSON whose
``checksum`` is the SHA-256 of the canonical body; the record is the last complete line. Bytes
after the last newline are an append a crash cut short (never durable) and are not a state.
"""

from __future__ import annotations

import json
from typing import Any

from ..core import finding
from ..core.canonical import canonical_json, digest, is_sha256_hex, sha256_hex
from ..core.slices import is_descriptor, slice_hash
from ..errors import FenceError, WalCorruption
from .staging import parse_staged

WAL_FORMAT = "symcc-ulfm-wal/6"
_OLD_FORMATS = {
    "symcc-ulfm-wal/1": "one state per file, replaced by rename",
    "symcc-ulfm-wal/2": "staged objects in a directory per lease",
    "symcc-ulfm-wal/3": "manifests without findings",
    "symcc-ulfm-wal/4": "'generated' as the worker reported it",
    "symcc-ulfm-wal/5": "manifests without worker kinds, slices or dropped candidates",
}
STATES = ("leased", "committing", "done")
_NEXT = {"leased": {"leased", "committing"}, "committing": {"done"}, "done": set()}
_CHECKSUM_PREFIX = b'{"checksum":"'
_LEASE_KEYS = {"generation", "master", "shard", "token", "worker"}
_RECORD_KEYS = {
    "format", "work_hash", "input_hash", "executor_sha256", "state", "lease", "history", "manifest", "done", "checksum",
}


def work_hash(input_hash: str, executor_sha256: str) -> str:
    """The work identity: which input, run by which executor identity."""
    return digest({"input_hash": input_hash, "executor_sha256": executor_sha256})


def manifest_objects(record: dict) -> list[dict]:
    return record["manifest"]["objects"] if record.get("manifest") else []


def record_lines(data: bytes) -> list[bytes]:
    """The complete lines of a record file (without the bytes after the last newline)."""
    lines = data.split(b"\n")
    lines.pop()  # after the final newline: b"", or a torn append that never became durable
    return lines


def encode_record(record: dict) -> bytes:
    """One state as a record line; sets ``record["checksum"]``."""
    body = canonical_json({k: v for k, v in record.items() if k != "checksum"})
    record["checksum"] = sha256_hex(body)
    # "checksum" sorts before every other key, so the canonical record is the body with it in front
    return _CHECKSUM_PREFIX + record["checksum"].encode() + b'",' + body[1:] + b"\n"


def canonical_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """Objects sorted by SHA-256 and deduplicated: equal manifests have equal bytes."""
    unique = {obj["sha256"]: obj for obj in manifest["objects"]}
    return {**manifest, "objects": [unique[k] for k in sorted(unique)]}


def parse_record_file(data: bytes, expected_work: str | None = None) -> dict:
    """The record a record file holds: its last complete line, every line checked, and each
    line a transition the previous one allows. A torn last line is ignored (see the module
    docstring); a file without one complete line raises WalCorruption."""
    lines = record_lines(data)
    if not lines:
        raise WalCorruption(f"WAL record {expected_work} holds no complete line (torn or partial){_old_format(data)}")
    record = None
    for number, line in enumerate(lines, 1):
        state = parse_record(line, expected_work)
        if record is not None and state["state"] not in _NEXT[record["state"]]:
            raise WalCorruption(f"WAL record {expected_work}: line {number} goes {record['state']} -> {state['state']}")
        if record is not None and state["work_hash"] != record["work_hash"]:
            raise WalCorruption(f"WAL record {expected_work}: line {number} is another work's record")
        record = state
    return record


def _old_format(line: bytes) -> str:
    """A hint naming the older format a record line was written in ("" when it is none of them)."""
    try:
        old = json.loads(line.decode("ascii")).get("format")
    except (UnicodeDecodeError, ValueError, AttributeError):
        return ""
    return f" (format {old}: {_OLD_FORMATS[old]}; written by an older symcc_ulfm)" if old in _OLD_FORMATS else ""


def parse_record(data: bytes, expected_work: str | None = None) -> dict:
    """Parse and verify one record line; anything torn, partial or edited raises WalCorruption.

    The checksum is taken over the line's own bytes (the canonical body, see ``_write``), so a
    record is checked without being encoded again.
    """
    line = data[:-1] if data.endswith(b"\n") else data
    try:
        record = json.loads(line.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise WalCorruption(f"WAL record {expected_work} is not valid JSON (torn or partial)") from None
    if isinstance(record, dict) and record.get("format") in _OLD_FORMATS:
        raise WalCorruption(f"WAL record {expected_work} is not of format {WAL_FORMAT}{_old_format(line)}")
    if not isinstance(record, dict) or set(record) != _RECORD_KEYS or record.get("format") != WAL_FORMAT:
        raise WalCorruption(f"WAL record {expected_work} does not have the WAL record fields")
    head = len(_CHECKSUM_PREFIX) + 64
    if (
        not isinstance(record["checksum"], str)
        or line[:head] != _CHECKSUM_PREFIX + record["checksum"].encode("ascii", "replace")
        or line[head : head + 2] != b'",'
        or record["checksum"] != sha256_hex(b"{" + line[head + 2 :])
    ):
        raise WalCorruption(f"WAL record {expected_work} fails its checksum")
    if expected_work is not None and record["work_hash"] != expected_work:
        raise WalCorruption(f"WAL record file {expected_work} holds work {record['work_hash']}")
    if record["work_hash"] != work_hash(record["input_hash"], record["executor_sha256"]):
        raise WalCorruption(f"WAL record {expected_work}: work hash does not match its input and executor")
    state = record["state"]
    if state not in STATES:
        raise WalCorruption(f"WAL record {expected_work}: unknown state {state!r}")
    if (state == "leased") != (record["manifest"] is None) or (state == "done") != (record["done"] is not None):
        raise WalCorruption(f"WAL record {expected_work}: state {state} does not match its fields")
    check_lease(record["lease"], WalCorruption)
    if record["manifest"] is not None:
        check_manifest(record["manifest"], WalCorruption)
    return record


def check_lease(lease: Any, error: type[Exception] = FenceError) -> None:
    if not isinstance(lease, dict) or set(lease) != _LEASE_KEYS:
        raise error(f"lease {lease!r} does not have fields {sorted(_LEASE_KEYS)}")
    for key in ("generation", "master", "worker"):
        if type(lease[key]) is not int or lease[key] < 0:
            raise error(f"lease {key} {lease[key]!r} is not a non-negative integer")


def check_manifest(manifest: Any, error: type[Exception] = FenceError) -> None:
    if not isinstance(manifest, dict) or not isinstance(manifest.get("objects"), list):
        raise error("manifest has no object list")
    for obj in manifest["objects"]:
        if not isinstance(obj, dict) or not is_sha256_hex(obj.get("sha256")):
            raise error(f"manifest object {obj!r} has no SHA-256")
        if type(obj.get("length")) is not int or obj["length"] < 0:
            raise error(f"manifest object {obj['sha256']} has no valid length")
        try:
            staged_sha = parse_staged(obj.get("staging"))[2]
        except Exception as exc:
            raise error(f"manifest object {obj['sha256']}: {exc}") from None
        if staged_sha != obj["sha256"]:
            raise error(f"manifest object {obj['sha256']} is staged under another name")
    dropped = manifest.get("dropped")
    if not isinstance(dropped, list) or not all(map(is_sha256_hex, dropped)) or len(set(dropped)) != len(dropped):
        raise error("manifest 'dropped' is not a list of distinct SHA-256s")
    published = {obj["sha256"] for obj in manifest["objects"]}
    if published & set(dropped):
        raise error("a manifest object is also listed as dropped")
    if type(manifest.get("generated")) is not int or manifest["generated"] != len(published) + len(dropped):
        raise error("manifest 'generated' must be the number of its objects plus those dropped "
                    "(the candidates staged and verified)")
    if not isinstance(manifest.get("kind"), str) or not manifest["kind"]:
        raise error("manifest has no worker kind")
    sliced = manifest.get("slice", False)
    if sliced is not None and not (is_descriptor(sliced) and slice_hash(sliced) == manifest.get("input_hash")):
        raise error("manifest 'slice' is neither null nor the descriptor whose SHA-256 is its input")
    findings = manifest.get("findings")
    if not isinstance(findings, list) or not all(map(finding.is_record, findings)):
        raise error("manifest findings are not a list of finding records")
    published |= {manifest.get("input_hash")}
    for item in findings:
        if item["sha256"] not in published:
            raise error(f"finding {item['kind']} names input {item['sha256']}, neither an object nor the input")
