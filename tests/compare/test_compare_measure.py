"""The comparison measurer (``symcc_ulfm.compare.measure``) on real targets: coverage.py branch arcs
of the built-in ``tokenizer`` and of a fixture that kills, hangs or crashes the process measuring
it (``tests/fixtures/measure_target.py``), and afl-showmap edges with sanitizer findings of the
harness fixture (``tests/helpers/harness_builds``), whose crash signature is the native executor's."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.harness_builds import PLANTED, harness_or_skip
from helpers.symcc import AFL_MISSING, afl_available, afl_twin

from symcc_ulfm.compare.listing import Input
from symcc_ulfm.compare.measure import measure
from symcc_ulfm.compare.measure.binary_edges import edge_sets, replay
from symcc_ulfm.compare.study_targets import BINARY, StudyTarget, resolve
from symcc_ulfm.errors import TargetError
from symcc_ulfm.executors.concolic.executor import ConcolicExecutor
from symcc_ulfm.executors.native.concrete import NativeExecutor

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "measure_target.py"
TOKENIZER_SEED = b"((4000*(3+1))-11)"


def kept(tmp_path: Path, found: list[tuple[bytes, float, str]]) -> tuple[list[Input], Path]:
    """The inputs as a cell keeps them: files ``inputs/<sha256>``, one Input each."""
    folder = tmp_path / "inputs"
    folder.mkdir(exist_ok=True)
    inputs = []
    for data, first_s, role in found:
        digest = hashlib.sha256(data).hexdigest()
        (folder / digest).write_bytes(data)
        inputs.append(Input(digest, first_s, role))
    return inputs, folder


def measured(target: StudyTarget, tmp_path: Path, found, times, jobs: int = 1) -> dict:
    inputs, folder = kept(tmp_path, found)
    scratch = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    scratch.mkdir()
    result = measure(target, inputs, folder, times, scratch, jobs)
    json.dumps(result)  # what the cell writes into result.json
    return result


def python_target(spec: str) -> StudyTarget:
    return resolve("t", {"python": spec}, None)


# -- Python targets --------------------------------------------------------------------------------


def test_deeper_inputs_add_arcs_and_the_curve_follows_first_seen_times(tmp_path):
    tokenizer = python_target("tokenizer")
    seeds = [(TOKENIZER_SEED, 0.0, "seed")]
    deeper = [(b"-(7/2)*3", 4.0, "corpus"), (b"12-3+((2))", 9.0, "corpus")]
    alone = measured(tokenizer, tmp_path, seeds, [0.0, 10.0])
    more = measured(tokenizer, tmp_path, seeds + deeper, [0.0, 2.0, 4.0, 8.0, 10.0])
    assert alone["measurer"] == "coverage.py branch arcs" and alone["unit"] == "arcs"
    assert alone["curve"] == [[0.0, alone["final"]], [10.0, alone["final"]]] and alone["final"] > 0
    assert more["final"] > alone["final"] and more["inputs"] == 3
    values = [value for _t, value in more["curve"]]
    assert [t for t, _value in more["curve"]] == [0.0, 2.0, 4.0, 8.0, 10.0]
    assert values == sorted(values) and values[0] == values[1] == alone["final"]  # the seed alone until 4 s
    assert values[2] > values[1] and values[-1] == more["final"]
    assert more["findings"] == [] and more["first_finding_s"] is None and more["hangs"] == 0


def test_an_unexpected_exception_is_one_finding_per_signature_from_its_earliest_input(tmp_path):
    """``%`` by zero is the tokenizer's documented bug (its ValueError rejections are expected):
    two inputs raise it at the same place, one signature (the concolic executor's), the earlier
    input's first_s."""
    found = [(TOKENIZER_SEED, 0.0, "seed"), (b"1+", 1.0, "corpus"), (b"7%0", 3.5, "corpus"),
             (b"8%0", 6.0, "finding"), (b"(" * 3000, 7.0, "finding")]
    result = measured(python_target("tokenizer"), tmp_path, found, [0.0, 10.0])
    by_signature = {f["signature"]: f for f in result["findings"]}
    campaign = ConcolicExecutor("tokenizer").measure(b"8%0").outcome  # what a concolic worker reports
    assert campaign.kind == "exception" and campaign.signature.startswith("ZeroDivisionError at tokenizer.py:")
    assert by_signature[campaign.signature]["first_s"] == 3.5
    assert by_signature[campaign.signature]["sha256"] == hashlib.sha256(b"7%0").hexdigest()
    assert any(s.startswith("RecursionError") for s in by_signature) and len(by_signature) == 2
    assert result["first_finding_s"] == 3.5 and result["hangs"] == 0


def test_a_hang_and_deaths_of_the_child_are_recorded_and_later_inputs_still_measured(tmp_path):
    target = python_target(f"{FIXTURE}:target")
    base = measured(target, tmp_path, [(b"", 0.0, "seed")], [0.0])
    found = [(b"", 0.0, "seed"), (b"exit", 1.0, "corpus"), (b"loop", 2.0, "corpus"), (b"segv", 3.0, "corpus"),
             (b"key", 4.0, "corpus"), (b"a", 5.0, "corpus")]
    result = measured(target, tmp_path, found, [0.0, 1.5, 4.5, 6.0])
    assert result["hangs"] == 1
    firsts = {f["signature"]: f["first_s"] for f in result["findings"]}
    assert firsts.pop("exit:7") == 1.0 and firsts.pop("signal:SIGSEGV") == 3.0
    (key,) = firsts
    assert key.startswith("KeyError at measure_target.py:target:") and firsts[key] == 4.0
    values = [value for _t, value in result["curve"]]
    assert values[0] == base["final"] and values == sorted(values)
    assert values[-1] == result["final"] > values[2]  # "a", measured after three deaths and a hang, adds arcs


@pytest.mark.slow
def test_an_input_that_ignores_the_alarm_is_a_hang_once_the_child_is_killed(tmp_path):
    target = python_target(f"{FIXTURE}:target")
    result = measured(target, tmp_path, [(b"", 0.0, "seed"), (b"deaf", 1.0, "corpus"), (b"key", 2.0, "corpus")],
                      [0.0, 2.0])
    assert result["hangs"] == 1 and [f["first_s"] for f in result["findings"]] == [2.0]


def test_a_target_that_cannot_load_is_a_target_error(tmp_path):
    target = StudyTarget("t", "python", spec=f"{FIXTURE}:nowhere", seeds=(b"",))
    with pytest.raises(TargetError, match="cannot load it"):
        measured(target, tmp_path, [(b"", 0.0, "seed")], [0.0])


# -- binary targets --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return harness_or_skip(tmp_path_factory.mktemp("harness") / "planted")


OK, NEAR = b"FZ\x02ok", b"FZ\x04BUG."
OUTCOMES = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    static char line[1 << 16];
    int first = getchar();
    if (first == 'E') return 3;           /* an exit status alone: no finding */
    if (first == 'C') raise(SIGABRT);     /* a crash without a sanitizer */
    if (first == 'H') for (;;) pause();   /* a hang */
    if (first == 'S') {                   /* stderr without end */
        memset(line, 'x', sizeof line);
        for (;;) fwrite(line, 1, sizeof line, stderr);
    }
    return 0;
}
"""


def test_edges_of_two_paths_exceed_one_and_the_curve_follows_first_seen_times(harness, tmp_path):
    target = StudyTarget("planted", BINARY, harness=harness)
    one = measured(target, tmp_path, [(OK, 0.0, "seed")], [0.0])
    both = measured(target, tmp_path, [(OK, 0.0, "seed"), (NEAR, 5.0, "corpus")], [0.0, 4.0, 5.0, 9.0], jobs=2)
    assert one["measurer"] == "afl-showmap edges" and one["unit"] == "edges" and one["final"] > 0
    assert both["final"] > one["final"]
    assert both["curve"] == [[0.0, one["final"]], [4.0, one["final"]], [5.0, both["final"]], [9.0, both["final"]]]
    assert both["findings"] == [] and both["hangs"] == 0
    sets = edge_sets(harness.path("afl"), {"ok": OK, "near": NEAR}, tmp_path, harness.args)
    assert sets["ok"] != sets["near"] and len(sets["ok"] | sets["near"]) == both["final"]


def test_an_empty_input_is_mapped_alone(tmp_path):
    """afl-showmap -i DIR skips an empty file; its edges come from a run of its own."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    twin = afl_twin(tmp_path)
    sets = edge_sets(twin, {"empty": b"", "some": b"abc"}, tmp_path)
    assert sets["empty"] and sets["some"] and sorted(p.name for p in tmp_path.iterdir()) == [twin.name]


