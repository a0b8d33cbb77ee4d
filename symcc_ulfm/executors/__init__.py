"""Executor registry: one place that maps a name to an implementation.

Implementations are imported lazily so that a ``simulate`` campaign never imports z3.
:func:`create` is what the runtime uses: an executor that would run target code in its own
process (``concolic``) comes back contained in a :class:`~.sandbox.Sandbox`. :func:`engine`
builds the executor itself, in this process: the sandbox child and the engine's unit tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import PolicyError
from .base import Executor, RunResult
from .sandbox.parent import Sandbox

_REGISTRY: dict[str, str] = {
    "simulate": "symcc_ulfm.executors.simulate:SimulateExecutor",
    "concolic": "symcc_ulfm.executors.concolic:ConcolicExecutor",
    "symcc": "symcc_ulfm.executors.symcc.adapter:SymccExecutor",
}

def names() -> list[str]:
    """The executors that exist: the one list of them."""
    return sorted(_REGISTRY)


def check_name(name: str) -> str:
    """``name`` if the registry has it, else :class:`PolicyError` naming the field ``executor``."""
    if name not in _REGISTRY:
        raise PolicyError("executor", f"unknown executor {name!r}; expected one of {', '.join(names())}")
    return name


def executor_class(name: str) -> type[Executor]:
    module_name, _, attr = _REGISTRY[check_name(name)].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def engine(name: str, target: str | None = None, options: Mapping[str, Any] | None = None) -> Executor:
    """The executor ``name`` for ``target``, in this process (raises ConfigError subclasses on bad input)."""
    return executor_class(name)(target=target, options=dict(options or {}))


def create(name: str, target: str | None = None, options: Mapping[str, Any] | None = None,
           scratch: Path | None = None) -> Executor:
    """The executor ``name`` for ``target`` as the runtime runs it: contained when it runs target
    code; ``scratch`` is a directory its executions may write into (default: the system's temp)."""
    if executor_class(name).in_process_target:
        return Sandbox(name, target, options, scratch=scratch)
    executor = engine(name, target, options)
    executor.scratch_dir = scratch
    return executor


__all__ = ["Executor", "RunResult", "names", "check_name", "create", "engine"]
