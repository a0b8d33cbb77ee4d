"""The package's layers (DESIGN.md §2), read from the source: no MPI, no job, milliseconds.

Imports are read from the source (every ``import``, lazy ones inside functions included), so
a cycle broken only by a late import still counts, and so does a rule broken only in a function:
no import cycle; ``core`` pure (no ``os``, ``time``, ``pathlib``, ``subprocess``, only ``core``
and ``errors`` of the package); ``store`` below every executor, runtime and host-side layer;
``runtime`` never imports ``mpi``; the oracle imports neither ``core`` nor ``store``; mpi4py only
under ``mpi/``; no two modules share a name; and no worker kind's capability (``executors.base``)
is read outside the registry and the contracts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "symcc_ulfm"


def modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's ``__init__``)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def imported(name: str, path: Path, is_package: bool, known: dict) -> set[str]:
    """The package's own modules that ``name`` imports."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                found.add(target)
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imported(name, path, is_package, known) for name, (path, is_package) in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")  # lazy: still an edge
    (package / "c.py").write_text("import pkg.a\nx = 1\n")
    (package / "d.py").write_text("from . import c\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_no_import_cycle_in_the_package():
    graph = import_graph(PACKAGE)
    assert "symcc_ulfm.launch.prepare" in graph and graph["symcc_ulfm.launch.prepare"]  # the graph is not empty
    assert cycles(graph) == []


def external_imports(path: Path) -> set[str]:
    """Top-level names of every absolute import in ``path`` (lazy ones included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def breaches(package: Path, layer: str, allowed: tuple[str, ...] = (), forbidden: tuple[str, ...] = ()) -> list[str]:
    """``module -> import`` for each import of the package's own modules by ``layer`` that is not
    under one of ``allowed`` (when given) or is under one of ``forbidden``."""
    name = package.name
    graph = import_graph(package)
    out = []
    for module, targets in sorted(graph.items()):
        if not (module == f"{name}.{layer}" or module.startswith(f"{name}.{layer}.")):
            continue
        for target in sorted(targets):
            rel = target[len(name) + 1:]
            inside = any(rel == a or rel.startswith(a + ".") for a in allowed)
            banned = any(rel == f or rel.startswith(f + ".") for f in forbidden)
            if (allowed and not inside) or banned:
                out.append(f"{module} -> {target}")
    return out


LAYER_RULES = [  # (layer, allowed, forbidden)
    ("core", ("core", "errors"), ()),
    ("store", (), ("executors", "runtime", "mpi", "launch", "tools", "cli", "evidence", "experiment", "gates", "compare")),
    ("runtime", (), ("mpi", "launch", "tools", "cli", "gates", "experiment")),
    ("evidence.oracle", (), ("core", "store", "runtime", "mpi", "executors", "launch")),
    ("executors", (), ("runtime", "mpi", "launch", "tools", "cli", "gates", "experiment", "harness")),
    ("harness", (), ("store", "runtime", "mpi", "launch", "tools", "cli", "gates", "experiment", "evidence")),
    ("compare", (), ("mpi", "cli", "gates")),
]


@pytest.mark.parametrize("layer, allowed, forbidden", LAYER_RULES, ids=[rule[0] for rule in LAYER_RULES])
def test_each_layer_imports_only_what_it_may(layer, allowed, forbidden):
    assert breaches(PACKAGE, layer, allowed, forbidden) == []


def test_the_layer_rules_find_breaches(tmp_path):
    package = tmp_path / "pkg"
    for sub in ("core", "store", "runtime", "mpi"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "core" / "a.py").write_text("from .. import errors\ndef f():\n    from ..store import b\n")
    (package / "store" / "b.py").write_text("from ..runtime import c\n")
    (package / "runtime" / "c.py").write_text("def g():\n    from ..mpi import d\n")
    (package / "mpi" / "d.py").write_text("")
    assert breaches(package, "core", ("core", "errors")) == ["pkg.core.a -> pkg.store.b"]
    assert breaches(package, "store", (), ("runtime",)) == ["pkg.store.b -> pkg.runtime.c"]
    assert breaches(package, "runtime", (), ("mpi",)) == ["pkg.runtime.c -> pkg.mpi.d"]


CONCOLIC = "executors.concolic"
CONCOLIC_LAYERS = ("expressions", "values", "models", "tracing", "hybrid")  # each imports only those before it


def test_the_concolic_engine_is_layered():
    """expressions <- values <- models <- tracing <- hybrid <- the executor and the search."""
    for i, layer in enumerate(CONCOLIC_LAYERS):
        later = tuple(f"{CONCOLIC}.{name}" for name in CONCOLIC_LAYERS[i + 1:])
        top = tuple(f"{CONCOLIC}.{name}" for name in ("executor", "search"))
        assert breaches(PACKAGE, f"{CONCOLIC}.{layer}", (), later + top) == [], layer


IMPURE = {"os", "time", "pathlib", "subprocess", "socket", "threading", "mpi4py", "random", "datetime"}


def test_the_core_is_pure():
    """No clock, file system, process or randomness: values in, decisions out."""
    found = {str(p.relative_to(PACKAGE)): sorted(external_imports(p) & IMPURE) for p in (PACKAGE / "core").rglob("*.py")}
    assert {k: v for k, v in found.items() if v} == {}


def test_no_two_modules_share_a_name():
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            names.setdefault(path.stem, []).append(str(path.relative_to(PACKAGE)))
    for package in (p for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists()):
        names.setdefault(package.name, []).append(str(package.relative_to(PACKAGE)) + "/")
    assert {k: v for k, v in names.items() if len(v) > 1} == {}


@pytest.mark.parametrize("module, forbidden", [
    ("symcc_ulfm.evidence.oracle.judge", ("symcc_ulfm.core", "symcc_ulfm.store")),
    ("symcc_ulfm.evidence.recompute", ("symcc_ulfm.core", "symcc_ulfm.store", "symcc_ulfm.evidence.oracle.judge")),
])
def test_checkers_do_not_import_the_runtime(module, forbidden):
    """What is loaded when the oracle and the second verifier are imported, not only what they name."""
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert not [m for m in loaded if m.startswith(forbidden)]


def mpi4py_imports_outside_mpi(package: Path) -> list[str]:
    """``file:line`` of every import of mpi4py outside ``package/mpi/``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.parent == package / "mpi":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found += [f"{path.relative_to(package)}:{node.lineno}" for n in names if n.split(".")[0] == "mpi4py"]
    return found


def test_the_mpi4py_finder_finds_imports(tmp_path):
    package = tmp_path / "pkg"
    (package / "mpi").mkdir(parents=True)
    (package / "mpi" / "ok.py").write_text("from mpi4py import MPI\n")
    (package / "a.py").write_text("def f():\n    import mpi4py.MPI\n")
    (package / "b.py").write_text("from mpi4py import MPI\n")
    assert mpi4py_imports_outside_mpi(package) == ["a.py:2", "b.py:1"]


def test_only_the_mpi_layer_imports_mpi4py():
    assert mpi4py_imports_outside_mpi(PACKAGE) == []


def test_the_notebook_side_never_initialises_mpi():
    """What a notebook kernel or ``launch`` imports must not load ``mpi4py.MPI`` (which initialises MPI)."""
    code = ("import sys, symcc_ulfm.cli.main, symcc_ulfm.launch.engines, symcc_ulfm.launch.prepare, symcc_ulfm.gates.netns.access; "
            "print(sorted(m for m in sys.modules if m.startswith('mpi4py.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


# What a worker kind's class says it needs (executors.base), and the flags they replaced: read only by
# the registry (executors/__init__.py), which the sandbox, the runtime and the host side ask.
CAPABILITIES = {"hosted", "measures_in_batches", "reaps_own_orphans", "uses_dictionary",
                "keeps_running_between_slices", "target_kind",
                "in_process_target", "batch_measure", "adopts_orphans", "takes_dictionary", "runs_between_slices",
                "family", "mutate"}
CONTRACTS = ("executors/__init__.py", "executors/base.py")


def capability_reads(package: Path) -> list[str]:
    """``file:line attribute`` of every attribute named like a capability (read or set) outside
    the registry and the contracts."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if str(path.relative_to(package)) in CONTRACTS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in CAPABILITIES:
                found.append(f"{path.relative_to(package)}:{node.lineno} {node.attr}")
    return found


def test_the_capability_finder_finds_reads(tmp_path):
    package = tmp_path / "pkg"
    (package / "executors").mkdir(parents=True)
    (package / "executors" / "__init__.py").write_text("def hosted(cls):\n    return cls.hosted\n")
    (package / "executors" / "base.py").write_text("class Target:\n    hosted = False\n")
    (package / "executors" / "afl.py").write_text("class Afl:\n    hosted = True\n")
    (package / "child.py").write_text("def f(executor):\n    executor.mutate = False\n    return executor.hosted\n")
    assert capability_reads(package) == ["child.py:2 mutate", "child.py:3 hosted"]


def test_no_capability_is_read_outside_the_registry_and_the_contracts():
    """The sandbox and the runtime ask the registry (``executors.hosted(kind)``, ...) or call the
    contract's methods; they never read a kind's class attributes."""
    assert capability_reads(PACKAGE) == []
