"""Smoke test of ``benchmarks/bench_harness.py``'s machinery, never its figures: the harness fixture
(``tests/fixtures/harness``: an OSS-Fuzz build script, a libFuzzer harness with a planted bug, its
dictionary and seeds) built by ``symcc-ulfm build --script``, one 5 s window of ``afl2`` (afl-fuzz
-M/-S) and of ``campaign-afl`` (``launch --harness --worker-kinds afl:2`` under mpiexec), each
measured by the one measurer, the table printed; the measurer's crashes told apart by the
sanitizer build's crash state; executions counted within the window."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.harness_builds import PLANTED, missing

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import bench_harness, c_bench  # noqa: E402
from benchmarks.bench_hybrid import Outcome  # noqa: E402

pytestmark = pytest.mark.mpi
SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "build.sh"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    reason = missing()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("bench-harness") / "run"
    assert bench_harness.main(["--script", f"planted={SCRIPT}", "--targets", "planted", "--systems",
                               "afl2,campaign-afl", "--seconds", "5", "--rounds", "1", "--cores", "0",
                               "--out", str(out)]) == 0
    return out


def test_afl2_and_our_campaign_each_give_a_measured_row(run):
    report = json.loads((run / "results.json").read_text())
    rows = {o["system"]: o for o in report["results"]}
    assert set(rows) == {"afl2", "campaign-afl"}
    seeds = sorted((run / "seeds" / "planted").iterdir())
    assert [p.read_bytes() for p in seeds] == [p.read_bytes() for p in sorted((run / "harness" / "planted" / "seeds")
                                                                              .iterdir())]
    for system, row in rows.items():
        assert row["skipped"] is None and row["failed"] is None, (system, row["failed"])
        assert row["corpus"] >= len(seeds) and row["edges"] > 0, row  # the seeds at least
        assert {"execs_done", "afl_instances", "execs_per_s"} <= set(row["notes"]), row["notes"]
        assert row["timeline"][-1][2] == row["edges"]
    assert rows["campaign-afl"]["notes"]["passed"] is True
    command = rows["campaign-afl"]["notes"]["command"]
    assert command[command.index("--harness") + 1] == str(run / "harness" / "planted")
    assert command[command.index("--worker-kinds") + 1] == "afl:2"
    text = (run / "table.txt").read_text()
    assert "afl2 " in text and "campaign-afl" in text and "execs/s" in text and "oracle" in text
    assert "packages: -" in text  # a script's harness comes from no Debian package


def test_the_measurer_counts_the_sanitizer_builds_crash(run, tmp_path):
    from symcc_ulfm.harness import directory

    harness = directory.read(run / "harness" / "planted")
    measurer = bench_harness.measurer(harness, tmp_path, 1)
    outcome = Outcome("planted", "none", 0, 0.0)
    seeds = {c_bench.sha256(d): d for d in (b"ok", PLANTED)}
    measurer.score(outcome, None, seeds)
    assert outcome.corpus == 2 and outcome.edges > 0
    assert outcome.crashes == 1, outcome.notes
    # the crash state the campaign names its findings by: no build path, no line
    assert outcome.notes["crash_signatures"] == ["AddressSanitizer: SEGV in LLVMFuzzerTestOneInput"]


def test_execs_count_an_instance_that_ran_past_the_window_pro_rata(tmp_path):
    def stats(name: str, start: int, last: int, done: int) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "fuzzer_stats").write_text(
            f"start_time        : {start}\nlast_update       : {last}\nexecs_done        : {done}\n")

    stats("inside", 1000, 1010, 500)  # stopped at the window's end
    stats("past", 1002, 1022, 2000)  # 8 of its 20 s inside the window
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "fuzzer_stats").symlink_to(tmp_path / "past" / "fuzzer_stats")  # not followed
    got = bench_harness.afl_execs(tmp_path, 10.0, 1010.0)
    assert got == {"execs_done": 2500, "execs_in_window": 500 + 800, "afl_instances": 2, "execs_per_s": 130.0}
