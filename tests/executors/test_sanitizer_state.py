"""A binary finding's signature from a sanitizer report: its crash state (sanitizer, bug type, the
top frames' function names, as ClusterFuzz buckets crashes), never a build path, line, address,
module offset or BuildId, so that a rebuild of the same harness finds the same bug again.

The planted bug of ``tests/fixtures/harness/planted_fuzzer.c`` (a libFuzzer harness: ``FZ\\x04BUG!``
writes through a null pointer) is built with clang's AddressSanitizer and UBSan in two directories
with other flags and other drivers (a stdin driver written here, and libFuzzer's own), each run
for real; the reports differ in paths, lines, addresses and the frames below the harness, the
signatures do not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.symcc import AFL_MISSING, afl_available

from symcc_ulfm.executors.binary.afl_coverage import AflTwin, which_showmap
from symcc_ulfm.executors.binary.runs import Scratch, classify_exit
from symcc_ulfm.executors.outcome import sanitizer_state

HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "planted_fuzzer.c"
CRASH = b"FZ\x04BUG!"
DRIVER = b"""
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int main(void) {
    static uint8_t buffer[1 << 16];
    size_t size = fread(buffer, 1, sizeof buffer, stdin);
    return LLVMFuzzerTestOneInput(buffer, size);
}
"""

REPORT = """==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011 at pc 0x4f1a2b bp 0x7ffd sp 0x7ffc
READ of size 1 at 0x602000000011 thread T0
    #0 0x4f1a2b in __asan_memcpy (/out/{build}/fuzz+0x{a}) (BuildId: {id})
    #1 0x4f1a2c in ns::parse(char const*, unsigned long) const {src}/parse.cc:{line}:7
    #2 0x4f1a2d in (anonymous namespace)::outer(int) (/out/{build}/fuzz+0x{a}) (BuildId: {id})
    #3 0x4f1a2e  (/out/{build}/fuzz+0x{a}) (BuildId: {id})
    #4 0x4f1a2f in LLVMFuzzerTestOneInput {src}/fuzz.cc:{line}:3
    #5 0x4f1a30 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long) (/out/{build}/fuzz+0x{a})
    #6 0x4f1a31 in main (/out/{build}/fuzz+0x{a}) (BuildId: {id})

0x602000000011 is located 0 bytes after 1-byte region [0x602000000010,0x602000000011)
allocated by thread T0 here:
    #0 0x4f in malloc (/out/{build}/fuzz+0x{a}) (BuildId: {id})
SUMMARY: AddressSanitizer: heap-buffer-overflow {src}/parse.cc:{line}:7 in ns::parse(char const*, unsigned long) const
==4242==ABORTING
"""


def _report(build: str, src: str, line: int, offset: str, build_id: str) -> str:
    return REPORT.format(build=build, src=src, line=line, a=offset, id=build_id)


def assert_portable(signature: str) -> None:
    """Nothing of one build in it: no path, hexadecimal address or offset, BuildId or line number."""
    assert "/" not in signature and "0x" not in signature and "BuildId" not in signature, signature
    assert not re.search(r":\d", signature), signature


def test_the_crash_state_is_type_and_top_frames_of_the_targets_own_code():
    state = sanitizer_state(_report("a", "/src/a", 12, "1234", "0123abcd"))
    assert state == "AddressSanitizer: heap-buffer-overflow in ns::parse < (anonymous namespace)::outer < " \
                    "LLVMFuzzerTestOneInput"
    assert_portable(state)
    rebuilt = _report("rebuilt-elsewhere", "/home/u/b", 14, "9f00", "ffee0011")
    assert sanitizer_state(rebuilt) == state  # another path, line, offset and BuildId: the same bug


def test_ubsan_and_unsymbolized_reports_fall_back_to_the_summary_without_its_place():
    ubsan = ("/src/x.c:12:5: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in "
             "type 'int'\nSUMMARY: UndefinedBehaviorSanitizer: undefined-behavior /src/x.c:12:5 in \n")
    assert sanitizer_state(ubsan) == "UndefinedBehaviorSanitizer: signed integer overflow in x.c"
    bare = ("==7==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
            "    #0 0x55d0c1  (/out/p+0x1234) (BuildId: 9f9f)\n"
            "SUMMARY: AddressSanitizer: SEGV (/out/p+0x1234) (BuildId: 9f9f) in parse_record\n")
    assert sanitizer_state(bare) == "AddressSanitizer: SEGV in parse_record"
    assert sanitizer_state("usage: p FILE\n") is None
    outcome = classify_exit(1, False, bare)  # a report is a crash whatever the exit status
    assert outcome.kind == "crash" and outcome.signature == "AddressSanitizer: SEGV in parse_record"


def _clang_with_sanitizers(tmp_path: Path) -> str | None:
    """Why the planted harness cannot be built with clang's sanitizers here (None: it can)."""
    if shutil.which("clang") is None:
        return "clang not on PATH: apt-get install -y clang libclang-rt-14-dev"
    probe = subprocess.run(["clang", "-fsanitize=address,undefined", "-x", "c", "-", "-o", str(tmp_path / "probe")],
                           input=b"int main(void){return 0;}", capture_output=True)
    return None if probe.returncode == 0 else f"clang cannot link AddressSanitizer: {probe.stderr.decode()[-300:]}"


