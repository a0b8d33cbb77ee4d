"""``symcc-ulfm build``: every build of one libFuzzer harness that this machine's tools allow, each
in its own directory of the output, the dictionary and the seeds beside them, and the manifest
``harness.json`` (:mod:`.directory`) naming them.

A harness comes as an OSS-Fuzz build script (:class:`Script`), run once per build with bash in
a fresh copy of its source tree (``SRC``; the user's is never written, and no build reuses what
another built there), in its ``WORKDIR`` as an OSS-Fuzz Dockerfile names one, with ``CC``, ``CXX``, ``CFLAGS``, ``CXXFLAGS``, ``LIB_FUZZING_ENGINE`` (and
FuzzBench's ``FUZZER_LIB``; ``-lFuzzingEngine`` links it too), ``FUZZING_ENGINE``, ``SANITIZER``, ``SRC``, a fresh ``WORK`` and an
``OUT`` (the build's directory) set as OSS-Fuzz sets them; the harness is the executable it leaves
in ``OUT`` (``name`` picks one of several), and ``OUT/NAME.dict`` and ``OUT/NAME_seed_corpus.zip``
are its dictionary and seeds. Or as its sources (:class:`Sources`): each compiled (``.cc``,
``.cpp``, ``.cxx``: the C++ compiler) and linked with the C++ compiler, as OSS-Fuzz links.

The builds (:data:`.directory.BUILDS`): ``afl``, AFL++'s instrumentation with its libFuzzer driver
(:mod:`.toolchain`), during which ``AFL_LLVM_DICT2FILE`` collects the harness's compared
constants; ``cmplog``, the same with ``AFL_LLVM_CMPLOG=1``; ``symcc``, SymCC's wrappers; and
``sanitizer``, clang with AddressSanitizer and UndefinedBehaviorSanitizer (a report is fatal). The
last two are linked with ``driver.c``, our ``main`` for ``LLVMFuzzerTestOneInput``, which takes
an input as AFL's driver does given ``-``: from standard input, so every build's ``args`` is
``["-"]``. (AFL++ 4.04c's driver run with no argument reads no input, it prints a banner and
exits 0; given a file, ``@@``, its fork server dies under afl-fuzz.) A build without its tools
is skipped, naming them; a build that fails is reported with its compiler's last lines (its log is
``logs/BUILD.log``), the others are kept; without an ``afl`` build there is nothing to fuzz
(:meth:`Made.check`: :class:`BuildFailed`, once the manifest of what was built is written).

The dictionary (``NAME.dict``, AFL's ``-x`` format) is the harness's own tokens, then those
DICT2FILE extracted, each once; the seeds (``seeds/``) are the seed corpus unpacked by
:mod:`.seed_corpus`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BuildFailed, ConfigError
from ..executors.dictionary import MAX_TOKENS, afl_text, parse, read_dictionary
from . import directory, seed_corpus, toolchain

ARGS = ["-"]
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++", ".C")
# OSS-Fuzz's flags for a fuzzing build, and its sanitizer build's with both sanitizers made fatal
BASE_FLAGS = ("-O1", "-fno-omit-frame-pointer", "-gline-tables-only", "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION")
SANITIZER_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                   "-fno-sanitize-recover=undefined", "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION")
DRIVER = Path(__file__).with_name("driver.c")
LOG_LINES = 12
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
_ELF = b"\x7fELF"
_ENTRY = b"LLVMFuzzerTestOneInput"
# OSS-Fuzz's FUZZING_ENGINE and SANITIZER of each build ("none": a standalone main, ours)
_OSS_FUZZ = {"afl": ("afl", "none"), "cmplog": ("afl", "none"), "symcc": ("none", "none"),
             "sanitizer": ("none", "address")}


@dataclass(frozen=True)
class Script:
    """An OSS-Fuzz build script, the source tree it builds (``$SRC``) and where in that tree it runs
    (an OSS-Fuzz Dockerfile's ``WORKDIR``: ``$SRC`` itself unless given)."""

    path: Path
    src: Path
    workdir: Path | None = None


@dataclass(frozen=True)
class Sources:
    """A harness's source files, compiled and linked per build."""

    files: tuple[Path, ...]
    dictionary: Path | None = None  # the harness's own tokens


@dataclass
class Made:
    """What :func:`build` made: the harness whose manifest it wrote (None until then), the builds
    not made and why, the dictionary's tokens by origin, the seeds."""

    out: Path
    harness: directory.Harness | None
    skipped: dict[str, str] = field(default_factory=dict)  # build -> the tools it lacks
    failed: dict[str, str] = field(default_factory=dict)  # build -> why, ending with the compiler's lines
    tokens: dict[str, int] = field(default_factory=dict)  # harness, extracted, written
    seeds: seed_corpus.Unpacked | None = None
    notes: list[str] = field(default_factory=list)

    def check(self) -> None:
        """BuildFailed when the ``afl`` build failed: the builds made are kept, but nothing can be fuzzed."""
        if "afl" in self.failed:
            raise BuildFailed("afl build", f"{self.failed['afl']}\n(the builds made are kept in "
                                           f"{self.out}; without an afl build there is nothing to fuzz)")

    def to_json(self) -> dict:
        return {"out": str(self.out), "harness": None if self.harness is None else self.harness.to_json(),
                "skipped": self.skipped, "failed": self.failed, "tokens": self.tokens, "notes": self.notes,
                "seeds": None if self.seeds is None else {"seeds": self.seeds.seeds, "skipped": self.seeds.skipped}}


@dataclass(frozen=True)
class _Recipe:
    """One build: its compilers, its flags and how it links a fuzzing engine."""

    build: str
    compilers: toolchain.Compilers
    cflags: tuple[str, ...]

    def environment(self, engine: Sequence[str], extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("AFL_LLVM_CMPLOG", "AFL_LLVM_DICT2FILE")}
        flags, linked = " ".join(self.cflags), " ".join(engine)
        engine_name, sanitizer = _OSS_FUZZ[self.build]
        env.update(CC=self.compilers.cc, CXX=self.compilers.cxx, CFLAGS=flags, CXXFLAGS=flags,
                   LIB_FUZZING_ENGINE=linked, FUZZER_LIB=linked, FUZZING_ENGINE=engine_name, SANITIZER=sanitizer,
                   **self.compilers.env, **extra)
        return env

    def recorded(self) -> list[str]:
        """The flags the manifest records: the build's variables, the compile flags, the engine."""
        engine = self.compilers.engine or (f"{DRIVER.name} (symcc-ulfm's)",)
        return [f"{k}={v}" for k, v in sorted(self.compilers.env.items())] + list(self.cflags) + \
            [f"LIB_FUZZING_ENGINE={' '.join(engine)}"]


def build(out: Path, harness: Script | Sources, *, name: str | None = None, cflags: Sequence[str] = (),
          symcc: str | None = None) -> Made:
    """Make every build of ``harness`` this machine allows into the new directory ``out`` and
    write its manifest (module docstring); BuildFailed when no build succeeded (:meth:`Made.check`:
    whether the ``afl`` build did)."""
    if name is not None and not _NAME.fullmatch(name):
        raise ConfigError("--name", f"{name!r}: expected a file name of letters, digits and ._+-")
    harness = _checked(harness)
    if isinstance(harness, Sources) and name is None:
        name = harness.files[0].stem
    tools = toolchain.find(symcc)
    if isinstance(tools["afl"], str):
        raise ConfigError("afl", f"no AFL++ build can be made here, so nothing to fuzz: {tools['afl']}")
    out = _new_directory(out)
    made = Made(out, None)
    (out / "logs").mkdir()
    with tempfile.TemporaryDirectory(prefix="symcc-ulfm-build-") as temp:
        extracted = Path(temp) / "dict2file"
        builds, name = _each(made, tools, harness, name, tuple(cflags), Path(temp), extracted)
        first = out / next(iter(builds))
        own = harness.dictionary if isinstance(harness, Sources) else first / f"{name}.dict"
        dictionary = _dictionary(made, own, extracted, out / f"{name}.dict")
    seeds = None
    if isinstance(harness, Script) and (first / f"{name}_seed_corpus.zip").exists():
        try:
            made.seeds = seed_corpus.unpack(first / f"{name}_seed_corpus.zip", out / "seeds")
            seeds = "seeds"
        except ConfigError as error:
            made.notes.append(f"no seeds: {error}")
    not_built = {**{b: f"skipped: {why}" for b, why in made.skipped.items()},
                 **{b: _summary(why) for b, why in made.failed.items()}}
    made.harness = directory.Harness(out, name, builds, list(ARGS), dictionary, seeds,
                                     {**_source(harness), "cflags": list(cflags), "not_built": not_built})
    directory.write(made.harness)
    return made


def _each(made: Made, tools: dict[str, toolchain.Compilers | str], harness: Script | Sources, name: str | None,
          cflags: tuple[str, ...], temp: Path, extracted: Path) -> tuple[dict[str, directory.Build], str]:
    """Every build in :data:`.directory.BUILDS` order (``afl`` first: DICT2FILE writes ``extracted``),
    those not made noted in ``made``; the builds and the harness's name. BuildFailed when none was made."""
    builds: dict[str, directory.Build] = {}
    for build_name in directory.BUILDS:
        compilers = tools[build_name]
        if isinstance(compilers, str):
            made.skipped[build_name] = compilers
            continue
        recipe = _Recipe(build_name, compilers, (*(SANITIZER_FLAGS if build_name == "sanitizer" else BASE_FLAGS),
                                                 *cflags))
        extra = {"AFL_LLVM_DICT2FILE": str(extracted)} if build_name == "afl" else {}
        (temp / build_name).mkdir()
        try:
            name = _make(recipe, harness, made.out, name, temp / build_name, extra)
        except BuildFailed as error:
            made.failed[build_name] = str(error).partition(": ")[2]  # without "BUILD build: "
            continue
        path = f"{build_name}/{name}"
        builds[build_name] = directory.Build(path, directory.sha256_file(made.out / path), compilers.version,
                                             recipe.recorded())
    if not builds or name is None:
        raise BuildFailed("build", "every build failed:\n" + "\n".join(f"{b}: {why}" for b, why in
                                                                      made.failed.items()))
    return builds, name


def _make(recipe: _Recipe, harness: Script | Sources, out: Path, name: str | None, scratch: Path,
          extra: dict[str, str]) -> str:
    """Run one build into ``out/BUILD/``; the harness's name. BuildFailed naming the build and why."""
    log = out / "logs" / f"{recipe.build}.log"
    target = out / recipe.build
    target.mkdir()
    engine = _engine(recipe, scratch / "engine", log, extra)
    env = recipe.environment(engine, extra)
    env["LIBRARY_PATH"] = os.pathsep.join([str(scratch / "engine"), *filter(None, [env.get("LIBRARY_PATH")])])
    if isinstance(harness, Script):
        src, work = scratch / "src", scratch / "work"
        try:  # never through a link; not an --out inside --src
            shutil.copytree(harness.src, src, symlinks=True, ignore=lambda at, names: [
                n for n in names if Path(at, n) == out])
        except OSError as error:
            raise ConfigError("--src", f"{harness.src}: cannot be copied for the {recipe.build} build ({error})") \
                from None
        work.mkdir()
        env.update(SRC=str(src), WORK=str(work), OUT=str(target))
        script = src / harness.path.relative_to(harness.src) if harness.path.is_relative_to(harness.src) \
            else harness.path
        _run(["bash", "-eu", str(script)], recipe, log, env, cwd=src / harness.workdir.relative_to(harness.src))
        return _pick(target, name, recipe.build)
    objects = []
    for number, source in enumerate(harness.files):
        compiler = recipe.compilers.cxx if source.suffix in CXX_SUFFIXES else recipe.compilers.cc
        objects.append(str(scratch / f"{number}-{source.stem}.o"))
        _run([compiler, *recipe.cflags, "-c", str(source), "-o", objects[-1]], recipe, log, env)
    _run([recipe.compilers.cxx, *recipe.cflags, *objects, *engine, "-o", str(target / name)], recipe, log, env)
    return name


def _engine(recipe: _Recipe, where: Path, log: Path, extra: dict[str, str]) -> tuple[str, ...]:
    """What links the build's fuzzing engine: AFL++'s driver, or ours compiled for the build into
    an archive; either also as ``where/libFuzzingEngine.a``, found through ``LIBRARY_PATH`` by a
    script that links ``-lFuzzingEngine`` (OSS-Fuzz's older convention)."""
    where.mkdir()
    legacy = where / "libFuzzingEngine.a"
    if recipe.compilers.engine is not None:
        if Path(recipe.compilers.engine[0]).is_file():
            shutil.copyfile(recipe.compilers.engine[0], legacy)
        return recipe.compilers.engine
    env = recipe.environment((), extra)
    _run([recipe.compilers.cc, *recipe.cflags, "-c", str(DRIVER), "-o", str(where / "driver.o")], recipe, log, env)
    _run(["ar", "rcs", str(legacy), str(where / "driver.o")], recipe, log, env)
    return (str(legacy),)


def _run(command: list[str], recipe: _Recipe, log: Path, env: dict[str, str], cwd: Path | None = None) -> None:
    with open(log, "ab") as handle:
        handle.write(f"$ {shlex.join(command)}\n".encode())
        handle.flush()
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                  env=env, cwd=cwd)
        except OSError as error:
            raise BuildFailed(f"{recipe.build} build", f"{command[0]}: {error.strerror}") from None
    if done.returncode != 0:
        lines = log.read_bytes().decode("utf-8", "replace").splitlines()[-LOG_LINES:]
        raise BuildFailed(f"{recipe.build} build", f"{Path(command[0]).name} exited {done.returncode}; the last "
                          f"lines of {log}:\n" + "\n".join(f"    {line}" for line in lines))


