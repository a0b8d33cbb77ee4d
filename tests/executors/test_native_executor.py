"""The ``native`` executor (``executors.native``), a binary campaign's analysis kind without SymCC,
against real processes: a small C program for the outcomes (ok, crash, hang; an exit status alone
is no finding), and the harness fixture's AFL++ and sanitizer builds (``tests/helpers/harness_builds``)
for coverage, the sanitizer report as every kind's signature of a failing input, preflight, and
the harness record that pins the manifest."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers.harness_builds import PLANTED, harness_or_skip

from symcc_ulfm.errors import PolicyError, ProvenanceChanged, TargetError
from symcc_ulfm.executors import check_kinds, create
from symcc_ulfm.executors.fuzzers.afl import AflFuzzer
from symcc_ulfm.executors.native.concrete import NativeExecutor
from symcc_ulfm.harness.directory import MANIFEST, sha256_file

OUTCOMES = r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    int first = getchar();
    if (first == 'E') return 3;           /* an exit status: a parser rejecting its input */
    if (first == 'C') raise(SIGABRT);     /* a crash */
    if (first == 'H') for (;;) pause();   /* a hang */
    return 0;
}
"""


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    out = tmp_path_factory.mktemp("native") / "outcomes"
    subprocess.run(["gcc", "-o", str(out), "-x", "c", "-"], input=OUTCOMES.encode(), check=True)
    return out


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return harness_or_skip(tmp_path_factory.mktemp("harness") / "planted")


def options_of(harness) -> dict:
    return {"afl_binary": str(harness.path("afl")), "sanitizer_binary": str(harness.path("sanitizer")),
            "args": harness.args}


def test_outcomes_ok_crash_hang_and_an_exit_status_is_no_finding(plain, tmp_path):
    executor = NativeExecutor(str(plain), {"timeout_s": 1.0})
    executor.scratch_dir = tmp_path
    try:
        for data, kind in ((b"ok", "ok"), (b"E", "ok"), (b"C", "crash"), (b"H", "hang")):
            result = executor.run(data)
            assert result.candidates == [] and result.executions == 1
            assert result.notes["outcome"] == kind, (data, result.notes)
            assert [f.outcome.kind for f in result.findings] == ([] if kind == "ok" else [kind])
            measured = executor.measure(data)
            assert measured.outcome.kind == kind and measured.coverage == frozenset()  # no AFL build: no coverage
        crash = executor.run(b"C").findings[0]
        assert crash.data == b"C" and crash.outcome.signature == "SIGABRT"
        assert executor.identity()["coverage"]["kind"] == "none"
    finally:
        executor.close()
    assert list(tmp_path.iterdir()) == []  # its scratch is gone with it


def test_preflight_refuses_a_build_that_fails_on_every_seed(plain, tmp_path):
    executor = NativeExecutor(str(plain), {"seeds": [b"C".hex(), b"H".hex()], "timeout_s": 0.5})
    executor.scratch_dir = tmp_path
    try:
        with pytest.raises(TargetError, match="no seed ends cleanly.*seed 0 .*crash: SIGABRT.*seed 1 .*hang"):
            executor.preflight()
        assert executor.preflight([b"C", b"x"]) == {"seeds": 2, "ok": 1}
    finally:
        executor.close()


def test_options_it_refuses(plain, harness):
    with pytest.raises(PolicyError, match="executor_options.env"):
        NativeExecutor(str(plain), {"env": {}})
    with pytest.raises(TargetError, match="needs the path of a build"):
        NativeExecutor(None, {})
    with pytest.raises(PolicyError, match="is not the sanitizer build"):
        NativeExecutor(str(harness.path("afl")), options_of(harness))
    with pytest.raises(PolicyError, match="give it as executor_options.sanitizer_binary"):
        NativeExecutor(str(harness.path("sanitizer")), {"afl_binary": str(harness.path("afl"))})
    check_kinds("native", ("afl", "afl"))  # the afl kind beside it: both run binary targets


def test_every_kind_takes_a_failing_inputs_outcome_from_the_sanitizer_build(harness, tmp_path):
    """Coverage is the AFL build's; the planted crash is the sanitizer's report whether the native
    executor runs it, measures it or reproduces it, or the afl kind measures it: one signature."""
    native = create("native", str(harness.path("sanitizer")), options_of(harness), scratch=tmp_path)
    afl = AflFuzzer(options=options_of(harness))
    afl.scratch_dir = tmp_path
    try:
        ok, near, planted = native.measure_many([b"FZ\x02ok", b"FZ\x04BUG.", PLANTED])
        assert ok.outcome.kind == near.outcome.kind == "ok" and ok.coverage and ok.coverage != near.coverage
        assert planted.outcome.kind == "crash" and "AddressSanitizer" in planted.outcome.signature
        outcome, report = native.reproduce_report(PLANTED)
        assert outcome == planted.outcome and "ERROR: AddressSanitizer: SEGV" in report
        assert native.run(PLANTED).findings[0].outcome == outcome
        assert afl.measure_many([PLANTED])[0].outcome == outcome
        identity = native.identity()
        assert identity["target_sha256"] == harness.builds["sanitizer"].sha256
        assert identity["coverage"]["afl_binary_sha256"] == harness.builds["afl"].sha256
        assert native.preflight([b"FZ\x02ok", PLANTED]) == {"seeds": 2, "ok": 1}
    finally:
        native.close()
        afl.close()


def test_the_harness_record_refuses_a_harness_built_again(harness):
    manifest = harness.root / MANIFEST
    record = {"manifest": str(manifest), "sha256": sha256_file(manifest)}
    NativeExecutor(str(harness.path("sanitizer")), {**options_of(harness), "harness": record}).close()
    with pytest.raises(PolicyError, match="executor_options.harness"):
        NativeExecutor(str(harness.path("sanitizer")), {**options_of(harness), "harness": {"manifest": "x"}})
    changed = {**record, "sha256": "0" * 64}
    with pytest.raises(ProvenanceChanged, match="built again"):
        NativeExecutor(str(harness.path("sanitizer")), {**options_of(harness), "harness": changed})
    with pytest.raises(ProvenanceChanged, match="built again"):
        AflFuzzer(options={**options_of(harness), "harness": changed})
    assert json.loads(manifest.read_text())["builds"]["afl"]["sha256"] == harness.builds["afl"].sha256
