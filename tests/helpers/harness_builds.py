"""The harness fixture (``tests/fixtures/harness``: a libFuzzer harness with a planted SIGSEGV) built
in the test as ``symcc-ulfm build`` would build it, without depending on that command: the AFL++
build (``afl-clang-fast`` with AFL++'s ``libAFLDriver.a``), the sanitizer build (``clang
-fsanitize=address,undefined`` with the small file driver below), written as a harness directory
(``harness.directory.write``) with the fixture's dictionary and seeds. The builds take their input
on stdin (``args`` ``["-"]``): libAFLDriver reads a file named by its argument only when the file
exists as it starts, which it does not under ``afl-showmap -i DIR`` (its fork server starts
before the first input's file), where ``@@`` aborts the driver (``Assertion `N > 0' failed``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from symcc_ulfm.harness import directory

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "harness"
AFL_DRIVER = Path("/usr/lib/afl/libAFLDriver.a")
TOOLS = ("afl-clang-fast", "afl-fuzz", "afl-showmap", "clang")
PLANTED = b"FZ\x04BUG!"  # the input that reaches the planted bug
# The sanitizer build's main: the input on stdin ("-" or no argument), or from the file named.
DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int main(int argc, char **argv) {
    FILE *in = argc > 1 && strcmp(argv[1], "-") != 0 ? fopen(argv[1], "rb") : stdin;
    if (in == NULL)
        return 2;
    size_t size = 0, capacity = 1 << 16;
    uint8_t *data = malloc(capacity);
    size_t got;
    while ((got = fread(data + size, 1, capacity - size, in)) > 0) {
        size += got;
        if (size == capacity)
            data = realloc(data, capacity *= 2);
    }
    int status = LLVMFuzzerTestOneInput(data, size);
    free(data);
    return status;
}
"""


def missing() -> str | None:
    """Why the harness cannot be built here (None: it can)."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if not AFL_DRIVER.is_file():
        absent.append(str(AFL_DRIVER))
    return f"needs afl++ and clang ({', '.join(absent)} missing): apt-get install -y afl++ clang" if absent else None


def _compile(compiler: str, out: Path, sources: list[str], *extra: str, env: dict[str, str] | None = None,
             ) -> directory.Build:
    out.parent.mkdir(parents=True, exist_ok=True)
    flags = ["-g", "-O1", *extra]
    subprocess.run([compiler, *flags, "-o", str(out), *sources], check=True,
                   env={**os.environ, "AFL_QUIET": "1", **(env or {})})
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True).stdout
    return directory.Build(str(out.relative_to(out.parents[1])), directory.sha256_file(out),
                           version.splitlines()[0], flags)


def build_harness(root: Path, sanitizer: bool = True, cmplog: bool = False) -> directory.Harness:
    """The AFL++ build (the sanitizer build, its CmpLog build) of the fixture in ``root``, its manifest written."""
    root.mkdir(parents=True, exist_ok=True)
    source = str(FIXTURE / "planted_fuzzer.c")
    builds = {"afl": _compile("afl-clang-fast", root / "afl" / "planted_fuzzer", [source, str(AFL_DRIVER)])}
    if cmplog:
        builds["cmplog"] = _compile("afl-clang-fast", root / "cmplog" / "planted_fuzzer", [source, str(AFL_DRIVER)],
                                    env={"AFL_LLVM_CMPLOG": "1"})
    if sanitizer:
        driver = root / "driver.c"
        driver.write_text(DRIVER)
        builds["sanitizer"] = _compile("clang", root / "sanitizer" / "planted_fuzzer", [source, str(driver)],
                                       "-fsanitize=address,undefined")
    shutil.copytree(FIXTURE / "seeds", root / "seeds")
    shutil.copy(FIXTURE / "planted_fuzzer.dict", root / "planted_fuzzer.dict")
    harness = directory.Harness(root, "planted_fuzzer", builds, ["-"], "planted_fuzzer.dict", "seeds",
                                {"sources": ["planted_fuzzer.c"]})
    directory.write(harness)
    return harness


def harness_or_skip(root: Path) -> directory.Harness:
    """:func:`build_harness` in ``root``, or the test skipped saying what is missing."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    return build_harness(root)
