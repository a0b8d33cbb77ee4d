"""Builds of the SymCC stand-in (``tests/fixtures/symcc``): NOT SymCC, a protocol-compatible
stand-in for a SymCC-compiled binary and its runtime, and the same source as an AFL twin."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "symcc"
SOURCE = FIXTURES / "fake_symcc.c"
RUNTIME_SOURCE = FIXTURES / "fake_symcc_rt.c"
AFL_MISSING = "afl++ not installed (afl-cc and afl-showmap not on PATH): apt-get install -y afl++"
FLAGS = ("-O0", "-Wall", "-Wextra", "-Werror")


def compile_c(compiler: str, out: Path, source: Path, *flags: str, env: dict[str, str] | None = None) -> Path:
    env = {**os.environ, "AFL_QUIET": "1", **(env or {})}
    # flags after the source: a -l there resolves the source's references to the runtime
    subprocess.run([compiler, *FLAGS, "-o", str(out), str(source), *flags], check=True, env=env)
    return out


def runtime(directory: Path, *flags: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return compile_c("gcc", directory / "libsymcc-rt.so", RUNTIME_SOURCE, "-shared", "-fPIC", *flags)


def linked(out: Path, runtime_dir: Path, rpath: bool = True) -> Path:
    flags = [f"-L{runtime_dir}", "-lsymcc-rt"] + ([f"-Wl,-rpath,{runtime_dir}"] if rpath else [])
    return compile_c("gcc", out, SOURCE, *flags)


def stand_in(directory: Path) -> Path:
    """The stand-in for a SymCC-compiled binary (not SymCC), with a RUNPATH to its runtime."""
    return linked(directory / "fake_symcc", runtime(directory / "rt").parent)


def afl_available() -> bool:
    return shutil.which("afl-cc") is not None and shutil.which("afl-showmap") is not None


def afl_twin(directory: Path) -> Path:
    """The same program built with afl-cc (the caller checks :func:`afl_available`)."""
    return compile_c("afl-cc", directory / "fake_symcc.afl", SOURCE, "-DAFL_TWIN")


CMPLOG = {"AFL_LLVM_CMPLOG": "1"}  # afl-cc's CmpLog build (afl-fuzz's -c)


def cmplog_twin(directory: Path) -> Path:
    """The AFL twin's CmpLog build."""
    return compile_c("afl-cc", directory / "fake_symcc.cmplog", SOURCE, "-DAFL_TWIN", env=CMPLOG)
