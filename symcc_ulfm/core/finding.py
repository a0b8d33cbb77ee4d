"""Findings: the format every layer shares (worker report, manifest entry) and its checks.

An execution's outcome kind is one of :data:`KINDS`; everything but ``ok`` is a finding
(``protocol``: the sandbox child that executed the input answered with a malformed,
inconsistent or oversized frame, ``executors.sandbox.frames``). A
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

KINDS = ("ok", "exception", "crash", "hang", "oom", "protocol")
FINDING_KINDS = KINDS[1:]
TERMINAL_KINDS = ("crash", "hang", "oom", "protocol")  # inputs not expanded further (as AFL keeps crashes out of its queue)
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


def same_type_error(findings: list[dict[str, Any]], inputs: int) -> dict[str, Any] | None:
    """The finding when every input raised one and the same ``TypeError`` and nothing else came
    of the search, else None: typically a target that takes ``str`` given the ``bytes`` every
    campaign passes. ``findings`` are the unique findings (``kind``, ``signature``, ``hits``);
    ``inputs`` the distinct inputs the search kept (a campaign's corpus, what ``explore`` wrote),
    of which a finding's inputs are a part: hits as many as inputs means all of them."""
    if len(findings) != 1 or inputs < 1:
        return None
    (row,) = findings
    exception = row["signature"].split(" ", 1)[0]
    return row if row["kind"] == "exception" and exception == "TypeError" and row["hits"] >= inputs else None


def type_error_hint(row: dict[str, Any], inputs: int, target: str | None) -> str:
    """What to do about :func:`same_type_error`'s finding ``row`` (with its ``detail`` when known)
    of ``target`` (``file.py:function`` or ``module:function``): decode the input in a wrapper."""
    detail = f" ({row['detail']})" if row.get("detail") else ""
    text = (f"hint: all {inputs} inputs raised the same exception, {row['signature']}{detail}, and nothing else "
            "came of them. A campaign passes every input to the target as bytes; a function that takes str fails "
            "like this on its first str operation. Decode the input in a wrapper")
    where, _, function = (target or "").rpartition(":")
    if not where or not function:
        return text + "."
    outer, name = function.split(".")[0], function.rsplit(".", 1)[-1]
    call = f"        return {function}(data.decode(\"latin-1\"))"
    if where.endswith(".py") or "/" in where:
        return (f"{text}; add to {where}:\n    def {name}_bytes(data: bytes):\n{call}\n"
                f"and run it with --target {where}:{name}_bytes")
    return (f"{text}, e.g. in wrapper.py:\n    from {where} import {outer}\n\n    def target(data: bytes):\n{call}\n"
            f"and run it with --target wrapper.py:target --executor-option 'modules=[\"{where}\"]' (so that "
            f"{where} is instrumented and traced as the target's own module)")


def useless_seeds_warning(seeds: int, useless: int, coverage_ids: int) -> str:
    """What AFL++'s dry run says of seeds that reach nothing the seeds before them did, for
    ``useless`` of ``seeds`` seeds that reach ``coverage_ids`` coverage ids together; when all but
    one are, every seed took the same path: the harness likely rejects them all early."""
    text = (f"warning: {useless} of {seeds} seeds reach no coverage the seeds before them did not (AFL++: "
            "\"test case may be useless\")")
    if seeds > 1 and useless == seeds - 1:
        text += (f"; all {seeds} take the same path ({coverage_ids} coverage ids): the target likely rejects "
                 "them early (a magic or flag byte it checks first?), so seeds that pass its first checks would "
                 "start the search deeper")
    return text
