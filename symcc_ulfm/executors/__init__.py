"""The registry of worker kinds: one place that maps a name to its class, and the one reader of
the classes' capabilities (``base``).

A campaign has one *executor* (:data:`_EXECUTORS`: an analysis kind, ``base.Executor``) and may
add *fuzzers* beside it (:data:`_FUZZERS`: worker kinds leased time slices, ``base.Fuzzer``). The
runtime, the sandbox and the host side ask what a kind needs through this module's functions
(:func:`is_fuzzer`, :func:`hosted`, :func:`measures_in_batches`, :func:`reaps_own_orphans`,
:func:`keeps_running_between_slices`, :func:`varies_by_position`, :func:`uses_dictionary`), never
the class itself.
Implementations are imported lazily so that a ``simulate`` campaign never imports z3.
:func:`create` is what the runtime uses: a kind whose target code runs in its process
(``hosted``) comes back contained in a sandbox (:class:`~.sandbox.contained.SandboxedExecutor` or
:class:`~.sandbox.contained.SandboxedFuzzer`, the contract it hosts). :func:`engine` builds the kind
itself, in this process: the sandbox child and the engine's unit tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import PolicyError
from .base import Executor, Fuzzer, RunResult, Target
from .dictionary import OPTION as DICTIONARY
from .sandbox import isolation as sandbox_isolation
from .sandbox.contained import SandboxedExecutor, SandboxedFuzzer

_EXECUTORS: dict[str, str] = {  # a campaign's executor: one lease analyzes one input
    "simulate": "symcc_ulfm.executors.simulate:SimulateExecutor",
    "concolic": "symcc_ulfm.executors.concolic:ConcolicExecutor",
    "symcc": "symcc_ulfm.executors.symcc.adapter:SymccExecutor",
    "native": "symcc_ulfm.executors.native.concrete:NativeExecutor",  # a binary campaign without SymCC
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


def _class_of(name: str) -> type[Target]:
    """The class of an executor or a fuzzer worker kind."""
    if name not in _REGISTRY:
        check_name(name)
    module_name, _, attr = _REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def is_fuzzer(name: str) -> bool:
    """Whether worker kind ``name`` fuzzes in time slices (``core.slices``, ``base.Fuzzer``) instead
    of analyzing one input per lease."""
    return name in _FUZZERS


def hosted(name: str) -> bool:
    """Whether kind ``name`` runs target code in its process: the runtime hosts it in a sandbox."""
    return _class_of(name).hosted


def measures_in_batches(name: str) -> bool:
    """Whether kind ``name`` measures a chunk of inputs as one batch (``base.Target.measure_many``)."""
    return _class_of(name).measures_in_batches


def reaps_own_orphans(name: str) -> bool:
    """Whether kind ``name`` kills what its targets leave behind itself (``base.Target.reaps_own_orphans``)."""
    return _class_of(name).reaps_own_orphans


def keeps_running_between_slices(name: str) -> bool:
    """Whether fuzzer kind ``name`` goes on fuzzing between its slices (``base.Fuzzer``); an analysis
    kind never runs between its leases."""
    return is_fuzzer(name) and _class_of(name).keeps_running_between_slices


def varies_by_position(name: str) -> bool:
    """Whether each instance of fuzzer kind ``name`` takes settings of its own by its position among
    the campaign's (:func:`at_position`)."""
    return is_fuzzer(name) and _class_of(name).varies_by_position


def at_position(name: str, options: Mapping[str, Any] | None, position: tuple[int, int]) -> dict[str, Any]:
    """A campaign's ``executor_options`` for the instance of kind ``name`` at ``position`` (index,
    count) among the campaign's: ``position`` added to the kind's own options."""
    options = dict(options or {})
    own = options.get(name) or {}
    if not isinstance(own, dict):
        raise PolicyError(f"executor_options.{name}", f"{own!r}: expected an object of {name}'s own options")
    return {**options, name: {**own, "position": list(position)}}


def uses_dictionary(kinds: tuple[str, ...]) -> bool:
    """Whether any of ``kinds`` uses a ``--dictionary``."""
    return any(_class_of(kind).uses_dictionary for kind in kinds if kind in _REGISTRY)


def check_kinds(executor: str, slots: tuple[str, ...]) -> None:
    """Refuse (PolicyError naming ``worker_kinds``) worker kinds a campaign of ``executor`` cannot
    run: unknown names, a second analysis kind, a fuzzer for another kind of target."""
    targets = _class_of(check_name(executor)).target_kind
    for kind in dict.fromkeys(slots):
        if kind not in _REGISTRY:
            raise PolicyError("worker_kinds", f"unknown worker kind {kind!r}; expected one of "
                                              f"{', '.join(sorted(_REGISTRY))}")
        if kind not in _FUZZERS and kind != executor:
            raise PolicyError("worker_kinds", f"{kind!r} analyzes inputs as the executor does; a campaign has one "
                                              f"analysis kind, its executor {executor!r} (add fuzzers beside it)")
        fuzzes = _class_of(kind).target_kind
        if fuzzes != targets:
            raise PolicyError("worker_kinds", f"{kind!r} fuzzes {fuzzes} targets; the executor {executor!r} "
                                              f"runs {targets} targets")


def options_for(name: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """What executor ``name`` is given of a campaign's ``executor_options``: the shared ones (those
    of the target: a binary's arguments, a Python target's modules) and its own, which a key named
    after it holds (``{"afl": {"dictionary": ...}}``); the other kinds' own options are not its.
    The shared ``dictionary`` (``launch --dictionary``) goes only to the kinds that take one."""
    options = dict(options or {})
    own = options.get(name)
    shared = {k: v for k, v in options.items() if k not in _REGISTRY}
    if name in _REGISTRY and not _class_of(name).uses_dictionary:
        shared.pop(DICTIONARY, None)
    if own is None:
        return shared
    if not isinstance(own, dict):
        raise PolicyError(f"executor_options.{name}", f"{own!r}: expected an object of {name}'s own options")
    return {**shared, **own}


def engine(name: str, target: str | None = None, options: Mapping[str, Any] | None = None) -> Target:
    """The kind ``name`` for ``target``, in this process (raises ConfigError subclasses on bad input)."""
    return _class_of(name)(target=target, options=options_for(name, options))


def create(name: str, target: str | None = None, options: Mapping[str, Any] | None = None,
           scratch: Path | None = None, isolation: str = "namespaces") -> Target:
    """The kind ``name`` for ``target`` as the runtime runs it (an :class:`Executor` or a
    :class:`Fuzzer`): contained when it runs target code (:func:`hosted`), in namespaces unless
    ``isolation`` is ``none`` (``sandbox.isolation``; CapabilityError where the kernel refuses
    them); ``scratch`` is a directory its executions may write into (default: the system's temp;
    isolated, a temporary directory of its own, the only one they can write)."""
    if hosted(name):
        if isolation == "namespaces":
            sandbox_isolation.require()
        contained = SandboxedFuzzer if is_fuzzer(name) else SandboxedExecutor
        return contained(name, target, options, scratch=scratch, isolated=isolation == "namespaces")
    executor = engine(name, target, options)
    executor.scratch_dir = scratch
    return executor


__all__ = ["Executor", "Fuzzer", "RunResult", "Target", "names", "check_name", "create", "engine"]
