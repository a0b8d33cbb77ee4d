"""``executor.json``: the executor identity of a campaign, written once when it is prepared.

Every work hash is taken with this identity's SHA-256 (:func:`.record.work_hash`), so it is
fixed for the life of the state directory: ``launch`` takes it from a contained executor
(target code never runs in ``launch``), ranks read it instead of building the executor, and a
worker's sandbox must report the same identity before it runs anything. A resume whose
executor identity differs (the target changed) is refused.
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


def write_identity(path: Path, identity: dict[str, Any], mode: int) -> str:
    sha256 = digest(identity)
    if not write_new(path, canonical_json({"format": IDENTITY_FORMAT, "identity": identity, "sha256": sha256}), mode):
        raise ProvenanceChanged(f"{path} exists already")
    return sha256


def read_identity(path: Path) -> tuple[dict[str, Any], str]:
    """The identity and its SHA-256; a file that does not hold both consistently is an IntegrityError."""
    raw = read_bytes(path, limit=MAX_SMALL_JSON_BYTES)
    try:
        value = json.loads(raw)
        identity, sha256 = value["identity"], value["sha256"]
        ok = value["format"] == IDENTITY_FORMAT and digest(identity) == sha256 and canonical_json(value) == raw
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise IntegrityError(f"{path} is not a canonical executor identity record")
    return identity, sha256


def require_same(path: Path, sha256: str, what: str) -> None:
    """Refuse to run ``what`` (a resumed job, a worker's sandbox) with another executor identity."""
    _, recorded = read_identity(path)
    if recorded != sha256:
        raise ProvenanceChanged(f"{what}: executor identity {sha256[:12]} differs from the campaign's "
                                f"{recorded[:12]} ({path}): the target or its options changed")
