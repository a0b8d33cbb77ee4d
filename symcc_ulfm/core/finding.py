"""Findings: the format every layer shares (worker report, manifest entry) and its checks.

An execution's outcome kind is one of :data:`KINDS`; everything but ``ok`` is a finding. A
worker reports what it observed as ``{kind, signature, detail, sha256}`` (the SHA-256 of the
input that produced it); the master adds the time it accepted the report and writes it into the
commit manifest, so findings are published by the same WAL path as corpus objects. A unique
finding is a ``(kind, signature)`` pair; its hits are the distinct inputs that produced it.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from .canonical import is_sha256_hex

KINDS = ("ok", "exception", "crash", "hang", "oom")
FINDING_KINDS = KINDS[1:]
TERMINAL_KINDS = ("crash", "hang", "oom")  # inputs not expanded further (as AFL keeps crashes out of its queue)
MAX_SIGNATURE = 400
MAX_DETAIL = 400
MAX_PER_RESULT = 256
REPORT_KEYS = frozenset({"kind", "signature", "detail", "sha256"})
RECORD_KEYS = REPORT_KEYS | {"time"}


def is_report(value: Any) -> bool:
    """A worker's finding report, as it travels in a RESULT."""
    return (
        isinstance(value, dict)
        and set(value) == REPORT_KEYS
        and value["kind"] in FINDING_KINDS
        and isinstance(value["signature"], str) and 0 < len(value["signature"]) <= MAX_SIGNATURE
        and isinstance(value["detail"], str) and len(value["detail"]) <= MAX_DETAIL
        and is_sha256_hex(value["sha256"])
    )


def is_record(value: Any) -> bool:
    """A finding as a commit manifest holds it (a report plus the master's time of acceptance)."""
    return (
        isinstance(value, dict)
        and set(value) == RECORD_KEYS
        and is_report({k: value[k] for k in REPORT_KEYS})
        and type(value["time"]) in (int, float) and math.isfinite(value["time"]) and value["time"] >= 0
    )


def finding_id(kind: str, signature: str) -> str:
    """A short stable name of a unique finding (what ``symcc-ulfm replay`` accepts)."""
    return hashlib.sha256(f"{kind}\0{signature}".encode()).hexdigest()[:12]