def test_replays_a_signal_is_its_name_a_hang_is_counted_and_stderr_is_capped(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    program = tmp_path / "outcomes"
    subprocess.run(["gcc", "-o", str(program), "-x", "c", "-"], input=OUTCOMES.encode(), check=True)
    inputs, folder = kept(tmp_path, [(word, float(i), "corpus") for i, word in enumerate([b"ok", b"E", b"C", b"H", b"S"])])
    (tmp_path / "scratch").mkdir()
    outcomes = replay(program, [], inputs, folder, tmp_path / "scratch", jobs=2)
    assert outcomes == [("ok", ""), ("ok", ""), ("crash", "signal:SIGABRT"), ("hang", ""), ("crash", "signal:SIGXFSZ")]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_crash_anywhere_is_the_native_executors_sanitizer_signature(harness, tmp_path):
    """The planted input sits in a queue (role corpus), found again later as a finding: one
    signature, the crash state the native executor reports, at the earlier first_s."""
    target = StudyTarget("planted", BINARY, harness=harness)
    found = [(OK, 0.0, "seed"), (PLANTED, 3.0, "corpus"), (PLANTED + b"x", 7.0, "finding")]
    result = measured(target, tmp_path, found, [0.0, 10.0], jobs=2)
    native = NativeExecutor(str(harness.path("sanitizer")), {"sanitizer_binary": str(harness.path("sanitizer")),
                                                              "args": harness.args})
    native.scratch_dir = tmp_path
    try:
        expected = native.reproduce(PLANTED)
    finally:
        native.close()
    assert expected.kind == "crash" and expected.signature.startswith("AddressSanitizer: SEGV")
    assert result["findings"] == [{"signature": expected.signature, "first_s": 3.0,
                                   "sha256": hashlib.sha256(PLANTED).hexdigest()}]
    assert result["first_finding_s"] == 3.0 and result["hangs"] == 0 and result["inputs"] == 3
