"""The documented rejections of standard-library parsers: the exceptions a stdlib function raises
by design to refuse an input, so that ``explore``/``launch --target plistlib:loads`` reports a
parser's *unexpected* exceptions as findings, not its ``InvalidFileException`` for every
malformed input.

One module per stdlib module (``<module>_errors.py``, after CrossHair's ``libimpl``: one file per
modelled module, each registering itself with :func:`register`), each citing where the Python 3.11
documentation or source says the exception is raised. :func:`expected_for` is what the
``concolic`` executor consults for a ``module:function`` target of the standard library when its
``expected_exceptions`` option is not given and ``stdlib_rejections`` is on (the default). Names
are ``module.Class`` (matched with ``isinstance``; builtins as ``builtins.ValueError``).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

_REGISTRY: dict[tuple[str, str], tuple[str, ...]] = {}  # (module, function or "*") -> exception names
_LOADED = False


def register(module: str, functions: tuple[str, ...], names: tuple[str, ...]) -> None:
    """``module``'s ``functions`` (``"*"``: all of them) reject inputs by raising ``names``."""
    for function in functions:
        _REGISTRY[(module, function)] = tuple(sorted(set(_REGISTRY.get((module, function), ())) | set(names)))


def _load() -> None:
    global _LOADED
    if not _LOADED:
        for info in pkgutil.iter_modules(__path__):
            if info.name.endswith("_errors"):
                importlib.import_module(f"{__name__}.{info.name}")
        _LOADED = True


def is_stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def expected_for(module: str, function: str) -> tuple[str, ...]:
    """The documented rejections of ``module:function`` (none when the registry has no entry)."""
    if not is_stdlib(module):
        return ()
    _load()
    return tuple(sorted(set(_REGISTRY.get((module, function), ())) | set(_REGISTRY.get((module, "*"), ()))))


def registered() -> dict[tuple[str, str], tuple[str, ...]]:
    """Every entry (the README lists them; the tests resolve each name)."""
    _load()
    return dict(_REGISTRY)
