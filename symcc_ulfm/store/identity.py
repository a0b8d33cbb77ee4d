"""``executor.json``: the executor identities of a campaign, written once when it is prepared.

Every work hash is taken with an identity's SHA-256 (:func:`.record.work_hash`), so they are
fixed for the life of the state directory: ``launch`` takes them from contained executors
(target code never runs in ``launch``), ranks read them instead of building executors, and a
worker's executor must report the same identity before it runs anything. A resume whose
identities differ (the target changed) is refused.

A campaign whose worker slots are all of its executor (no ``worker_kinds``) has one identity
(format ``symcc-ulfm-executor/1``); one with other worker kinds also records the identity of
each of them, by kind (``symcc-ulfm-executor/2``): the executor's own work (an input, solved)
and a fuzzer's slices are told apart by the identity their records were taken with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.canonical import canonical_json, digest
from ..core.limits import MAX_SMALL_JSON_BYTES
from ..errors import IntegrityError, ProvenanceChanged
from .atomic import write_new
from .reads import read_bytes

IDENTITY_FORMAT = "symcc-ulfm-executor/1"
KINDS_FORMAT = "symcc-ulfm-executor/2"


def write_identity(path: Path, identity: dict[str, Any], mode: int, kinds: dict[str, dict[str, Any]] | None = None) -> str:
    """Write the executor's identity (and, by kind, those of the other worker kinds); its SHA-256."""
    sha256 = digest(identity)
    record: dict[str, Any] = {"format": IDENTITY_FORMAT, "identity": identity, "sha256": sha256}
    if kinds:
        record = {**record, "format": KINDS_FORMAT,
                  "kinds": {kind: {"identity": value, "sha256": digest(value)} for kind, value in kinds.items()}}
    if not write_new(path, canonical_json(record), mode):
        raise ProvenanceChanged(f"{path} exists already")
    return sha256


def _read(path: Path) -> dict[str, Any]:
    raw = read_bytes(path, limit=MAX_SMALL_JSON_BYTES)
    try:
        value = json.loads(raw)
        entries = [(value["identity"], value["sha256"])]
        if value["format"] == KINDS_FORMAT:
            entries += [(k["identity"], k["sha256"]) for k in value["kinds"].values()]
        ok = (value["format"] in (IDENTITY_FORMAT, KINDS_FORMAT) and canonical_json(value) == raw
              and all(digest(identity) == sha256 for identity, sha256 in entries))
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise IntegrityError(f"{path} is not a canonical executor identity record")
    return value


def read_identity(path: Path) -> tuple[dict[str, Any], str]:
    """The executor's identity and its SHA-256; a file that does not hold them consistently is an IntegrityError."""
    value = _read(path)
    return value["identity"], value["sha256"]


def kind_sha256(path: Path, kind: str | None) -> str:
    """The identity SHA-256 of worker kind ``kind`` (None: the executor's)."""
    value = _read(path)
    if kind is None:
        return value["sha256"]
    try:
        return value["kinds"][kind]["sha256"]
    except KeyError:
        raise IntegrityError(f"{path} records no identity of worker kind {kind!r}") from None


def require_same(path: Path, sha256: str, what: str, kind: str | None = None) -> None:
    """Refuse to run ``what`` (a resumed job, a worker's sandbox) with another executor identity."""
    recorded = kind_sha256(path, kind)
    if recorded != sha256:
        raise ProvenanceChanged(f"{what}: executor identity {sha256[:12]} differs from the campaign's "
                                f"{recorded[:12]} ({path}): the target or its options changed")
