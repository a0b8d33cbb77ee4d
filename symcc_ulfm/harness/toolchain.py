"""The compilers ``symcc-ulfm build`` finds on this machine, one pair (C and C++) per build, with
the version line each prints, or why a build cannot be made here.

``afl`` and ``cmplog``: AFL++'s ``afl-clang-fast``/``afl-clang-fast++`` with its libFuzzer driver
``libAFLDriver.a`` (looked for where AFL++ installs it: ``$AFL_PATH``, beside the compiler, its
``../lib/afl``, ``/usr/local/lib/afl``, ``/usr/lib/afl``), or, where none is found,
``-fsanitize=fuzzer``, which AFL++'s compiler links to the same driver. ``sanitizer``: clang and
clang++ (their sanitizer runtimes are Debian's ``libclang-rt-*-dev``; without them the build fails
at the link and says so). ``symcc``: SymCC's wrappers ``symcc`` and ``sym++`` (``--symcc PATH``,
the ``sym++`` beside it, else both on ``PATH``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError

AFL_DRIVER = "libAFLDriver.a"
_AFL_DIRS = ("/usr/local/lib/afl", "/usr/lib/afl")
_VERSION_TIMEOUT_S = 60


@dataclass(frozen=True)
class Compilers:
    """The compilers of one build: absolute paths, the C compiler's version line, what links the
    fuzzing engine (None: our driver, ``driver.c``, compiled for the build) and the environment the
    build adds."""

    cc: str
    cxx: str
    version: str
    engine: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)


def find(symcc: str | None) -> dict[str, Compilers | str]:
    """Each build of ``directory.BUILDS``: its compilers, or (a string) why it cannot be made here."""
    afl = _pair("afl-clang-fast", "afl-clang-fast++")
    found: dict[str, Compilers | str] = {}
    if isinstance(afl, str):
        found["afl"] = found["cmplog"] = f"{afl} (AFL++: apt-get install afl++)"
    else:
        engine = afl_driver(Path(afl[0]))
        found["afl"] = Compilers(*afl, version_line(afl[0]), engine)
        found["cmplog"] = Compilers(*afl, found["afl"].version, engine, {"AFL_LLVM_CMPLOG": "1"})
    found["symcc"] = _symcc(symcc)
    clang = _pair("clang", "clang++")
    found["sanitizer"] = clang if isinstance(clang, str) else Compilers(*clang, version_line(clang[0]))
    return found


def afl_driver(compiler: Path) -> tuple[str, ...]:
    """How an AFL++ build links its libFuzzer driver: ``libAFLDriver.a`` where AFL++ installs it
    (module docstring), or ``-fsanitize=fuzzer`` for AFL++'s compiler to find it itself."""
    real = compiler.resolve().parent
    places = [os.environ.get("AFL_PATH", ""), str(real), str(real.parent / "lib" / "afl"), *_AFL_DIRS]
    for place in filter(None, places):
        if (Path(place) / AFL_DRIVER).is_file():
            return (str(Path(place) / AFL_DRIVER),)
    return ("-fsanitize=fuzzer",)


def version_line(compiler: str) -> str:
    """The first line ``compiler --version`` prints; for AFL++'s compilers, which print clang's
    there, their own version (the first line of ``-h``) before it."""
    line = _first_line(compiler, "--version")
    if Path(compiler).name.startswith("afl-"):
        return f"{_first_line(compiler, '-h').split(' by ')[0]}; {line}"
    return line


def _first_line(compiler: str, option: str) -> str:
    try:
        done = subprocess.run([compiler, option], capture_output=True, text=True, errors="replace",
                              timeout=_VERSION_TIMEOUT_S, env={**os.environ, "AFL_QUIET": "1"})
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({compiler} {option}: {error})"
    return next((line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()),
                "unknown")


def _pair(cc: str, cxx: str) -> tuple[str, str] | str:
    paths = [shutil.which(cc), shutil.which(cxx)]
    if None in paths:
        return f"{cc if paths[0] is None else cxx} is not on PATH"
    return paths[0], paths[1]


def _symcc(given: str | None) -> Compilers | str:
    if given is None:
        pair = _pair("symcc", "sym++")
        if isinstance(pair, str):
            return f"no SymCC: {pair} and no --symcc was given (SymCC is not packaged: benchmarks/README.md, " \
                   f"\"How SymCC was built\")"
        return Compilers(*pair, version_line(pair[0]), env=_libcxx())
    cc = Path(given).absolute()
    if not (cc.is_file() and os.access(cc, os.X_OK)):
        raise ConfigError("--symcc", f"{given}: not an executable file (SymCC's compiler wrapper symcc)")
    cxx = cc.with_name("sym++")
    if not (cxx.is_file() and os.access(cxx, os.X_OK)):
        raise ConfigError("--symcc", f"{cxx}: missing; SymCC's build makes sym++ beside symcc")
    return Compilers(str(cc), str(cxx), version_line(str(cc)), env=_libcxx())


def _libcxx() -> dict[str, str]:
    """What SymCC's ``sym++`` needs to link: the C++ library built with SymCC
    (``SYMCC_LIBCXX_PATH``) when the user has one, else the system's, which ``sym++`` takes only
    when told (``SYMCC_REGULAR_LIBCXX``; without either it refuses to link). The system's library
    is not instrumented: what a harness does inside it is concrete to SymCC."""
    if os.environ.get("SYMCC_LIBCXX_PATH") or os.environ.get("SYMCC_REGULAR_LIBCXX"):
        return {}
    return {"SYMCC_REGULAR_LIBCXX": "1"}
