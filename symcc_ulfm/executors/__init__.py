"""Executor registry: one place that maps a name to an implementation.

Implementations are imported lazily so that a ``simulate`` campaign never imports z3.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ..errors import PolicyError
from .base import Executor, ExecutorSpec, RunResult

_REGISTRY: dict[str, str] = {
    "simulate": "symcc_ulfm.executors.simulate:SimulateExecutor",
    "concolic": "symcc_ulfm.executors.concolic:ConcolicExecutor",
    "symcc": "symcc_ulfm.executors.symcc:SymccExecutor",
}

DEFAULT_EXECUTOR = "concolic"


def names() -> list[str]:
    return sorted(_REGISTRY)


def check_name(name: str) -> str:
    if name not in _REGISTRY:
        raise PolicyError("executor", f"unknown executor {name!r}; expected one of {', '.join(names())}")
    return name


def executor_class(name: str) -> type[Executor]:
    module_name, _, attr = _REGISTRY[check_name(name)].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def create(name: str, target: str | None = None, options: Mapping[str, Any] | None = None) -> Executor:
    """Build the executor ``name`` for ``target`` (raises ConfigError subclasses on bad input)."""
    return executor_class(name)(target=target, options=dict(options or {}))


def from_spec(spec: ExecutorSpec) -> Executor:
    return create(spec.name, spec.target, spec.options)


__all__ = ["Executor", "ExecutorSpec", "RunResult", "DEFAULT_EXECUTOR", "names", "check_name", "create", "from_spec"]
