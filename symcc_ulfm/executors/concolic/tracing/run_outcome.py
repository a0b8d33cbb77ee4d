"""From how a traced call ended to an execution :class:`~...outcome.Outcome`.

Which exceptions a target raises by design (its documented way to reject an input) is the
user's choice: ``expected_exceptions`` names exception classes as ``Name`` (matched by class
name anywhere in the exception's MRO, e.g. ``ValueError``) or ``module.Name`` (imported and
matched with ``isinstance``, e.g. ``plistlib.InvalidFileException``). An expected exception is
an ``ok`` outcome; by default none is expected, and every uncaught exception is a finding.
``MemoryError`` is ``oom`` (the sandbox runs the target under ``RLIMIT_AS``), the tracer's time
limit is ``hang``.
"""

from __future__ import annotations

import importlib
import re

from ....errors import PolicyError
from ...outcome import OK, Outcome, clip, from_exception
from ..expressions.path import ExecTimeout
from .tracer import Outcome as Ended

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def parse_expected(value) -> tuple[str, ...]:
    """Option value (a list of names or one comma-separated string) -> sorted, unique names."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise PolicyError("executor.options.expected_exceptions", f"{value!r}: expected names like ValueError,json.JSONDecodeError")
    names = sorted({i.strip() for i in items if i.strip()})
    for name in names:
        if not _NAME.fullmatch(name):
            raise PolicyError("executor.options.expected_exceptions", f"{name!r} is not an exception class name")
    return tuple(names)


class Expected:
    """The exception classes a target raises by design."""

    def __init__(self, names: tuple[str, ...]):
        self.plain = frozenset(n for n in names if "." not in n)
        self.classes: tuple[type, ...] = tuple(_resolve(n) for n in names if "." in n)

    def __contains__(self, exc: BaseException) -> bool:
        if isinstance(exc, self.classes):
            return True
        return any(cls.__name__ in self.plain for cls in type(exc).__mro__)


def _resolve(name: str) -> type:
    module_name, _, attr = name.rpartition(".")
    try:
        value = importlib.import_module(module_name)
        for part in attr.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise PolicyError("executor.options.expected_exceptions", f"cannot resolve {name!r}: {exc}") from None
    if not (isinstance(value, type) and issubclass(value, BaseException)):
        raise PolicyError("executor.options.expected_exceptions", f"{name!r} is not an exception class")
    return value


def classify(ended: Ended, files: frozenset[str], expected: Expected) -> Outcome:
    if ended.kind == "return":
        return OK
    exc = ended.exc
    if ended.kind == "timeout" or isinstance(exc, ExecTimeout):
        return from_exception("hang", exc, files)
    if isinstance(exc, MemoryError):
        return from_exception("oom", exc, files)
    if exc in expected:
        return Outcome("ok", "", clip(f"expected {type(exc).__name__}", 200))
    return from_exception("exception", exc, files)
