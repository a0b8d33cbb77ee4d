"""The preregistered protocol of a comparison study, its digest and its randomised plan.

A protocol file is one JSON object (unknown keys are rejected: a typo in a preregistered
protocol must not pass silently)::

    {"format": "symcc-ulfm-compare-protocol/1",        optional; this value
     "description": "...",                              optional free text: what is compared and why
     "targets": {NAME: {"python": SPEC, "modules": [...], "seeds": [hex, ...]}   (:mod:`.study_targets`)
                     | {"harness": DIRNAME}},
     "systems": {NAME: SYSTEM},                         (:mod:`.systems`: campaign, afl, atheris, seeds)
     "reference": NAME | {"python": NAME, "binary": NAME},   the system the others are compared with
                                                        (one for each form of target when they differ)
     "trials": 5,                                       randomised blocks, one trial of every cell each
     "min_trials": 5,                                   fewer counted trials: no p-value or A12 is claimed
     "window_s": 300,                                   each cell's window (wall-clock, from its start)
     "cores": 2,                                        cores of every cell (each cell on its own)
     "snapshots": 10,                                   coverage-over-time points after 0 (window / snapshots)
     "seed": 0,                                         randomisation of the run order and each cell's seed
     "rerun": {"max_attempts": 2},                      attempts of a cell that fails or is interrupted
     "stop_rule": {"max_seconds": 36000} | {}}          no cell starts once the complete cells took this long

Names of targets and systems match ``[a-z0-9][a-z0-9_+-]*``. A system runs on the targets of
the forms it can run (AFL++ on harness builds, atheris on Python functions, a campaign and the
seeds alone on both); one that runs on none of the targets is refused. A cell is one system on
one target for one window in one trial, named ``<trial>.<target>.<system>``. The plan: the trials in an order
shuffled by ``random.Random(seed)``, then, trial by trial, its cells (every target x system) in an
order shuffled by the same generator: a pure function of the protocol, so that a resumed study can
prove that it continues the same plan. Each cell's own seed (afl-fuzz ``-s``, atheris ``-seed``,
``launch --seed``) is derived from the protocol's seed and the cell's name (:func:`cell_seed`).

The normalised protocol (defaults filled in) is what ``STUDY/protocol.json`` holds and what
:func:`protocol_digest` hashes.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from pathlib import Path
from typing import Any

from ..core.canonical import digest
from ..errors import ConfigError
from ..experiment.jsonfile import read_protocol_file
from . import systems
from .study_targets import BINARY, PYTHON

PROTOCOL_FORMAT = "symcc-ulfm-compare-protocol/1"
PLAN_FORMAT = "symcc-ulfm-compare-plan/1"
_REQUIRED = ("targets", "systems", "reference", "trials", "window_s", "cores", "seed")
_DEFAULTS = {"format": PROTOCOL_FORMAT, "description": "", "min_trials": 5, "snapshots": 10,
             "rerun": {"max_attempts": 2}, "stop_rule": {}}
_NAME = re.compile(r"[a-z0-9][a-z0-9_+-]{0,63}")


class CompareProtocolError(ConfigError):
    """A comparison protocol that cannot be run as written (exit 2); the message names the field."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(protocol: dict, name: str, low: int, high: int) -> None:
    value = protocol[name]
    if not _is_int(value) or not low <= value <= high:
        raise CompareProtocolError(name, f"{value!r}: expected an integer in {low}..{high}")


def _names(protocol: dict, field: str) -> dict:
    table = protocol[field]
    if not isinstance(table, dict) or not table:
        raise CompareProtocolError(field, "expected a non-empty JSON object of NAME: spec")
    for name in table:
        if not _NAME.fullmatch(name):
            raise CompareProtocolError(f"{field}.{name}", "a name must match [a-z0-9][a-z0-9_+-]* (at most 64)")
    return table


def _check_target(name: str, spec: Any) -> str:
    """The form of a target spec (``python`` or ``binary``) once checked."""
    where = f"targets.{name}"
    if not isinstance(spec, dict):
        raise CompareProtocolError(where, "expected {\"python\": SPEC, ...} or {\"harness\": DIRNAME}")
    if "harness" in spec:
        if set(spec) != {"harness"} or not isinstance(spec["harness"], str) or not _NAME.fullmatch(spec["harness"]):
            raise CompareProtocolError(where, "a harness target is {\"harness\": DIRNAME} (a plain directory name)")
        return BINARY
    unknown = sorted(set(spec) - {"python", "modules", "seeds"})
    if unknown or not isinstance(spec.get("python"), str) or not spec["python"].strip():
        raise CompareProtocolError(where, "expected {\"python\": SPEC, \"modules\"?: [...], \"seeds\"?: [hex]}"
                                          + (f"; unknown {unknown[0]!r}" if unknown else ""))
    modules, seeds = spec.get("modules", []), spec.get("seeds", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) and m for m in modules):
        raise CompareProtocolError(f"{where}.modules", "expected a list of module names")
    if not isinstance(seeds, list) or not all(isinstance(s, str) for s in seeds):
        raise CompareProtocolError(f"{where}.seeds", "expected a list of hex strings")
    for seed in seeds:
        try:
            bytes.fromhex(seed)
        except ValueError:
            raise CompareProtocolError(f"{where}.seeds", f"{seed[:40]!r} is not hex") from None
    return PYTHON


def runs_on(system: dict, forms: list[str]) -> list[str]:
    """The target forms (:data:`.study_targets.PYTHON`, ``BINARY``) of ``forms`` that ``system`` runs on."""
    kind = systems.KINDS.get(system.get("kind")) if isinstance(system, dict) else None
    return [form for form in forms if kind is not None and form in kind.FORMS]


