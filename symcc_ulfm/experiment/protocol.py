"""The preregistered protocol of a scaling study, its canonical digest and its run plan.

A protocol file is one JSON object (unknown keys are rejected: a typo in a preregistered
protocol must not pass silently)::

    {"format": "symcc-ulfm-scale-protocol/1",          optional; this value
     "description": "...",                              optional free text
     "tiers": [1, 2, 4, 8],                             worker counts (WORKERS, not ranks)
     "repeats": 3,                                      paired blocks, one per repeat
     "window_s": 10,                                    measurement window = campaign deadline
     "cores": 2,                                        physical core limit (for the ceiling)
     "executor": "concolic", "target": "tokenizer",     target null: the executor's default
     "executor_options": {},                            optional
     "worker_kinds": "havoc:1,concolic:2",              optional (launch --worker-kinds): adds up to the
                                                        masters rule's workers_per_master
     "keep": "novel",                                   optional (launch --keep)
     "timeouts": {},                                    optional policy timeouts (core.policy.Timeouts)
     "seed": 0,                                         randomisation seed of the run order
     "masters_rule": {"workers_per_master": 3},
     "stop_rule": {"max_cells": 30} | {"max_seconds": 3600} | both | {}}

The normalised protocol (defaults filled in) is what ``MATRIX_DIR/protocol.json`` holds and what
:func:`protocol_digest` hashes: the SHA-256 of its canonical JSON, the same value that
``selection.json`` records as ``protocol_sha256``.

A cell is one campaign of a tier: ``masters = ceil(workers / workers_per_master)``,
``ranks = masters + workers``, no warm spares, no injected failures, deadline = ``window_s``.

The plan: blocks ``0 .. repeats-1`` in an order shuffled by ``random.Random(seed)``, then, block
by block in that order, the tiers in an order shuffled by the same generator. It is a pure
function of the protocol, so a resumed matrix can prove that it continues the same plan.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from .. import executors
from ..core.canonical import canonical_json, digest
from ..core.layout import compute_layout
from ..core.policy import Policy, build_policy
from ..errors import ConfigError
from .jsonfile import read_protocol_file
from .selection import cell_dir_name

PROTOCOL_FORMAT = "symcc-ulfm-scale-protocol/1"
PLAN_FORMAT = "symcc-ulfm-scale-plan/1"
_REQUIRED = ("tiers", "repeats", "window_s", "cores", "executor", "target", "seed", "masters_rule", "stop_rule")
_OPTIONAL = {"format": PROTOCOL_FORMAT, "description": "", "executor_options": {}, "timeouts": {}}
# optional too, but not written into the normalised protocol when absent (its digest stays as it was)
_LATER = {"worker_kinds": "", "keep": "all"}
_STOP_RULES = ("max_cells", "max_seconds")
_MAX_TIER = 4096


class StudyProtocolError(ConfigError):
    """A protocol that cannot be run as written (exit 2); the message names the field."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_positive_number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            and value > 0)


def _int_field(protocol: dict, name: str, low: int, high: int | None = None) -> None:
    value = protocol[name]
    if not _is_int(value) or value < low or (high is not None and value > high):
        bound = f"in {low}..{high}" if high is not None else f">= {low}"
        raise StudyProtocolError(name, f"{value!r}: expected an integer {bound}")


def validate(value: Any) -> dict:
    """The normalised protocol; raises :class:`ProtocolError` naming the first bad field."""
    if not isinstance(value, dict):
        raise StudyProtocolError("protocol", "expected a JSON object")
    unknown = sorted(set(value) - set(_REQUIRED) - set(_OPTIONAL) - set(_LATER))
    if unknown:
        known = ", ".join(sorted([*_REQUIRED, *_OPTIONAL, *_LATER]))
        raise StudyProtocolError(unknown[0], f"unknown protocol field; known: {known}")
    missing = [name for name in _REQUIRED if name not in value]
    if missing:
        raise StudyProtocolError(missing[0], "required protocol field is missing")
    protocol = {**_OPTIONAL, **value}
    if protocol["format"] != PROTOCOL_FORMAT:
        raise StudyProtocolError("format", f"{protocol['format']!r}: expected {PROTOCOL_FORMAT!r}")
    if not isinstance(protocol["description"], str):
        raise StudyProtocolError("description", "expected a string")
    tiers = protocol["tiers"]
    if (not isinstance(tiers, list) or not tiers or not all(_is_int(t) and 1 <= t <= _MAX_TIER for t in tiers)
            or len(set(tiers)) != len(tiers)):
        raise StudyProtocolError("tiers", f"{tiers!r}: expected a non-empty list of distinct worker counts in 1..{_MAX_TIER}")
    _int_field(protocol, "repeats", 1, 10_000)
    _int_field(protocol, "cores", 1)
    _int_field(protocol, "seed", 0, 2**63 - 1)
    if not _is_positive_number(protocol["window_s"]):
        raise StudyProtocolError("window_s", f"{protocol['window_s']!r}: expected seconds > 0")
    if protocol["executor"] not in executors.names():
        raise StudyProtocolError("executor", f"{protocol['executor']!r}: expected one of {', '.join(executors.names())}")
    if protocol["target"] is not None and (not isinstance(protocol["target"], str) or not protocol["target"].strip()):
        raise StudyProtocolError("target", f"{protocol['target']!r}: expected null, a built-in name, module:function "
                            "or file.py:function")
    for name in ("executor_options", "timeouts"):
        if not isinstance(protocol[name], dict):
            raise StudyProtocolError(name, "expected a JSON object")
    _check_masters_rule(protocol["masters_rule"])
    _check_stop_rule(protocol["stop_rule"])
    for tier in tiers:  # every tier must make a valid campaign policy (exit 2 before anything runs)
        cell_policy(protocol, tier)
    return protocol


