"""A harness directory: the builds ``symcc-ulfm build`` made of one fuzz harness, and its manifest
``harness.json``, the one thing ``launch --harness``, provenance and triage read of it.

The manifest names, for each build (:data:`BUILDS`), its file (a path relative to the directory),
its SHA-256, the compiler that made it (its version line) and the flags it was built with; the
dictionary and the seed directory, when there are any; how a build takes an input (``args``:
``[]`` for standard input, ``["@@"]`` for a file, AFL's notation).

Reading it (:func:`read`) trusts nothing of the directory: the manifest and every file it names
are opened without following a symlink, every path must stay inside the directory, and a build
whose SHA-256 is not the recorded one is refused (:class:`ProvenanceChanged`: it was rebuilt or
replaced after the manifest was written, so the campaign would not be running what was recorded).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from ..errors import ConfigError, ProvenanceChanged, TargetError

MANIFEST = "harness.json"
VERSION = 1
# afl: AFL++'s instrumented build (afl-fuzz's target, the campaign's coverage); cmplog: AFL++'s
# CmpLog build of the same harness (afl-fuzz -c); symcc: the SymCC build (the symcc executor);
# sanitizer: a plain build with AddressSanitizer and UndefinedBehaviorSanitizer (replay, triage)
BUILDS = ("afl", "cmplog", "symcc", "sanitizer")
_MAX_MANIFEST = 1024 * 1024
_READ = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Build:
    path: str  # relative to the harness directory
    sha256: str
    compiler: str  # the compiler's version line
    flags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Harness:
    """A harness directory as its manifest describes it (:func:`read`)."""

    root: Path
    name: str
    builds: dict[str, Build]
    args: list[str] = field(default_factory=list)  # how a build takes an input: [] stdin, ["@@"] a file
    dictionary: str | None = None  # relative path of an AFL -x dictionary
    seeds: str | None = None  # relative path of a directory of seeds, one input per file
    source: dict[str, Any] = field(default_factory=dict)  # what it was built from (script, sources, package)

    def path(self, build: str) -> Path:
        """The file of ``build``; TargetError when the directory has no such build."""
        if build not in self.builds:
            made = ", ".join(sorted(self.builds)) or "none"
            raise TargetError("harness", f"{self.root} has no {build} build (it has: {made}); "
                                         f"symcc-ulfm build makes the builds this machine's tools allow")
        return self.root / self.builds[build].path

    def file(self, relative: str | None) -> Path | None:
        return None if relative is None else self.root / relative

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "name": self.name, "args": self.args, "dictionary": self.dictionary,
                "seeds": self.seeds, "source": self.source,
                "builds": {name: asdict(build) for name, build in sorted(self.builds.items())}}


def sha256_file(path: Path) -> str:
    """The SHA-256 of a regular file, opened without following a symlink."""
    digest = hashlib.sha256()
    with _open_regular(path) as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write(harness: Harness) -> Path:
    """Write ``harness.json`` into ``harness.root`` (replacing one there) and return its path."""
    for name in harness.builds:
        _check_build_name(name)
    for relative in [b.path for b in harness.builds.values()] + [harness.dictionary, harness.seeds]:
        if relative is not None:
            _inside(harness.root, relative)
    path = harness.root / MANIFEST
    temp = path.with_name(f".{MANIFEST}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(harness.to_json(), indent=1, sort_keys=True) + "\n")
    os.replace(temp, path)
    return path


def read(root: Path | str) -> Harness:
    """The harness in directory ``root``: its manifest checked (ConfigError naming what is wrong),
    every build's file present, regular and of the recorded SHA-256 (ProvenanceChanged if not)."""
    root = Path(root).absolute()
    path = root / MANIFEST
    try:
        with _open_regular(path) as handle:
            raw = handle.read(_MAX_MANIFEST + 1)
    except FileNotFoundError:
        raise ConfigError("harness", f"{root} is no harness directory: no {MANIFEST} (symcc-ulfm build --out "
                                     f"{root} makes one)") from None
    if len(raw) > _MAX_MANIFEST:
        raise ConfigError("harness", f"{path}: larger than {_MAX_MANIFEST} bytes")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError("harness", f"{path}: not JSON ({error})") from None
    harness = _parse(root, data, path)
    for name, build in harness.builds.items():
        try:
            found = sha256_file(root / build.path)
        except FileNotFoundError:
            raise TargetError("harness", f"{path}: the {name} build {build.path} is missing") from None
        if found != build.sha256:
            raise ProvenanceChanged(f"{root / build.path}: the {name} build's SHA-256 is {found}, the manifest "
                                    f"records {build.sha256} (rebuilt or replaced since; run symcc-ulfm build again)")
    return harness


def _parse(root: Path, data: Any, path: Path) -> Harness:
    def bad(why: str) -> ConfigError:
        return ConfigError("harness", f"{path}: {why}")

    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise bad(f"expected a manifest of version {VERSION}")
    name, args, builds = data.get("name"), data.get("args", []), data.get("builds")
    if not isinstance(name, str) or not name:
        raise bad("no harness name")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise bad("args: expected a list of strings")
    if not isinstance(builds, dict) or not builds:
        raise bad("no builds")
    parsed = {}
    for build_name, entry in builds.items():
        try:
            _check_build_name(build_name)
        except ConfigError as error:
            raise bad(str(error)) from None
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) or \
                not isinstance(entry.get("sha256"), str) or not isinstance(entry.get("compiler", ""), str) or \
                not isinstance(entry.get("flags", []), list):
            raise bad(f"builds.{build_name}: expected path, sha256, compiler and flags")
        _inside(root, entry["path"])
        parsed[build_name] = Build(entry["path"], entry["sha256"], entry.get("compiler", ""),
                                   [str(f) for f in entry.get("flags", [])])
    optional = {}
    for key in ("dictionary", "seeds"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise bad(f"{key}: expected a relative path")
        optional[key] = None if value is None else str(_inside(root, value))
    source = data.get("source", {})
    if not isinstance(source, dict):
        raise bad("source: expected an object")
    return Harness(root, name, parsed, list(args), optional["dictionary"], optional["seeds"], source)


def _check_build_name(name: str) -> None:
    if name not in BUILDS:
        raise ConfigError("harness", f"unknown build {name!r}; expected one of {', '.join(BUILDS)}")


def _inside(root: Path, relative: str) -> PurePosixPath:
    """``relative`` as a path inside ``root``: not absolute, no ``..``, no symlink on the way."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise ConfigError("harness", f"{relative!r}: expected a path inside the harness directory {root}")
    here = root
    for part in pure.parts[:-1]:
        here = here / part
        if here.is_symlink():
            raise ConfigError("harness", f"{here}: a symlink inside the harness directory")
    return pure


@contextmanager
def _open_regular(path: Path) -> Iterator[BinaryIO]:
    """A regular file opened for reading without following a symlink."""
    try:
        fd = os.open(path, _READ)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ConfigError("harness", f"{path}: a symlink (never followed in a harness directory)") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError("harness", f"{path}: not a regular file")
        yield handle
