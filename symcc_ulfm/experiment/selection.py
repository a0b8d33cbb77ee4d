"""Reading a matrix directory and deciding which cells count.

The format (the matrix runner writes it, :mod:`.analysis` reads it)::

    MATRIX_DIR/protocol.json
        {"tiers": [8, 32, 128],        distinct worker counts, integers >= 1
         "repeats": 20,                 blocks 0 .. repeats-1 (one paired block per repeat)
         "window_s": 60,                measurement window per cell, number > 0
         "cores": 130,                  physical core limit for the ceiling, integer >= 1
         "target": "...", "executor": "...", "seed": 0,
         "masters_rule": ..., "stop_rule": ...}     recorded as given (any JSON value)
    MATRIX_DIR/cells/<block>-<tier>/result.json     e.g. cells/3-32/result.json
        {"block": 3, "tier": 32,        must match the directory name and the protocol
         "order": 17,                   position in the randomised run order, integer >= 0
         "status": "ok" | "failed",
         "internal_failures": 0,        integer >= 0
         "generated_per_s": 83.4, "unique_per_s": 27.4, "novel_per_s": 1.2,
         "retention": 0.329,            unique / generated
         "endpoint_edges": 174, "seconds": 60.1}
                                        finite numbers >= 0; may be null only in a failed cell
    MATRIX_DIR/cells/<block>-<tier>/COMPLETE        empty marker, written last (after result.json)

``<block>`` and ``<tier>`` are decimal integers without leading zeros. A cell is *failed* when its
status is ``failed`` or it reports an internal failure (a driver that exits 0 over an internal
``exit-70`` is still a failure).

Rules, applied in order and each recorded in ``selection.json`` with exactly what it excluded:

1. ``cell_directory``: an entry of ``cells/`` that is not a directory named ``<block>-<tier>``.
2. ``complete_marker``: a cell without ``COMPLETE`` never counts (it may still be running).
3. ``valid_result``: ``result.json`` must parse and follow the format above.
4. ``complete_block``: reliability uses only blocks with a counted cell at every protocol tier.
5. ``no_failed_cell``: performance comparisons use complete blocks none of whose cells failed;
   a block with a failed cell is excluded wholesale, keeping the comparison paired.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.canonical import digest
from ..errors import ConfigError
from ..store.reads import read_bytes

PROTOCOL_FILE = "protocol.json"
CELLS_DIR = "cells"
RESULT_FILE = "result.json"
COMPLETE_MARKER = "COMPLETE"
METRICS = ("generated_per_s", "unique_per_s", "novel_per_s", "retention", "endpoint_edges")
_NUMBERS = (*METRICS, "seconds")
_PROTOCOL_FIELDS = (
    "tiers",
    "repeats",
    "window_s",
    "cores",
    "target",
    "executor",
    "seed",
    "masters_rule",
    "stop_rule",
)
_CELL_NAME = re.compile(r"(0|[1-9][0-9]*)-([1-9][0-9]*)")
_READ_LIMIT = 1 << 20


class MatrixFormatError(ConfigError):
    """A matrix directory whose protocol cannot be analysed."""


def cell_dir_name(block: int, tier: int) -> str:
    return f"{block}-{tier}"


def is_failed(result: dict) -> bool:
    return result["status"] == "failed" or result["internal_failures"] > 0


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    """A finite JSON number (``true`` is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def load_protocol(matrix_dir: Path) -> dict:
    path = Path(matrix_dir) / PROTOCOL_FILE
    try:
        protocol = json.loads(read_bytes(path, _READ_LIMIT))
    except FileNotFoundError as exc:
        raise MatrixFormatError(str(path), "missing; a matrix directory starts with its protocol") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise MatrixFormatError(str(path), f"not valid JSON ({exc})") from exc
    if not isinstance(protocol, dict):
        raise MatrixFormatError(str(path), "must be a JSON object")
    missing = [name for name in _PROTOCOL_FIELDS if name not in protocol]
    if missing:
        raise MatrixFormatError(f"{PROTOCOL_FILE}.{missing[0]}", "required field is missing")
    tiers = protocol["tiers"]
    if (
        not isinstance(tiers, list)
        or not tiers
        or not all(_is_int(t) and t >= 1 for t in tiers)
        or len(set(tiers)) != len(tiers)
    ):
        raise MatrixFormatError(
            f"{PROTOCOL_FILE}.tiers", "must be a non-empty list of distinct integers >= 1"
        )
    for name in ("repeats", "cores"):
        if not _is_int(protocol[name]) or protocol[name] < 1:
            raise MatrixFormatError(f"{PROTOCOL_FILE}.{name}", "must be an integer >= 1")
    window = protocol["window_s"]
    if not _is_number(window) or window <= 0:
        raise MatrixFormatError(f"{PROTOCOL_FILE}.window_s", "must be a number > 0")
    return protocol


@dataclass(frozen=True)
class CellEntry:
    """One entry of ``cells/`` as found on disk; ``result`` is the parsed JSON or ``None``."""

    name: str
    is_dir: bool
    complete: bool = False
    result: object = None
    read_error: str | None = None


def read_cells(matrix_dir: Path) -> list[CellEntry]:
    """Every entry of ``cells/``, by name; reading problems are recorded, not raised."""
    cells = Path(matrix_dir) / CELLS_DIR
    if not cells.is_dir():
        return []
    entries = []
    for path in sorted(cells.iterdir(), key=lambda p: p.name):
        if not path.is_dir():
            entries.append(CellEntry(path.name, is_dir=False))
            continue
        complete = (path / COMPLETE_MARKER).is_file()
        result, error = None, None
        if complete:
            try:
                result = json.loads(read_bytes(path / RESULT_FILE, _READ_LIMIT))
            except FileNotFoundError:
                error = f"no {RESULT_FILE}"
            except (ValueError, UnicodeDecodeError) as exc:
                error = f"{RESULT_FILE} is not valid JSON ({exc})"
        entries.append(CellEntry(path.name, is_dir=True, complete=complete, result=result, read_error=error))
    return entries


def _result_problem(result: object, block: int, tier: int, protocol: dict) -> str | None:
    """Why ``result`` does not follow the cell format, or ``None``."""
    if not isinstance(result, dict):
        return f"{RESULT_FILE} must be a JSON object"
    for name in ("block", "tier", "order", "internal_failures"):
        if not _is_int(result.get(name)) or result[name] < 0:
            return f"{name} must be an integer >= 0"
    if (result["block"], result["tier"]) != (block, tier):
        return f"block/tier {result['block']}/{result['tier']} do not match the directory name"
    if tier not in protocol["tiers"]:
        return f"tier {tier} is not a protocol tier"
    if block >= protocol["repeats"]:
        return f"block {block} is not below repeats ({protocol['repeats']})"
    if result.get("status") not in ("ok", "failed"):
        return f"status must be 'ok' or 'failed', got {result.get('status')!r}"
    for name in _NUMBERS:
        value = result.get(name)
        if value is None and name in result and is_failed(result):
            continue
        if not _is_number(value) or value < 0:
            return f"{name} must be a finite number >= 0"
    first = result.get("first_finding_s")
    if first is not None and (not _is_number(first) or first < 0):
        return "first_finding_s must be null (nothing found) or a finite number >= 0"
    return None


@dataclass
class Selection:
    """The counted cells by ``(block, tier)``, the blocks each analysis uses, and the record."""

    cells: dict[tuple[int, int], dict] = field(default_factory=dict)
    reliability_blocks: list[int] = field(default_factory=list)
    performance_blocks: list[int] = field(default_factory=list)
    record: dict = field(default_factory=dict)


def select(protocol: dict, entries: list[CellEntry]) -> Selection:
    """Apply the rules of the module docstring to ``entries`` (no file access)."""
    tiers = sorted(protocol["tiers"])
    bad_names, incomplete, invalid = [], [], []
    counted: dict[tuple[int, int], dict] = {}
    for entry in entries:
        match = _CELL_NAME.fullmatch(entry.name)
        if not entry.is_dir or match is None:
            bad_names.append(entry.name)
            continue
        if not entry.complete:
            incomplete.append(entry.name)
            continue
        block, tier = int(match.group(1)), int(match.group(2))
        problem = entry.read_error or _result_problem(entry.result, block, tier, protocol)
        if problem:
            invalid.append({"cell": entry.name, "reason": problem})
            continue
        counted[(block, tier)] = entry.result

    blocks = sorted({block for block, _ in counted})
    missing = {b: [t for t in tiers if (b, t) not in counted] for b in blocks}
    reliability = [b for b in blocks if not missing[b]]
    failed = {b: [cell_dir_name(b, t) for t in tiers if is_failed(counted[(b, t)])] for b in reliability}
    performance = [b for b in reliability if not failed[b]]
    rules = [
        {
            "rule": "cell_directory",
            "accept": "an entry of cells/ counts only as a directory named <block>-<tier>",
            "excluded": bad_names,
        },
        {
            "rule": "complete_marker",
            "accept": f"a cell counts only when its {COMPLETE_MARKER} marker (written last) exists",
            "excluded": incomplete,
        },
        {
            "rule": "valid_result",
            "accept": f"{RESULT_FILE} parses and follows the cell format of symcc_ulfm.experiment.selection",
            "excluded": invalid,
        },
        {
            "rule": "complete_block",
            "accept": "reliability uses only blocks with a counted cell at every protocol tier",
            "excluded_blocks": [{"block": b, "missing_tiers": missing[b]} for b in blocks if missing[b]],
        },
        {
            "rule": "no_failed_cell",
            "accept": "performance comparisons use complete blocks without a failed cell "
            "(status failed or internal_failures > 0); such a block is excluded wholesale",
            "excluded_blocks": [{"block": b, "failed_cells": failed[b]} for b in reliability if failed[b]],
        },
    ]
    record = {
        "protocol_sha256": digest(protocol),
        "tiers": tiers,
        "entries_found": len(entries),
        "counted_cells": [cell_dir_name(b, t) for b, t in sorted(counted)],
        "reliability_blocks": reliability,
        "performance_blocks": performance,
        "rules": rules,
    }
    return Selection(counted, reliability, performance, record)