def target_form(spec: dict) -> str:
    return BINARY if "harness" in spec else PYTHON


def reference_of(protocol: dict, target: str) -> str:
    """The system the others are compared with on ``target`` (the protocol's, or its form's)."""
    reference = protocol["reference"]
    return reference if isinstance(reference, str) else reference[target_form(protocol["targets"][target])]


def _check_reference(protocol: dict, forms: list[str]) -> None:
    reference = protocol["reference"]
    wanted = {form: reference for form in forms} if isinstance(reference, str) else reference
    if not isinstance(wanted, dict) or set(wanted) != set(forms):
        raise CompareProtocolError("reference", f"{reference!r}: expected a system name, or {{FORM: NAME}} for each "
                                                f"form of the targets ({', '.join(forms)})")
    for form, name in wanted.items():
        if name not in protocol["systems"]:
            raise CompareProtocolError("reference", f"{name!r} is not one of the systems")
        if not runs_on(protocol["systems"][name], [form]):
            raise CompareProtocolError("reference", f"{name!r} does not run on the {form} targets")


def validate(value: Any) -> dict:
    """The normalised protocol; raises :class:`CompareProtocolError` naming the first bad field."""
    if not isinstance(value, dict):
        raise CompareProtocolError("protocol", "expected a JSON object")
    unknown = sorted(set(value) - set(_REQUIRED) - set(_DEFAULTS))
    if unknown:
        raise CompareProtocolError(unknown[0], "unknown protocol field; known: "
                                   + ", ".join(sorted([*_REQUIRED, *_DEFAULTS])))
    missing = [name for name in _REQUIRED if name not in value]
    if missing:
        raise CompareProtocolError(missing[0], "required protocol field is missing")
    protocol = {**_DEFAULTS, **value}
    if protocol["format"] != PROTOCOL_FORMAT:
        raise CompareProtocolError("format", f"{protocol['format']!r}: expected {PROTOCOL_FORMAT!r}")
    if not isinstance(protocol["description"], str):
        raise CompareProtocolError("description", "expected a string")
    forms = sorted({_check_target(name, spec) for name, spec in _names(protocol, "targets").items()})
    for name, system in _names(protocol, "systems").items():
        if not runs_on(system, forms):
            systems.validate(name, system, forms[0])  # raises the reason it runs on none of the targets
    _check_reference(protocol, forms)
    _int(protocol, "trials", 1, 1000)
    _int(protocol, "min_trials", 2, 1000)
    _int(protocol, "cores", 1, 4096)
    _int(protocol, "snapshots", 1, 1000)
    _int(protocol, "seed", 0, 2**63 - 1)
    window = protocol["window_s"]
    if not isinstance(window, int | float) or isinstance(window, bool) or not math.isfinite(window) or window <= 0:
        raise CompareProtocolError("window_s", f"{window!r}: expected seconds > 0")
    rerun = protocol["rerun"]
    if (not isinstance(rerun, dict) or set(rerun) != {"max_attempts"} or not _is_int(rerun["max_attempts"])
            or not 1 <= rerun["max_attempts"] <= 100):
        raise CompareProtocolError("rerun", f"{rerun!r}: expected {{\"max_attempts\": N}} with N in 1..100")
    rule = protocol["stop_rule"]
    if not isinstance(rule, dict) or not set(rule) <= {"max_seconds"} or any(
            not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v <= 0
            for v in rule.values()):
        raise CompareProtocolError("stop_rule", f"{rule!r}: expected {{\"max_seconds\": S}} or {{}}")
    return protocol


def load(path: str | Path) -> dict:
    """Read and validate a protocol file."""
    return validate(read_protocol_file(path, CompareProtocolError))


def is_compare_protocol(value: Any) -> bool:
    return isinstance(value, dict) and value.get("format") == PROTOCOL_FORMAT


def protocol_digest(protocol: dict) -> str:
    return digest(protocol)


def cell_name(trial: int, target: str, system: str) -> str:
    return f"{trial}.{target}.{system}"


def cell_seed(protocol: dict, name: str) -> int:
    """A cell's own seed: 31 bits of SHA-256(protocol seed, cell name)."""
    return int(hashlib.sha256(f"{protocol['seed']}:{name}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def curve_times(protocol: dict) -> list[float]:
    """The coverage-over-time points of every cell: 0 and window * k / snapshots."""
    window, count = float(protocol["window_s"]), protocol["snapshots"]
    return [round(window * k / count, 6) for k in range(count + 1)]


def plan(protocol: dict) -> dict:
    """The randomised run order (see the module docstring)."""
    rng = random.Random(protocol["seed"])
    trials = list(range(protocol["trials"]))
    rng.shuffle(trials)
    cells = []
    for trial in trials:
        pairs = [(target, system) for target, spec in sorted(protocol["targets"].items())
                 for system in sorted(protocol["systems"]) if runs_on(protocol["systems"][system], [target_form(spec)])]
        rng.shuffle(pairs)
        for target, system in pairs:
            name = cell_name(trial, target, system)
            cells.append({"order": len(cells), "cell": name, "trial": trial, "target": target, "system": system,
                          "seed": cell_seed(protocol, name)})
    return {"format": PLAN_FORMAT, "protocol_sha256": protocol_digest(protocol),
            "randomisation": "random.Random(seed): shuffle the trials, then the target x system cells of each "
                             "trial in trial order",
            "trial_order": trials, "cells": cells}
