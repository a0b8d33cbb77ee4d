"""Rules the oracle and its helpers share: canonical JSON, SHA-256, the layout rule.

Written from DESIGN.md, independently of ``symcc_ulfm.core`` (which the oracle must not import).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def expected_groups(active: list[int], workers_per_master: int) -> list[list[int]]:
    """DESIGN.md §3: cut active endpoints into groups of 1 + W; a trailing lone endpoint joins the last group."""
    size = 1 + workers_per_master
    chunks = [list(active[i : i + size]) for i in range(0, len(active), size)]
    if len(chunks) > 1 and len(chunks[-1]) == 1:
        chunks[-2].extend(chunks.pop())
    return [c for c in chunks if len(c) > 1]
