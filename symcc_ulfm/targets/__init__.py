"""Targets: Python functions taking ``bytes``, built in or named by the user.

A target spec is one of

* a built-in name (``tlv``, ``pnglike``, ``tokenizer``, ``varint``, ``magic32``; see
  :func:`list_targets`), the default being :data:`DEFAULT_TARGET`;
* ``module:function`` (``function`` may be dotted, e.g. ``pkg.mod:Parser.parse``);
* ``path/file.py:function`` (the file is loaded as a fresh module).

Built-in targets ship seed inputs of the lengths they need, the string their parser returns
when an input reaches the deepest branch (``deep``: tests and benchmarks compare a contained
measurement's return value with it, so target code never runs in their process), the
exceptions they raise by design to reject an input (``expected``: the default of the
``concolic`` executor's ``expected_exceptions``), and at least one documented bug behind their
deep branches (``BUGS`` in each module), which a campaign should report as a finding.
Anything that cannot be resolved raises :class:`~symcc_ulfm.errors.TargetError` (exit code 2).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from ..errors import TargetError
from . import traced

DEFAULT_TARGET = "tlv"
_BUILTIN = ("tlv", "pnglike", "tokenizer", "varint", "magic32", "bundle")
_FORMS = "a built-in name ({}), module:function or path/file.py:function".format(", ".join(_BUILTIN))


@dataclass(frozen=True)
class TargetInfo:
    """A resolved target.

    ``source_path`` is the file whose SHA-256 enters the executor identity (the file defining
    the function); ``files`` are the ``co_filename`` values traced for coverage.
    """

    spec: str
    function: Callable[[bytes], object]
    description: str
    seeds: tuple[bytes, ...]
    deep: str | None
    source_path: str
    files: tuple[str, ...]
    builtin: bool
    expected: tuple[str, ...] = ()
    bugs: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()  # other modules whose code the target runs and that are traced with it

    @property
    def source_sha256(self) -> str:
        with open(self.source_path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    @property
    def entry(self) -> str:
        return f"{self.function.__module__}:{self.function.__qualname__}"


def names() -> list[str]:
    return list(_BUILTIN)


def _builtin(name: str) -> TargetInfo:
    module = importlib.import_module(f"{__name__}.{name}")
    path = os.path.abspath(module.__file__)
    return TargetInfo(name, module.parse, module.DESCRIPTION, tuple(module.SEEDS), module.DEEP, path,
                      (module.parse.__code__.co_filename,), True, tuple(module.EXPECTED), tuple(module.BUGS),
                      tuple(getattr(module, "MODULES", ())))


def list_targets() -> list[dict]:
    """Name, description, seed lengths and entry point of every built-in target."""
    out = []
    for name in _BUILTIN:
        info = _builtin(name)
        out.append({"name": name, "description": info.description, "seed_lengths": [len(s) for s in info.seeds],
                    "entry": info.entry, "expected_exceptions": list(info.expected), "bugs": list(info.bugs)})
    return out


def _fail(spec: str, why: str) -> TargetError:
    return TargetError("target", f"cannot resolve {spec!r}: {why}; expected {_FORMS}")


def _file_module(path: str) -> str:
    """The module name a target file is loaded under (one per absolute path)."""
    return "symcc_ulfm_target_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]


def _load_file(spec: str, path: str) -> ModuleType:
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise _fail(spec, f"no such file {path!r}")
    name = _file_module(full)
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, full)
    if loader_spec is None or loader_spec.loader is None:
        raise _fail(spec, f"{path!r} is not a loadable Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except SystemExit as exc:  # a BaseException: sys.exit(0) at import must not look like success
        del sys.modules[name]
        raise _fail(spec, f"loading {path!r} called sys.exit({exc.code!r})") from None
    except Exception as exc:
        del sys.modules[name]
        raise _fail(spec, f"loading {path!r} raised {type(exc).__name__}: {exc}") from exc
    return module


def _load_module(spec: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise _fail(spec, f"cannot import module {name!r} ({exc})") from exc
    except SystemExit as exc:
        raise _fail(spec, f"importing {name!r} called sys.exit({exc.code!r})") from None
    except Exception as exc:
        raise _fail(spec, f"importing {name!r} raised {type(exc).__name__}: {exc}") from exc


def resolve_target(spec: str | None) -> TargetInfo:
    """Resolve a target spec (None means :data:`DEFAULT_TARGET`)."""
    spec = DEFAULT_TARGET if spec is None else str(spec).strip()
    if not spec:
        raise _fail(spec, "empty target")
    if ":" not in spec:
        if spec in _BUILTIN:
            return _builtin(spec)
        raise _fail(spec, "not a built-in target")
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise _fail(spec, "both sides of ':' must be non-empty")
    is_file = where.endswith(".py") or os.sep in where or "/" in where
    with traced.recording_atheris(_source_of(where, is_file), _file_module(where) if is_file else where) as recorded:
        module = _load_file(spec, where) if is_file else _load_module(spec, where)
    traced.remember(module.__name__, recorded)
    function: object = module
    for part in attr.split("."):
        try:
            function = getattr(function, part)
        except AttributeError:
            raise _fail(spec, f"{where!r} has no attribute {attr!r}") from None
    if not callable(function):
        raise _fail(spec, f"{attr!r} is not callable")
    code = getattr(function, "__code__", None)
    source = code.co_filename if code is not None else getattr(module, "__file__", None)
    if not source or not os.path.isfile(source):
        raise _fail(spec, f"{attr!r} has no Python source file to digest")
    files = {source, os.path.abspath(source)}
    summary = (getattr(function, "__doc__", None) or "user target").strip().splitlines()
    modules = traced.python_modules(traced.declared(module.__name__), module.__name__)
    if not is_file:
        modules += traced.package_modules(module)
    return TargetInfo(spec, function, summary[0] if summary else "user target", (), None,
                      os.path.abspath(source), tuple(sorted(files)), False, modules=tuple(dict.fromkeys(modules)))


def _source_of(where: str, is_file: bool) -> bytes:
    """The source of the target's module before it is loaded (b"" where it cannot be read so)."""
    try:
        if is_file:
            path = os.path.abspath(where)
        else:
            found = importlib.util.find_spec(where)
            path = found.origin if found is not None and found.origin else ""
        with open(path, "rb") as handle:
            return handle.read()
    except (OSError, ImportError, ValueError):
        return b""

__all__ = ["DEFAULT_TARGET", "TargetInfo", "list_targets", "names", "resolve_target"]
