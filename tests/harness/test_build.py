"""``symcc-ulfm build`` on the planted harness (``tests/fixtures/harness``), through its OSS-Fuzz
build script and from its source: real afl-clang-fast and clang builds, run on the planted bug and
on the seeds, the afl build under afl-fuzz with its CmpLog build, dictionary and seeds; scripts as
OSS-Fuzz projects write them (several harnesses, ``mkdir build`` in a WORKDIR, ``-lFuzzingEngine``);
a harness that does not build names the build; a hostile seed corpus writes nothing but seeds;
``--symcc`` on a stand-in wrapper (not SymCC)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.symcc import AFL_MISSING, afl_available

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.executors.dictionary import read_dictionary
from symcc_ulfm.executors.fuzzers.afl_sync import AFL_MAX_FILE
from symcc_ulfm.harness import directory, seed_corpus, toolchain

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "harness"
BUG = b"FZ\x04BUG!"
needs_afl = pytest.mark.skipif(not afl_available(), reason=AFL_MISSING)
SANITIZER_MISSING = "clang's sanitizer runtimes are not installed: apt-get install -y libclang-rt-14-dev"


def sanitizers_available() -> bool:
    if shutil.which("clang") is None:
        return False
    found = subprocess.run(["clang", "-print-file-name=libclang_rt.asan-x86_64.a"], capture_output=True, text=True)
    return Path(found.stdout.strip()).is_absolute() and Path(found.stdout.strip()).is_file()


needs_sanitizers = pytest.mark.skipif(not sanitizers_available(), reason=SANITIZER_MISSING)


def build(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", "build", *args], capture_output=True, text=True,
                          timeout=300)


def built(out: Path, *args: str) -> tuple[dict, directory.Harness]:
    done = build("--out", str(out), "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), directory.read(out)


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    return built(tmp_path_factory.mktemp("script") / "out", "--script", str(FIXTURE / "build.sh"))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return built(tmp_path_factory.mktemp("sources") / "out", str(FIXTURE / "planted_fuzzer.c"),
                 "--cflags", "-DPLANTED=1 -Wall", "--dictionary", str(FIXTURE / "planted_fuzzer.dict"))


@pytest.fixture(params=["script", "sources"])
def harness(request) -> directory.Harness:
    return request.getfixturevalue(request.param)[1]


def run(harness: directory.Harness, build_name: str, data: bytes, tmp_path: Path) -> subprocess.CompletedProcess:
    """``build_name`` run on ``data`` as the manifest's ``args`` say: a file for ``@@``, else standard input."""
    given = tmp_path / "input"
    given.write_bytes(data)
    args = [str(given) if arg == "@@" else arg for arg in harness.args]
    with open(given, "rb") as stdin:
        return subprocess.run([str(harness.path(build_name)), *args], stdin=subprocess.DEVNULL if "@@" in harness.args
                              else stdin, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"})


@needs_afl
def test_the_manifest_reads_back_with_every_build_the_tools_allow(harness):
    assert harness.name == "planted_fuzzer" and harness.args == ["-"]
    assert {"afl", "cmplog"} <= set(harness.builds)
    afl, cmplog = harness.builds["afl"], harness.builds["cmplog"]
    assert afl.path == "afl/planted_fuzzer" and "afl-cc" in afl.compiler and "clang version" in afl.compiler
    assert any(f.startswith("LIB_FUZZING_ENGINE=") and f.endswith(("libAFLDriver.a", "-fsanitize=fuzzer"))
               for f in afl.flags)
    assert "AFL_LLVM_CMPLOG=1" in cmplog.flags and "AFL_LLVM_CMPLOG=1" not in afl.flags
    if not sanitizers_available():  # the sanitizer build fails at its link, and says so
        assert harness.source["not_built"]["sanitizer"].startswith("clang++ exited")
        pytest.skip(SANITIZER_MISSING)
    sanitizer = harness.builds["sanitizer"]
    assert "-fsanitize=address,undefined" in sanitizer.flags and "clang version" in sanitizer.compiler
    assert len({b.sha256 for b in harness.builds.values()}) == len(harness.builds)
    if "sources" in harness.source:  # --cflags: after each build's own flags, before the engine
        assert harness.source["cflags"] == ["-DPLANTED=1", "-Wall"]
        assert all(b.flags[-3:-1] == ["-DPLANTED=1", "-Wall"] for b in harness.builds.values())


@needs_afl
def test_the_afl_build_crashes_on_the_planted_bug_and_not_on_the_seeds(script, harness, tmp_path):
    assert run(harness, "afl", BUG, tmp_path).returncode == -signal.SIGSEGV
    for seed in (FIXTURE / "seeds").iterdir():
        done = run(harness, "afl", seed.read_bytes(), tmp_path)
        assert done.returncode == 0, (seed, done.stderr)
    # the seeds the script zipped are unpacked, each named by its SHA-256
    seeds = script[1].file(script[1].seeds)
    assert sorted(p.read_bytes() for p in seeds.iterdir()) == sorted(p.read_bytes() for p in
                                                                    (FIXTURE / "seeds").iterdir())
    assert all(p.name == hashlib.sha256(p.read_bytes()).hexdigest() for p in seeds.iterdir())


@needs_afl
def test_afl_fuzz_runs_the_afl_build_with_its_cmplog_build_dictionary_and_seeds(script, tmp_path):
    """As launch --harness will: afl-fuzz on the manifest's args, ended by a count of executions
    (-E); AFL++'s driver given a file (@@) instead dies in afl-fuzz's fork server."""
    harness = script[1]
    command = ["afl-fuzz", "-E", "300", "-i", str(harness.file(harness.seeds)), "-o", str(tmp_path / "findings"),
               "-x", str(harness.file(harness.dictionary)), "-c", str(harness.path("cmplog")), "--",
               str(harness.path("afl")), *harness.args]
    env = {**os.environ, "AFL_NO_UI": "1", "AFL_SKIP_CPUFREQ": "1", "AFL_NO_AFFINITY": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout[-2000:]
    stats = (tmp_path / "findings" / "default" / "fuzzer_stats").read_text()
    assert int(stats.split("execs_done")[1].split(":")[1].split()[0]) >= 300


@needs_afl
@needs_sanitizers
def test_the_sanitizer_build_reports_the_bug_with_the_harness_frame(harness, tmp_path):
    done = run(harness, "sanitizer", BUG, tmp_path)
    assert done.returncode != 0
    assert "ERROR: AddressSanitizer: SEGV" in done.stderr
    assert "in LLVMFuzzerTestOneInput" in done.stderr and "planted_fuzzer.c:" in done.stderr
    assert run(harness, "sanitizer", b"FZ\x04BUG.", tmp_path).returncode == 0


@needs_afl
def test_the_cmplog_build_is_instrumented_for_cmplog(harness):
    def calls(build_name: str) -> int:  # calls to CmpLog's hooks (the AFL++ runtime defines them in both)
        code = subprocess.run(["objdump", "-d", str(harness.path(build_name))], capture_output=True, text=True,
                              check=True).stdout
        return sum(1 for line in code.splitlines() if "call" in line and "<__cmplog_" in line)

    assert calls("cmplog") > 0 and calls("afl") == 0


@needs_afl
def test_the_dictionary_merges_the_harness_tokens_with_those_afl_extracted(script, sources):
    for made, harness in (script, sources):  # the .dict the script left in $OUT; --dictionary
        tokens = read_dictionary(harness.file(harness.dictionary)).tokens
        assert tokens[:2] == (b"BUG!", b"FZ")  # planted_fuzzer.dict's, first
        assert b"BUG" in tokens and len(tokens) == len(set(tokens))  # memcmp's "BUG": AFL_LLVM_DICT2FILE's
        assert made["tokens"]["harness"] == 2 and made["tokens"]["extracted"] >= 1


@pytest.mark.skipif(shutil.which("symcc") is not None, reason="SymCC is installed: its build is made")
@needs_afl
def test_without_symcc_there_is_no_symcc_build_and_the_manifest_says_why(script):
    made, harness = script
    assert "symcc" not in harness.builds
    assert made["skipped"]["symcc"].startswith("no SymCC: symcc is not on PATH")
    assert harness.source["not_built"]["symcc"].startswith("skipped: no SymCC")


@needs_afl
def test_a_source_that_does_not_compile_names_the_failing_build(tmp_path):
    broken = tmp_path / "broken.c"
    broken.write_text("int LLVMFuzzerTestOneInput(const char *data, unsigned long size) { return nope; }\n")
    done = build("--out", str(tmp_path / "out"), str(broken))
    assert done.returncode == 2
    assert "every build failed" in done.stderr and "afl: afl-clang-fast exited 1" in done.stderr
    assert "use of undeclared identifier 'nope'" in done.stderr and not (tmp_path / "out" / "harness.json").exists()


def breaking(tmp_path: Path, condition: str, error: str) -> subprocess.CompletedProcess:
    """``build`` of a harness that does not compile where the preprocessor's ``condition`` holds."""
    source = tmp_path / "breaks.c"
    source.write_text(f"#if {condition}\n#error {error}\n#endif\n"
                      "int LLVMFuzzerTestOneInput(const char *data, unsigned long size) { return 0; }\n")
    return build("--out", str(tmp_path / "out"), str(source))


@needs_afl
@needs_sanitizers
def test_a_failed_afl_build_exits_2_and_keeps_the_others(tmp_path):
    done = breaking(tmp_path, "defined(__AFL_COMPILER)", "not with AFL++")
    assert done.returncode == 2 and "afl build: afl-clang-fast exited 1" in done.stderr
    assert "#error not with AFL++" in done.stderr and "nothing to fuzz" in done.stderr
    harness = directory.read(tmp_path / "out")
    assert set(harness.builds) == {"sanitizer"}
    assert harness.source["not_built"]["afl"].startswith("afl-clang-fast exited 1")


@needs_afl
@needs_sanitizers
def test_a_failed_sanitizer_build_is_reported_and_the_afl_builds_kept(tmp_path):
    done = breaking(tmp_path, "__has_feature(address_sanitizer)", "not with ASan")
    assert done.returncode == 0, done.stderr
    assert "sanitizer FAILED: clang exited 1" in done.stdout and "#error not with ASan" in done.stdout
    builds = directory.read(tmp_path / "out").builds
    assert {"afl", "cmplog"} <= set(builds) and "sanitizer" not in builds


@needs_afl
def test_an_output_directory_in_use_and_mixed_forms_are_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "something").write_text("")
    source, script = str(FIXTURE / "planted_fuzzer.c"), str(FIXTURE / "build.sh")
    for args, why in (((source,), "not an empty directory"), (("--script", script, source), "--script: builds "
                      "from its script alone"), ((source, "--workdir", "."), "--workdir: only with --script"),
                      (("--script", script, "--workdir", ".."), "--workdir: ..: expected a directory inside --src")):
        done = build("--out", str(tmp_path / "out"), *args)
        assert done.returncode == 2 and why in done.stderr, (args, done.stderr)


def hostile_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("corpus/good", b"FZ\x01a")
        zipped.writestr("again", b"FZ\x01a")
        zipped.writestr("../escaped", b"climbs out")
        zipped.writestr("/etc/absolute", b"absolute")
        link = zipfile.ZipInfo("link")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zipped.writestr(link, "/etc/passwd")
        zipped.writestr("big", b"\0" * (AFL_MAX_FILE + 1))
        zipped.writestr("empty", b"")
        zipped.writestr("corpus/", b"")


def test_a_hostile_seed_corpus_writes_nothing_but_seeds(tmp_path):
    hostile_zip(tmp_path / "h_seed_corpus.zip")
    (tmp_path / "dest").mkdir()
    unpacked = seed_corpus.unpack(tmp_path / "h_seed_corpus.zip", tmp_path / "dest" / "seeds")
    assert unpacked.seeds == 1
    assert unpacked.skipped == {"a name outside the archive (absolute or ..)": 2, "a repeated input": 1,
                                "a symbolic link": 1, "empty": 1,
                                f"larger than {AFL_MAX_FILE} bytes": 1}
    assert [p.read_bytes() for p in (tmp_path / "dest" / "seeds").iterdir()] == [b"FZ\x01a"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["dest", "h_seed_corpus.zip", "seeds",
                                                                  hashlib.sha256(b"FZ\x01a").hexdigest()])
    (tmp_path / "link.zip").symlink_to(tmp_path / "h_seed_corpus.zip")
    (tmp_path / "not.zip").write_bytes(b"PK but not a zip")
    for bad, why in (("link.zip", "a symbolic link"), ("not.zip", "not a zip archive")):
        with pytest.raises(ConfigError, match=why):
            seed_corpus.unpack(tmp_path / bad, tmp_path / bad.replace(".", "_"))


@needs_afl
def test_a_script_leaving_several_harnesses_needs_name(tmp_path):
    script = tmp_path / "build.sh"
    script.write_text((FIXTURE / "build.sh").read_text() + 'cp "$OUT/planted_fuzzer" "$OUT/other_fuzzer"\n')
    done = build("--out", str(tmp_path / "out"), "--script", str(script), "--src", str(FIXTURE))
    assert done.returncode == 2
    assert "afl: the script left other_fuzzer, planted_fuzzer in OUT; --name picks one" in done.stderr
    made, harness = built(tmp_path / "named", "--script", str(script), "--src", str(FIXTURE), "--name",
                          "planted_fuzzer")
    assert harness.name == "planted_fuzzer" and harness.seeds == "seeds" and made["tokens"]["harness"] == 2


STAND_IN = """#!/bin/sh
# NOT SymCC: a stand-in for its compiler wrapper, {compiler} underneath (what build does with --symcc);
# its sym++, as SymCC's, refuses to link unless told which C++ library to take
if [ "$1" = --version ]; then echo "stand-in for SymCC's wrapper, not SymCC"; exit 0; fi
if [ {compiler} = clang++ ] && [ -z "$SYMCC_REGULAR_LIBCXX" ] && [ -z "$SYMCC_LIBCXX_PATH" ]; then
    echo "Please set SYMCC_LIBCXX_PATH or SYMCC_REGULAR_LIBCXX" >&2; exit 255
fi
exec {compiler} "$@"
"""


@needs_afl
def test_symcc_is_built_with_the_wrapper_given_and_our_driver(tmp_path):
    """The plumbing of --symcc on a stand-in wrapper (CI has no SymCC): the symcc build is compiled
    by it, linked with our driver and takes its input as the other builds do."""
    wrapper = tmp_path / "symcc-build"
    wrapper.mkdir()
    for name, compiler in (("symcc", "clang"), ("sym++", "clang++")):
        (wrapper / name).write_text(STAND_IN.format(compiler=compiler))
        (wrapper / name).chmod(0o755)
    source = str(FIXTURE / "planted_fuzzer.c")
    made, harness = built(tmp_path / "out", source, "--symcc", str(wrapper / "symcc"))
    symcc = harness.builds["symcc"]
    assert "symcc" not in made["skipped"] and symcc.compiler == "stand-in for SymCC's wrapper, not SymCC"
    assert symcc.flags[-1] == "LIB_FUZZING_ENGINE=driver.c (symcc-ulfm's)"
    assert symcc.flags[0] == "SYMCC_REGULAR_LIBCXX=1"  # sym++ links the system's C++ library, recorded
    log = (tmp_path / "out" / "logs" / "symcc.log").read_text()
    assert f"$ {wrapper / 'symcc'} " in log and f"$ {wrapper / 'sym++'} " in log  # compiled, then linked
    assert run(harness, "symcc", BUG, tmp_path).returncode == -signal.SIGSEGV
    assert run(harness, "symcc", b"FZ\x04BUG.", tmp_path).returncode == 0
    done = build("--out", str(tmp_path / "none"), source, "--symcc", str(tmp_path / "no"))
    assert done.returncode == 2 and "--symcc: " in done.stderr and not (tmp_path / "none").exists()


def test_afl_s_driver_is_looked_for_first_where_afl_path_says(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libAFLDriver.a").write_bytes(b"!<arch>\n")
    monkeypatch.setenv("AFL_PATH", str(tmp_path / "lib"))
    assert toolchain.afl_driver(tmp_path / "afl-clang-fast") == (str(tmp_path / "lib" / "libAFLDriver.a"),)


@needs_afl
def test_each_build_runs_in_a_fresh_copy_of_src_in_its_workdir(tmp_path):
    """As cjson's ossfuzz.sh does: ``mkdir build`` where it runs (the Dockerfile's WORKDIR, inside
    $SRC), which a second build in the same tree would find there already."""
    project = tmp_path / "src" / "project"
    project.mkdir(parents=True)
    shutil.copy(FIXTURE / "planted_fuzzer.c", project)
    (project / "build.sh").write_text('mkdir build\ncd build\n'
                                      '$CC $CFLAGS -c "$SRC/project/planted_fuzzer.c" -o planted_fuzzer.o\n'
                                      '$CXX $CXXFLAGS planted_fuzzer.o $LIB_FUZZING_ENGINE -o "$OUT/planted_fuzzer"\n')
    made, harness = built(tmp_path / "out", "--script", str(project / "build.sh"), "--src", str(tmp_path / "src"),
                          "--workdir", "project")
    assert {"afl", "cmplog"} <= set(harness.builds) and made["failed"] == {}
    assert sorted(p.name for p in project.iterdir()) == ["build.sh", "planted_fuzzer.c"]  # the user's tree as it was
    assert harness.source["workdir"] == str(project)


@needs_afl
def test_a_script_linking_lFuzzingEngine_as_older_oss_fuzz_ones_do(tmp_path):
    script = tmp_path / "build.sh"  # libpng's contrib/oss-fuzz/build.sh links so
    script.write_text('$CC $CFLAGS "$SRC/planted_fuzzer.c" -c -o "$WORK/p.o"\n'
                      '$CXX $CXXFLAGS "$WORK/p.o" -lFuzzingEngine -o "$OUT/planted_fuzzer"\n')
    made, harness = built(tmp_path / "out", "--script", str(script), "--src", str(FIXTURE))
    assert made["failed"] == {} and {"afl", "cmplog"} <= set(harness.builds)
    assert run(harness, "afl", BUG, tmp_path).returncode == -signal.SIGSEGV
