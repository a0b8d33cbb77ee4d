"""A comparison target as a cell runs and measures it: a Python function or a harness directory.

A protocol names a target as ``{"python": SPEC}`` (a built-in name, ``module:function`` or
``file.py:function``, as ``launch --target``; a relative file is taken from the working directory
of the study, the repository root for the shipped protocols), optionally with ``modules`` (the modules whose
branches count, as the concolic executor's option; default: the target's own) and ``seeds``
(hex strings; default: the target's own seeds, else one empty input); or as ``{"harness": NAME}``,
a directory made by ``symcc-ulfm build`` found as ``HARNESSES/NAME`` (``--harnesses``), whose
manifest's SHA-256 the study's provenance records.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..harness import directory
from ..harness.directory import Harness

PYTHON = "python"
BINARY = "binary"
MAX_SEED_BYTES = 1 << 20


@dataclass(frozen=True)
class StudyTarget:
    """``form`` is :data:`PYTHON` (``spec``, ``modules``, ``seeds``) or :data:`BINARY` (``harness``)."""

    name: str
    form: str
    spec: str | None = None
    modules: tuple[str, ...] = ()
    seeds: tuple[bytes, ...] = ()
    harness: Harness | None = None

    def seed_inputs(self) -> list[bytes]:
        """The inputs every system starts from (a Python target without seeds: one empty input)."""
        if self.form == PYTHON:
            return list(self.seeds) or [b""]
        folder = self.harness.file(self.harness.seeds)
        found = []
        if folder is not None and folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_SEED_BYTES:
                    found.append(path.read_bytes())
        return found or [b"\n"]

    def launch_args(self) -> list[str]:
        """``launch`` options that put a campaign on this target (the cell adds ``--seeds``)."""
        if self.form == BINARY:
            return ["--harness", str(self.harness.root)]
        args = ["--executor", "concolic", "--target", self.spec]
        if self.modules:
            args += ["--executor-option", f"modules={json.dumps(list(self.modules))}"]
        return args

    def manifest_sha256(self) -> str | None:
        """The SHA-256 of the harness manifest (it names every build's SHA-256); None for Python."""
        if self.harness is None:
            return None
        return hashlib.sha256((self.harness.root / directory.MANIFEST).read_bytes()).hexdigest()


def resolve(name: str, spec: dict, harnesses: Path | None) -> StudyTarget:
    """The target ``name`` of a (validated) protocol; a harness is read (and its builds checked) now."""
    if "harness" in spec:
        if harnesses is None:
            raise ConfigError("--harnesses", f"target {name!r} is the harness {spec['harness']!r}: name the "
                                             "directory holding the harness directories")
        return StudyTarget(name, BINARY, harness=directory.read(Path(harnesses) / spec["harness"]))
    seeds = tuple(bytes.fromhex(s) for s in spec.get("seeds", []))
    where, colon, function = spec["python"].rpartition(":")
    python = spec["python"]
    if colon and (where.endswith(".py") or "/" in where) and not os.path.isabs(where):
        python = f"{os.path.abspath(where)}:{function}"  # a file named from the study's working directory
    if not seeds:
        from ..targets import resolve_target

        seeds = tuple(resolve_target(python).seeds)
    return StudyTarget(name, PYTHON, spec=python, modules=tuple(spec.get("modules", [])), seeds=seeds)
