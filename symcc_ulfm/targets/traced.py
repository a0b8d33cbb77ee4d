"""The modules a user's target is traced with by default, beside its own (``TargetInfo.modules``).

* An **atheris harness** says which code it wants covered: the modules it imports inside
  ``with atheris.instrument_imports():``. While such a harness loads, :func:`recording_atheris`
  wraps that context manager to record what was imported inside it (atheris's own one still
  runs, so the harness behaves as it does under atheris); the Python files among them are traced.
  ``atheris.instrument_all()`` and ``@atheris.instrument_func`` declare nothing here: name such
  code with the ``modules`` option.
* A function of an **installed package** (``module:function`` outside the standard library) is
  traced with the package's other modules loaded by the time it is resolved, as atheris's
  ``instrument_imports()`` around ``import package`` would cover them: the code of ``toml:loads`` is
  in ``toml.decoder``, not in ``toml/__init__``.

The ``modules`` option replaces these defaults.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

ATHERIS = "atheris"
_MARK = "instrument_imports"  # what a harness's source must say for atheris to be imported first
_DECLARED: dict[str, list[str]] = {}  # a harness's module name -> what it imported inside instrument_imports()


def python_modules(names: list[str], own: str | None) -> tuple[str, ...]:
    """Those of ``names`` that are loaded modules of Python source, other than ``own``, atheris's and ours."""
    out = []
    for name in names:
        module = sys.modules.get(name)
        top = name.partition(".")[0]
        if module is None or name == own or top in (ATHERIS, "symcc_ulfm"):
            continue
        if str(getattr(module, "__file__", None) or "").endswith(".py"):
            out.append(name)
    return tuple(sorted(out))


def package_modules(module: ModuleType) -> tuple[str, ...]:
    """The other loaded modules of ``module``'s top-level package, unless that is the standard library's."""
    top = module.__name__.partition(".")[0]
    if top in sys.stdlib_module_names or top == module.__name__ and not hasattr(module, "__path__"):
        return ()
    names = [name for name in list(sys.modules) if name == top or name.startswith(top + ".")]
    return python_modules(names, module.__name__)


def declared(module: str) -> list[str]:
    """What the harness ``module`` imported inside ``atheris.instrument_imports()`` when it loaded
    in this process (:func:`recording_atheris`)."""
    return _DECLARED.get(module, [])


@contextmanager
def recording_atheris(source: bytes, harness: str) -> Iterator[list[str]]:
    """While the target module ``harness`` loads, if its ``source`` mentions
    ``instrument_imports``: the list of the modules its own import statements inside
    ``atheris.instrument_imports()`` name, each package with its loaded submodules (those it
    brought in, also when another part of the process had loaded them first, which would hide
    them from atheris). Empty when atheris is not installed: the harness's own ``import atheris``
    then fails and says so. The caller files the list under the module's name (:func:`remember`),
    as a module loads once per process."""
    recorded: list[str] = []
    if _MARK.encode() not in source or importlib.util.find_spec(ATHERIS) is None:
        yield recorded
        return
    import atheris

    original = atheris.instrument_imports

    @contextmanager
    def recording(*args, **kwargs):
        named: list[str] = []
        plain = builtins.__import__

        def noting(name, globals=None, locals=None, fromlist=(), level=0):
            module = plain(name, globals, locals, fromlist, level)
            if level == 0 and (globals or {}).get("__name__") == harness:
                named.append(name)
                named.extend(f"{name}.{item}" for item in fromlist or () if isinstance(item, str))
            return module

        builtins.__import__ = noting
        try:
            with original(*args, **kwargs):
                yield
        finally:
            builtins.__import__ = plain
        loaded = list(sys.modules)
        for name in dict.fromkeys(named):
            recorded.extend(m for m in loaded if m == name or m.startswith(name + "."))

    atheris.instrument_imports = recording
    try:
        yield recorded
    finally:
        atheris.instrument_imports = original


def remember(module: str, recorded: list[str]) -> None:
    if recorded:
        _DECLARED[module] = list(recorded)
