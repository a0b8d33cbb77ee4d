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
from .dictionary import OPTION as DICTIONARY
from .sandbox import isolation as sandbox_isolation
from .sandbox.parent import Sandbox

_EXECUTORS: dict[str, str] = {  # a campaign's executor: one lease analyzes one input
    "simulate": "symcc_ulfm.executors.simulate:SimulateExecutor",
    "concolic": "symcc_ulfm.executors.concolic:ConcolicExecutor",
    "symcc": "symcc_ulfm.executors.symcc.adapter:SymccExecutor",
}
_FUZZERS: dict[str, str] = {  # worker kinds beside it (core.kinds): one lease is a time slice (core.slices)
    "simfuzz": "symcc_ulfm.executors.fuzzers.simfuzz:SimulatedFuzzer",
    "afl": "symcc_ulfm.executors.fuzzers.afl:AflFuzzer",
    "havoc": "symcc_ulfm.executors.fuzzers.havoc_fuzzer:HavocFuzzer",
}
_REGISTRY = {**_EXECUTORS, **_FUZZERS}


def names() -> list[str]:
    """The executors a campaign can have: the one list of them."""
    return sorted(_EXECUTORS)


def fuzzer_names() -> list[str]:
    """The fuzzer worker kinds."""
    return sorted(_FUZZERS)


def check_name(name: str) -> str:
    """``name`` if the registry has it as an executor, else :class:`PolicyError` naming the field ``executor``."""
    if name not in _EXECUTORS:
        hint = f" ({name!r} is a fuzzer worker kind: --worker-kinds)" if name in _FUZZERS else ""
        raise PolicyError("executor", f"unknown executor {name!r}; expected one of {', '.join(names())}{hint}")
    return name


def executor_class(name: str) -> type[Executor]:
    """The class of an executor or a fuzzer worker kind."""
    if name not in _REGISTRY:
        check_name(name)
    module_name, _, attr = _REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def is_fuzzer(name: str) -> bool:
    """Whether worker kind ``name`` fuzzes in time slices (``core.slices``) instead of
    analyzing one input per lease."""
    return name in _FUZZERS


def takes_dictionary(kinds: tuple[str, ...]) -> bool:
    """Whether any of ``kinds`` uses a ``--dictionary``."""
    return any(executor_class(kind).takes_dictionary for kind in kinds if kind in _REGISTRY)


def check_kinds(executor: str, slots: tuple[str, ...]) -> None:
    """Refuse (PolicyError naming ``worker_kinds``) worker kinds a campaign of ``executor`` cannot
    run: unknown names, a second analysis kind, a fuzzer for another kind of target."""
    family = executor_class(check_name(executor)).family
    for kind in dict.fromkeys(slots):
        if kind not in _REGISTRY:
            raise PolicyError("worker_kinds", f"unknown worker kind {kind!r}; expected one of "
                                              f"{', '.join(sorted(_REGISTRY))}")
        cls = executor_class(kind)
        if kind not in _FUZZERS and kind != executor:
            raise PolicyError("worker_kinds", f"{kind!r} analyzes inputs as the executor does; a campaign has one "
                                              f"analysis kind, its executor {executor!r} (add fuzzers beside it)")
        if cls.family != family:
            raise PolicyError("worker_kinds", f"{kind!r} fuzzes {cls.family} targets; the executor {executor!r} "
                                              f"runs {family} targets")


def options_for(name: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """What executor ``name`` is given of a campaign's ``executor_options``: the shared ones (those
    of the target: a binary's arguments, a Python target's modules) and its own, which a key named
    after it holds (``{"afl": {"dictionary": ...}}``); the other kinds' own options are not its.
    The shared ``dictionary`` (``launch --dictionary``) goes only to the kinds that take one."""
    options = dict(options or {})
    own = options.get(name)
    shared = {k: v for k, v in options.items() if k not in _REGISTRY}
    if name in _REGISTRY and not executor_class(name).takes_dictionary:
        shared.pop(DICTIONARY, None)
    if own is None:
        return shared
    if not isinstance(own, dict):
        raise PolicyError(f"executor_options.{name}", f"{own!r}: expected an object of {name}'s own options")
    return {**shared, **own}


def engine(name: str, target: str | None = None, options: Mapping[str, Any] | None = None) -> Executor:
    """The executor ``name`` for ``target``, in this process (raises ConfigError subclasses on bad input)."""
    return executor_class(name)(target=target, options=options_for(name, options))


def create(name: str, target: str | None = None, options: Mapping[str, Any] | None = None,
           scratch: Path | None = None, isolation: str = "namespaces") -> Executor:
    """The executor ``name`` for ``target`` as the runtime runs it: contained when it runs target
    code, in namespaces unless ``isolation`` is ``none`` (``sandbox.isolation``; CapabilityError
    where the kernel refuses them); ``scratch`` is a
    directory its executions may write into (default: the system's temp; isolated, a temporary
    directory of its own, the only one they can write)."""
    if executor_class(name).in_process_target:
        if isolation == "namespaces":
            sandbox_isolation.require()
        return Sandbox(name, target, options, scratch=scratch, isolated=isolation == "namespaces")
    executor = engine(name, target, options)
    executor.scratch_dir = scratch
    return executor


__all__ = ["Executor", "RunResult", "names", "check_name", "create", "engine"]
