"""The ``concolic`` executor's options: their defaults and how each given value is checked."""

from __future__ import annotations

import importlib
import types
from collections.abc import Mapping
from typing import Any

from ...errors import PolicyError
from ..dictionary import tokens_of
from .tracing.run_outcome import parse_expected

DEFAULTS: dict[str, Any] = {
    "query_timeout_ms": 1000,
    "max_branches_per_run": 64,
    "site_budget": 8,
    "exec_timeout_s": 2.0,
    "max_children": 64,
    "run_timeout_s": 10.0,
    "max_repairs": 64,
    "max_frames": 400,
    "max_path": 50000,
    "memory_mb": 2048,
    "seeds": None,
    "expected_exceptions": None,
    "modules": None,
    "mutate_share": 0.5,
    "mutations": 2000,
    "mutate_seed": 0,
    "mutate_clock": True,  # False: exactly `mutations` mutants per run, whatever the machine's load
    "dictionary": None,  # the user's (launch --dictionary, executors.dictionary): havoc words
    "stdlib_rejections": True,
}
_NON_NEGATIVE = {"mutate_share", "mutations", "mutate_seed"}  # 0 is meaningful (no hybrid phase, seed 0)
_FLAGS = {"stdlib_rejections", "mutate_clock"}
_POSITIVE = {k for k, v in DEFAULTS.items() if v is not None} - _NON_NEGATIVE - _FLAGS


def parse_options(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The options with their defaults, each checked (PolicyError naming the option)."""
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise PolicyError("executor.options", f"unknown concolic option(s) {unknown}; known: {sorted(DEFAULTS)}")
    options = dict(DEFAULTS)
    for key, value in raw.items():
        if key in _POSITIVE:
            kind = float if isinstance(DEFAULTS[key], float) else int
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise PolicyError(f"executor.options.{key}", f"must be a positive number, got {value!r}")
            options[key] = kind(value)
        elif key in _NON_NEGATIVE:
            kind = float if key == "mutate_share" else int
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
                    or (kind is int and value != int(value)) or (key == "mutate_share" and value >= 1)):
                bound = "a number in [0, 1)" if key == "mutate_share" else "a non-negative integer"
                raise PolicyError(f"executor.options.{key}", f"must be {bound}, got {value!r}")
            options[key] = kind(value)
        elif key in _FLAGS:
            if not isinstance(value, bool):
                raise PolicyError(f"executor.options.{key}", f"must be true or false, got {value!r}")
            options[key] = value
        else:
            options[key] = value
    if options["seeds"] is not None:
        seeds = options["seeds"]
        try:
            if isinstance(seeds, str) or not seeds:
                raise ValueError
            options["seeds"] = [bytes.fromhex(s).hex() for s in seeds]
        except (TypeError, ValueError):
            raise PolicyError("executor.options.seeds", "must be a non-empty list of hex strings") from None
    tokens_of(options["dictionary"])
    if options["expected_exceptions"] is not None:
        options["expected_exceptions"] = list(parse_expected(options["expected_exceptions"]))
    if options["modules"] is not None:
        modules = options["modules"]
        if isinstance(modules, str) or not isinstance(modules, (list, tuple)) or not all(
                isinstance(m, str) and m for m in modules):
            raise PolicyError("executor.options.modules", "must be a list of module names")
        options["modules"] = list(modules)
    return options


def import_modules(names) -> list[types.ModuleType]:
    """The modules named in the ``modules`` option (traced and instrumented like the target's)."""
    modules = []
    for name in names or ():
        try:
            modules.append(importlib.import_module(name))
        except ImportError as exc:
            raise PolicyError("executor.options.modules", f"cannot import {name!r}: {exc}") from None
    return modules