def _check_masters_rule(rule: Any) -> None:
    if not isinstance(rule, dict) or set(rule) != {"workers_per_master"}:
        raise StudyProtocolError("masters_rule", f"{rule!r}: expected {{\"workers_per_master\": K}}")
    if not _is_int(rule["workers_per_master"]) or not 1 <= rule["workers_per_master"] <= _MAX_TIER:
        raise StudyProtocolError("masters_rule.workers_per_master", f"{rule['workers_per_master']!r}: expected an "
                            f"integer in 1..{_MAX_TIER}")


def _check_stop_rule(rule: Any) -> None:
    if not isinstance(rule, dict) or not set(rule) <= set(_STOP_RULES):
        raise StudyProtocolError("stop_rule", f"{rule!r}: expected an object with max_cells and/or max_seconds, or {{}}")
    if "max_cells" in rule and (not _is_int(rule["max_cells"]) or rule["max_cells"] < 1):
        raise StudyProtocolError("stop_rule.max_cells", f"{rule['max_cells']!r}: expected an integer >= 1")
    if "max_seconds" in rule and not _is_positive_number(rule["max_seconds"]):
        raise StudyProtocolError("stop_rule.max_seconds", f"{rule['max_seconds']!r}: expected seconds > 0")


def load(path: str | Path) -> dict:
    """Read and validate a protocol file."""
    return validate(read_protocol_file(path, StudyProtocolError))


def protocol_bytes(protocol: dict) -> bytes:
    return canonical_json(protocol)


def protocol_digest(protocol: dict) -> str:
    return digest(protocol)


def masters_for(protocol: dict, workers: int) -> int:
    return math.ceil(workers / protocol["masters_rule"]["workers_per_master"])


def cell_policy(protocol: dict, workers: int) -> Policy:
    """The campaign policy of one cell of tier ``workers``; its layout must have exactly that many workers."""
    per_master = protocol["masters_rule"]["workers_per_master"]
    masters = masters_for(protocol, workers)
    try:
        policy = build_policy(
            ranks=masters + workers, warm_spares=0, workers_per_master=per_master,
            deadline_s=float(protocol["window_s"]), failure_schedule="", executor=protocol["executor"],
            target=protocol["target"], executor_options=dict(protocol["executor_options"]),
            timeouts=dict(protocol["timeouts"]), **{name: protocol.get(name, default) for name, default in _LATER.items()},
        )
    except ConfigError as exc:
        raise StudyProtocolError(f"tier {workers}", str(exc)) from exc
    layout = compute_layout(0, list(range(policy.ranks)), per_master)
    if (len(layout.masters), len(layout.workers)) != (masters, workers):
        raise StudyProtocolError("masters_rule", f"tier {workers}: {policy.ranks} ranks give {len(layout.masters)} "
                            f"masters and {len(layout.workers)} workers, not {masters} and {workers}")
    return policy


def plan(protocol: dict) -> dict:
    """The randomised run order (see the module docstring) with everything a cell needs to start."""
    rng = random.Random(protocol["seed"])
    blocks = list(range(protocol["repeats"]))
    rng.shuffle(blocks)
    cells = []
    for block in blocks:
        tiers = list(protocol["tiers"])
        rng.shuffle(tiers)
        for tier in tiers:
            policy = cell_policy(protocol, tier)
            cells.append({
                "order": len(cells), "block": block, "tier": tier, "cell": cell_dir_name(block, tier),
                "workers": tier, "masters": masters_for(protocol, tier), "ranks": policy.ranks,
                "oversubscribed": policy.ranks > protocol["cores"], "policy_sha256": policy.sha256,
            })
    return {
        "format": PLAN_FORMAT,
        "protocol_sha256": protocol_digest(protocol),
        "randomisation": "random.Random(seed): shuffle the blocks, then the tiers of each block in block order",
        "block_order": blocks,
        "cells": cells,
    }