def _summary(why: str) -> str:
    """A failed build's reason in one line for the manifest: the first line and the log's last."""
    lines = [line.strip() for line in why.splitlines() if line.strip()]
    return lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"


def _pick(target: Path, name: str | None, build: str) -> str:
    """The harness the script left in ``target`` (OUT): ``name``, or the one executable there that
    defines ``LLVMFuzzerTestOneInput``."""
    found = sorted(entry.name for entry in os.scandir(target) if _is_harness(Path(entry.path)))
    if name is not None:
        if name not in found:
            raise BuildFailed(f"{build} build", f"the script left no harness {name} in OUT (it left: "
                                                f"{', '.join(found) or 'none'})")
        return name
    if len(found) != 1:
        left = ", ".join(found) or "no executable defining LLVMFuzzerTestOneInput"
        raise BuildFailed(f"{build} build", f"the script left {left} in OUT; --name picks one")
    if not _NAME.fullmatch(found[0]):
        raise BuildFailed(f"{build} build", f"the harness {found[0]!r} has a name that is no plain file name")
    return found[0]


def _is_harness(path: Path) -> bool:
    """A regular executable ELF file (never through a symlink) that mentions ``LLVMFuzzerTestOneInput``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) and info.st_mode & 0o111) or handle.read(4) != _ELF:
            return False
        tail = b""
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            if _ENTRY in tail + chunk:
                return True
            tail = chunk[-len(_ENTRY):]
    return False


def _dictionary(made: Made, own: Path | None, extracted: Path, out: Path) -> str | None:
    """The harness's tokens, then those DICT2FILE extracted, each once, written to ``out`` in AFL's
    ``-x`` format; its name in the harness directory, or None when there is no token."""
    tokens: dict[bytes, None] = {}
    if own is not None and (own.exists() or own.is_symlink()):
        try:
            tokens.update(dict.fromkeys(read_dictionary(own, "dictionary").tokens))
        except ConfigError as error:
            made.notes.append(f"the harness's dictionary is not used: {error}")
    made.tokens["harness"] = len(tokens)
    lines = extracted.read_bytes().split(b"\n") if extracted.exists() else []
    found: dict[bytes, None] = {}
    for number, line in enumerate(lines, 1):
        try:
            found.update(dict.fromkeys(parse(line, f"AFL_LLVM_DICT2FILE:{number}")))
        except ConfigError as error:
            made.notes.append(f"an extracted token is left out: {error}")
    made.tokens["extracted"] = len(found)
    tokens.update(found)
    if len(tokens) > MAX_TOKENS:
        made.notes.append(f"{len(tokens)} tokens: the first {MAX_TOKENS} are kept")
    kept = tuple(tokens)[:MAX_TOKENS]
    made.tokens["written"] = len(kept)
    if not kept:
        return None
    out.write_bytes(afl_text(kept))
    return out.name


def _source(harness: Script | Sources) -> dict:
    """What the manifest records of what the harness was built from."""
    if isinstance(harness, Script):
        return {"script": str(harness.path), "script_sha256": directory.sha256_file(harness.path),
                "src": str(harness.src), "workdir": str(harness.workdir)}
    return {"sources": {str(f): directory.sha256_file(f) for f in harness.files},
            "dictionary": None if harness.dictionary is None else str(harness.dictionary)}


def _checked(harness: Script | Sources) -> Script | Sources:
    """``harness`` with absolute paths, each there; ConfigError naming one that is not."""
    if isinstance(harness, Script):
        if not harness.path.is_file():
            raise ConfigError("--script", f"{harness.path}: no such file (an OSS-Fuzz build script)")
        if not harness.src.is_dir():
            raise ConfigError("--src", f"{harness.src}: no such directory (the script's $SRC)")
        src = harness.src.absolute()
        workdir = src if harness.workdir is None else (src / harness.workdir).absolute()
        if not (workdir.is_dir() and workdir.is_relative_to(src)) or ".." in workdir.relative_to(src).parts:
            raise ConfigError("--workdir", f"{harness.workdir}: expected a directory inside --src {src}")
        return Script(harness.path.absolute(), src, workdir)
    if not harness.files:
        raise ConfigError("SOURCE", "no source file given, and no --script")
    for given in (*harness.files, harness.dictionary):
        if given is not None and not given.is_file():
            raise ConfigError("SOURCE" if given in harness.files else "--dictionary", f"{given}: no such file")
    return Sources(tuple(f.absolute() for f in harness.files),
                   None if harness.dictionary is None else harness.dictionary.absolute())


def _new_directory(out: Path) -> Path:
    out = Path(out).absolute()
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise ConfigError("--out", f"{out} exists and is not an empty directory; name a new one")
    out.mkdir(parents=True, exist_ok=True)
    return out