def _build(directory: Path, *flags: str, driver: bool = True) -> Path:
    """The planted harness, copied into ``directory`` (a build path of its own) and built there."""
    directory.mkdir(parents=True)
    source = directory / HARNESS.name
    shutil.copy(HARNESS, source)
    inputs = [str(source)]
    if driver:
        (directory / "driver.c").write_bytes(DRIVER)
        inputs.append(str(directory / "driver.c"))
    binary = directory / "planted"
    subprocess.run(["clang", *flags, *inputs, "-o", str(binary)], check=True, capture_output=True)
    return binary


def _signature(binary: Path, argv: list[str], stdin: bytes) -> tuple[str, str]:
    """The crash outcome's signature of one real run, and the report it came from."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("SAN_OPTIONS")}
    done = subprocess.run([str(binary), *argv], input=stdin, capture_output=True, timeout=60, env=env)
    report = done.stderr.decode("utf-8", "replace")
    outcome = classify_exit(done.returncode, False, report)
    assert outcome.kind == "crash", report[-2000:]
    return outcome.signature, report


def test_a_rebuild_elsewhere_with_other_flags_and_driver_finds_the_same_bug(tmp_path):
    why = _clang_with_sanitizers(tmp_path)
    if why is not None:
        pytest.skip(why)
    debug = _build(tmp_path / "one" / "build", "-g", "-O0", "-fsanitize=address,undefined")
    optimised = _build(tmp_path / "two" / "elsewhere", "-O2", "-fsanitize=address,undefined")
    engine = _build(tmp_path / "three", "-g", "-O1", "-fsanitize=fuzzer,address,undefined", driver=False)
    (tmp_path / "crash").write_bytes(CRASH)
    first, report = _signature(debug, [], CRASH)
    second, other = _signature(optimised, [], CRASH)
    third, _ = _signature(engine, [str(tmp_path / "crash")], b"")  # libFuzzer's main runs the file once
    assert report != other  # the reports differ (paths, addresses) ...
    assert first == second == third, (first, second, third)  # ... their crash state does not
    assert first.startswith("AddressSanitizer: SEGV in ") and first.endswith("LLVMFuzzerTestOneInput"), first
    assert_portable(first)
    harmless = subprocess.run([str(debug)], input=b"FZ\x04BUG.", capture_output=True, timeout=60)
    assert classify_exit(harmless.returncode, False, harmless.stderr.decode()).kind == "ok"  # one byte away


OVERFLOW = b"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static char *make(void) { return malloc(4); }
__attribute__((noinline)) static void copy(char *to, const char *from, size_t n) { memcpy(to, from, n); }
int main(void) {
    char buf[64];
    size_t n = fread(buf, 1, sizeof buf, stdin);
    if (n > 0 && buf[0] == 'H') {
        char *p = make();
        copy(p, buf, 16);
        free(p);
    }
    return 0;
}
"""


def test_a_long_report_is_read_whole_enough_for_its_crash_stack(tmp_path):
    """An ASan build of AFL++ (``AFL_USE_ASAN``) measured as the workers measure a crashing input
    (afl-showmap, then the direct run that names the outcome): its report of a heap overflow ends
    in a shadow map longer than the tail of stderr kept for notes, so the outcome is read from more
    of it. The state is the overflow's stack (``copy < main``), not the allocation's (``make``),
    which is all the last 2000 bytes hold."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    source = tmp_path / "overflow.c"
    source.write_bytes(OVERFLOW)
    binary = tmp_path / "overflow"
    subprocess.run(["afl-cc", "-O0", "-g", str(source), "-o", str(binary)], check=True, capture_output=True,
                   env={**os.environ, "AFL_USE_ASAN": "1", "AFL_QUIET": "1"})
    twin = AflTwin(str(binary), which_showmap(), [], 5.0)
    scratch = Scratch(tmp_path)
    try:
        fine, overflow = twin.measure_many([b"x", b"H" * 20], None, scratch, adopt=False)
    finally:
        scratch.close()
    assert fine.outcome.kind == "ok" and overflow.outcome.kind == "crash"
    assert overflow.outcome.signature == "AddressSanitizer: heap-buffer-overflow in copy < main"
    assert twin.map_size and twin.map_size > 0  # what the symcc executor reports as its map size
