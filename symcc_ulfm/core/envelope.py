"""Wire messages: plain, versioned, size-limited JSON bytes; never pickle.

``decode`` checks size, encoding, version, type and every field's type before anything is
acted on; a malformed message raises :class:`ProtocolError` and is logged by the caller.
Fence checks compare a message with the lease the master persisted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import FenceError, ProtocolError, StaleGeneration
from . import finding
from .canonical import canonical_json, is_sha256_hex
from .limits import MAX_OBJECT_BYTES

VERSION = 1
MAX_COVERAGE_IDS = 1 << 20
MAX_TEXT = 4096  # characters of a string field (a RESULT's error, a STOP's reason)
MAX_TRIED_IDS = 8192  # ids of the branch record (core.master.branches) one message carries


def _int(v: Any) -> bool:
    return type(v) is int and 0 <= v < 2**63


def _bool(v: Any) -> bool:
    return type(v) is bool


def _float(v: Any) -> bool:
    return type(v) in (int, float) and v == v and abs(v) < 1e18


def _str(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= MAX_TEXT


def _opt_str(v: Any) -> bool:
    return v is None or _str(v)


def _token(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 128 and all(c.isalnum() or c in "-_.:" for c in v)


def is_coverage(v: Any) -> bool:
    """Coverage ids (``core.coverage``). type() per element, then one min and max: a RESULT
    carries thousands of ids."""
    return isinstance(v, list) and len(v) <= MAX_COVERAGE_IDS and (
        not v or (set(map(type, v)) == {int} and min(v) >= 0 and max(v) < 2**63))


def is_hint(v: Any) -> bool:
    """Executor search state for one input: a small flat object of scalars (or null); numbers
    finite, as canonical JSON writes only those."""
    return v is None or (
        isinstance(v, dict)
        and len(v) <= 16
        and all(
            isinstance(k, str) and len(k) <= 64
            and (type(x) in (int, bool) or (type(x) is float and math.isfinite(x))
                 or (isinstance(x, str) and len(x) <= 256))
            for k, x in v.items()
        )
    )


def is_tried(v: Any) -> bool:
    """Ids of the campaign's branch record (``core.master.branches``): at most
    :data:`MAX_TRIED_IDS`, each as a coverage id is."""
    return isinstance(v, list) and len(v) <= MAX_TRIED_IDS and is_coverage(v)


def _candidates(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(c, dict)
        and set(c) == {"sha256", "length", "coverage", "hint"}
        and is_sha256_hex(c["sha256"])
        and _int(c["length"])
        and c["length"] <= MAX_OBJECT_BYTES
        and is_coverage(c["coverage"])
        and is_hint(c["hint"])
        for c in v
    )


def _findings(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= finding.MAX_PER_RESULT and all(map(finding.is_report, v))


def _stats(v: Any) -> bool:
    return isinstance(v, dict) and all(_str(k) and _float(x) for k, x in v.items())


def _tokens(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= 64 and all(map(_token, v))


_ITEM = {"input_hash", "priority", "hint", "length"}


def _items(v: Any) -> bool:
    """Inputs a master hands to their owner; with their coverage when the campaign chooses by
    uncovered edges (``core.master.frontier``)."""
    return isinstance(v, list) and all(
        isinstance(i, dict)
        and (set(i) == _ITEM or (set(i) == _ITEM | {"coverage"} and is_coverage(i["coverage"])))
        and is_sha256_hex(i["input_hash"])
        and _int(i["priority"])
        and _int(i["length"])
        and is_hint(i["hint"])
        for i in v
    )


_FENCE = {"generation": _int, "shard": _token, "lease": _token, "work_hash": is_sha256_hex, "input_hash": is_sha256_hex}
SCHEMAS: dict[str, dict[str, Callable[[Any], bool]]] = {
    "READY": {"generation": _int, "worker": _int},
    "WORK": {**_FENCE, "worker": _int, "hint": is_hint},
    "RESULT": {**_FENCE, "worker": _int, "candidates": _candidates, "findings": _findings, "stats": _stats,
               "error": _opt_str},
    # a worker past the deadline hands back the leases it has not started (core.master.machine)
    "RETURN": {"generation": _int, "worker": _int, "leases": _tokens},
    "FRONTIER": {"generation": _int, "master": _int, "items": _items, "coverage": is_coverage},
    "STOP": {"generation": _int, "reason": _str},
    "PROBE": {"generation": _int, "master": _int, "wave": _int},
    "STATUS": {"generation": _int, "master": _int, "wave": _int, "idle": _bool, "sent": _int, "received": _int,
               "satisfied": _bool},
    # the coordinator's decision (core.master.termination): "exhausted" or "budget"
    "EXHAUSTED": {"generation": _int, "master": _int, "reason": _str},
}
# Fields added after version 1, lists that a message leaves out when empty (``encode`` does; a reader
# takes a missing one as []): the branch record (core.master.branches) handed down with a WORK,
# reported up in a RESULT, and shared with the analyzed edges in a FRONTIER.
OPTIONAL: dict[str, dict[str, Callable[[Any], bool]]] = {
    "WORK": {"tried": is_tried},
    "RESULT": {"tried": is_tried},
    "FRONTIER": {"tried": is_tried, "analyzed": is_coverage},
}


def encode(kind: str, limit: int, **fields: Any) -> bytes:
    optional = OPTIONAL.get(kind, {})
    message = {"v": VERSION, "type": kind, **{k: v for k, v in fields.items() if k not in optional or v}}
    _validate(message)
    data = canonical_json(message)
    if len(data) > limit:
        raise ProtocolError(f"{kind} message of {len(data)} bytes exceeds the limit of {limit}")
    return data


def decode(data: bytes | bytearray | memoryview, limit: int) -> dict[str, Any]:
    if len(data) > limit:
        raise ProtocolError(f"message of {len(data)} bytes exceeds the limit of {limit}")
    try:
        message = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"message is not UTF-8 JSON: {exc}") from None
    _validate(message)
    return message


def _validate(message: Any) -> None:
    if not isinstance(message, dict):
        raise ProtocolError("message is not a JSON object")
    if type(message.get("v")) is not int or message["v"] != VERSION:
        raise ProtocolError(f"unsupported message version {message.get('v')!r}")
    kind = message.get("type")
    schema = SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise ProtocolError(f"unknown message type {kind!r}")
    optional = OPTIONAL.get(kind, {})
    extra = set(message) - set(schema) - set(optional) - {"v", "type"}
    if extra:
        raise ProtocolError(f"{kind}: unexpected fields {sorted(extra)}")
    for name, check in schema.items():
        if name not in message:
            raise ProtocolError(f"{kind}: missing field {name!r}")
        if not check(message[name]):
            raise ProtocolError(f"{kind}: invalid field {name!r}")
    for name, check in optional.items():
        if name in message and not check(message[name]):
            raise ProtocolError(f"{kind}: invalid field {name!r}")


@dataclass(frozen=True)
class Fence:
    """What the master persisted when it leased work: every RESULT must match it exactly."""

    generation: int
    shard: str
    lease: str
    work_hash: str
    input_hash: str
    worker: int

    def fields(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "shard": self.shard,
            "lease": self.lease,
            "work_hash": self.work_hash,
            "input_hash": self.input_hash,
            "worker": self.worker,
        }


def check_fence(expected: Fence, message: dict[str, Any], source: int, current_generation: int) -> None:
    """Reject a RESULT that does not match its lease, generation or transport owner."""
    if message["generation"] != current_generation:
        raise StaleGeneration(f"result of generation {message['generation']} in generation {current_generation}")
    if source != expected.worker or message["worker"] != expected.worker:
        raise FenceError(f"result from rank {source} (claims {message['worker']}) for a lease of worker {expected.worker}")
    for name in ("generation", "shard", "lease", "work_hash", "input_hash"):
        if message[name] != getattr(expected, name):
            raise FenceError(f"result {name} {message[name]!r} does not match the lease's {getattr(expected, name)!r}")
