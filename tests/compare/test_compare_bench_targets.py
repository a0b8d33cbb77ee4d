"""``benchmarks/compare_targets.py`` on one of its C programs (``hdr_opcode``, no Debian package to
fetch): the harness directory it writes reads back as ``launch --harness`` and the study read it,
with the builds, seeds and dictionary the protocol's systems use; a second run keeps it; a
damaged one, a half-built one and a planted symlink are rebuilt, never followed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.symcc import AFL_MISSING

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_hybrid, compare_targets  # noqa: E402
from symcc_ulfm.executors.dictionary import read_dictionary  # noqa: E402
from symcc_ulfm.harness import directory  # noqa: E402

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("afl-cc", "afl-showmap", "clang")),
                                reason=AFL_MISSING)
NAME = "hdr_opcode"


@pytest.fixture
def no_symcc(monkeypatch, tmp_path):
    """No SymCC compiler (none given, none by default, none on PATH): the symcc build is skipped, and says so."""
    monkeypatch.delenv("SYMCC_CC", raising=False)
    monkeypatch.setattr(compare_targets, "SYMCC_DEFAULT", tmp_path / "no-symcc")
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "symcc").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))


def run(out: Path, capsys) -> str:
    assert compare_targets.main(["--out", str(out), "--only", NAME]) == 0
    return capsys.readouterr().out


def test_a_program_becomes_a_harness_directory_the_study_reads(tmp_path, no_symcc, capsys):
    out = tmp_path / "harnesses"
    printed = run(out, capsys)
    harness = directory.read(out / NAME)
    assert set(harness.builds) == {"afl", "cmplog", "sanitizer"} and harness.args == []
    assert list(harness.source["not_built"]) == ["symcc"] and "no SymCC" in harness.source["not_built"]["symcc"]
    assert harness.builds["cmplog"].sha256 != harness.builds["afl"].sha256
    assert "AFL_LLVM_CMPLOG=1" in harness.builds["cmplog"].flags
    assert "-fno-sanitize-recover=undefined" in harness.builds["sanitizer"].flags
    seeds = sorted(harness.file(harness.seeds).iterdir())
    assert [p.read_bytes() for p in seeds] == list(bench_hybrid.targets()[NAME].seeds)
    tokens = read_dictionary(harness.file(harness.dictionary), "dictionary").tokens
    assert tokens[0] == b"SQ" and b"root" in tokens  # its own (c_targets/hdr_opcode.dict), then afl-cc's
    for kind, build in harness.builds.items():
        assert f"{build.sha256}  {kind}/{NAME}" in printed
    assert not (out / f".{NAME}").exists()

    # the afl build reads its input on standard input (args []) under afl-showmap, the measurer's tool
    maps = tmp_path / "maps"
    subprocess.run(["afl-showmap", "-q", "-i", str(harness.file(harness.seeds)), "-o", str(maps), "-t", "5000",
                    "--", str(harness.path("afl")), *harness.args], check=False, env={**os.environ, "AFL_QUIET": "1"},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert sorted(p.name for p in maps.iterdir()) == [p.name for p in seeds]
    assert all(p.read_text().split() for p in maps.iterdir())
    for seed in seeds:  # a seed is no crash of the sanitizer build
        done = subprocess.run([str(harness.path("sanitizer"))], input=seed.read_bytes(), capture_output=True)
        assert done.returncode >= 0 and b"ERROR: AddressSanitizer" not in done.stderr

    # a second run keeps it as it is
    manifest = (out / NAME / directory.MANIFEST).stat().st_mtime_ns
    assert f"{NAME}: kept" in run(out, capsys)
    assert (out / NAME / directory.MANIFEST).stat().st_mtime_ns == manifest


def test_a_damaged_half_built_or_planted_directory_is_built_again(tmp_path, no_symcc, capsys):
    out = tmp_path / "harnesses"
    run(out, capsys)
    afl = out / NAME / "afl" / NAME
    afl.write_bytes(afl.read_bytes() + b"\0")  # no longer the build the manifest records
    printed = run(out, capsys)
    assert "no valid harness directory" in printed and f"{NAME}: built" in printed
    directory.read(out / NAME)

    shutil.rmtree(out / NAME)
    (out / f".{NAME}" / "afl").mkdir(parents=True)  # a build that was interrupted
    (out / f".{NAME}" / "afl" / "left").write_bytes(b"x")
    assert f"{NAME}: built" in run(out, capsys)
    assert not (out / f".{NAME}").exists() and directory.read(out / NAME).builds

    elsewhere = tmp_path / "elsewhere"
    shutil.move(out / NAME, elsewhere)
    (out / NAME).symlink_to(elsewhere)  # a harness directory is never read through a link
    before = sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*"))
    assert "is no directory (a link or a file)" in run(out, capsys)
    assert not (out / NAME).is_symlink() and directory.read(out / NAME).builds
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == before


def test_an_unknown_target_is_refused(tmp_path):
    with pytest.raises(SystemExit) as refused:
        compare_targets.main(["--out", str(tmp_path), "--only", "nosuch"])
    assert refused.value.code == 2


TOY_LIBRARY = r"""
#include <string.h>
int toy_check(const char *data, unsigned long size) {
    return size >= 8 && memcmp(data, "LIBTOKEN", 8) == 0;
}
"""
TOY_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
int toy_check(const char *data, unsigned long size);
int main(void) {
    char buf[64];
    unsigned long n = fread(buf, 1, sizeof buf, stdin);
    if (n >= 4 && memcmp(buf, "MAIN", 4) == 0)
        return toy_check(buf + 4, n - 4) ? 3 : 2;
    return 0;
}
"""


def test_a_program_on_a_library_gets_the_librarys_tokens_too(tmp_path, no_symcc, monkeypatch):
    """A program on a library of ``c_libraries`` (its source cache laid out by hand: no package to
    fetch) is built with the library's C files: every build links them, the dictionary holds the
    program's and the library's constants, the manifest names the package's version."""
    from benchmarks import c_libraries

    cache = tmp_path / "cache"
    source = cache / "src" / "toylib" / "toylib-1.0"
    source.mkdir(parents=True)
    (source / "toy.c").write_text(TOY_LIBRARY)
    (source.parent / "source.json").write_text('{"dir": "toylib-1.0", "version": "1.0-1"}')
    monkeypatch.setitem(c_libraries.LIBRARIES, "toylib", c_libraries.Library("toylib", ("toy.c",)))
    program = tmp_path / "toy_main.c"
    program.write_text(TOY_PROGRAM)
    target = bench_hybrid.Target("toy", program, "toylib", (b"MAIN", b"x"))
    root = tmp_path / "harnesses" / "toy"
    compare_targets.build_program(target, root, None, cache, print)
    harness = directory.read(root)
    assert set(harness.builds) == {"afl", "cmplog", "sanitizer"} and harness.args == []
    assert harness.source["packages"] == {"toylib": "1.0-1"}
    tokens = read_dictionary(harness.file(harness.dictionary), "dictionary").tokens
    assert b"MAIN" in tokens and b"LIBTOKEN" in tokens
    assert [p.read_bytes() for p in sorted(harness.file(harness.seeds).iterdir())] == [b"MAIN", b"x"]
    for build in ("afl", "sanitizer"):  # the program's main, the input on stdin, the library linked
        for data, code in ((b"MAINLIBTOKEN", 3), (b"MAINx", 2), (b"", 0)):
            assert subprocess.run([str(harness.path(build)), *harness.args], input=data).returncode == code
