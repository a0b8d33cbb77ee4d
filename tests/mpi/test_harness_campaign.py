"""``launch --harness DIR``: a campaign of AFL++ builds alone (the ``native`` executor beside ``afl``
workers, no SymCC) on the harness fixture (``tests/fixtures/harness``: a libFuzzer harness with a
planted SIGSEGV one byte from its seed), built in the test with afl-clang-fast (and its CmpLog
build), libAFLDriver and clang's sanitizers (``tests/helpers/harness_builds``), under real
``mpiexec --with-ft ulfm``.

The campaign kills its first afl worker (rank 1) in generation 0 and ends by a count (every worker
of generation 1 has its slices committed); it passes the oracle and holds the planted crash as a
finding with the sanitizer's report as its signature; ``replay`` reproduces it with that report
and ``minimize`` shrinks it; a resume after the harness was built again is refused. The count is generous for afl-fuzz with the harness's dictionary
(the word is one dictionary overwrite away from the seed); the test asserts the finding, not a
time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from helpers.harness_builds import PLANTED, build_harness, missing
from helpers.mpi import launch

from symcc_ulfm.harness import directory

pytestmark = pytest.mark.mpi


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    reason = missing()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("harness-campaign")
    harness = build_harness(base / "planted", cmplog=True)
    run = launch(base / "state", "--harness", str(harness.root), "--worker-kinds", "afl:2", "--ranks", "4",
                 "--warm-spares", "1", "--workers-per-master", "2", "--failure-schedule", "0:1", "--slice", "1",
                 "--stop-after", "15", "--deadline", "300", timeout=400)
    assert run.returncode == 0, run.stderr[-3000:] + json.dumps(run.verdict.get("problems"))
    return harness, run


def planted_finding(state) -> dict:
    listed = json.loads(_cli("findings", str(state), "--json").stdout)
    crashes = [row for row in listed["findings"] if row["kind"] == "crash"]
    assert len(crashes) == 1, listed["findings"]
    return crashes[0]


def test_an_afl_only_campaign_survives_its_killed_worker_and_finds_the_planted_crash(campaign):
    harness, run = campaign
    verdict = run.verdict
    assert run.outcome == "budget-reached"
    assert verdict["passed"] and verdict["receipts"] == [{"generation": 1, "missing": [1]}]
    assert verdict["double_counted"] == 0 and verdict["lost_objects"] == 0
    assert set(verdict["attribution"]) == {"afl"}, verdict["attribution"]
    assert f"harness: native on {harness.path('sanitizer')}; worker kinds afl:2 (no SymCC build" in run.stderr
    assert "an AFL++-only campaign)" in run.stderr  # said before the job: no SymCC worker runs
    policy = json.loads((run.state / "policy.json").read_text())
    assert policy["executor"] == "native" and policy["target"] == str(harness.path("sanitizer"))
    options = policy["executor_options"]
    assert options["afl_binary"] == str(harness.path("afl")) and options["args"] == ["-"]
    assert options["harness"]["manifest"] == str(harness.root / "harness.json")
    assert "dictionary" in options  # the harness's, for afl-fuzz -x
    assert options["cmplog_binary"] == str(harness.path("cmplog"))  # for afl-fuzz -c, through the launcher
    # each afl-fuzz runs the variant of its position (core.afl_diversity), as the workers log it:
    # rank 2, a secondary beside rank 1 in generation 0, is the main instance (CmpLog) once rank 1 died
    started = [(e["generation"], e["rank"], e["settings"]) for e in run.log_events("fuzzer-started")]
    assert all("-x" in settings["argv"] for _, _, settings in started)  # the harness's dictionary, everywhere
    assert {(g, r): s["role"] for g, r, s in started if g == 1} == {(1, 2): "main", (1, 3): "secondary"}, started
    assert all(s["role"] == "secondary" for g, r, s in started if (g, r) == (0, 2)), started
    for _, _, settings in started:
        argv = settings["argv"]
        assert ("-c" in argv) == (settings["role"] == "main") == (settings["cmplog"] == "2AT"), settings
    finding = planted_finding(run.state)
    assert "AddressSanitizer" in finding["signature"], finding


def test_replay_shows_the_sanitizer_report_and_minimize_shrinks_the_crash(campaign, tmp_path):
    _, run = campaign
    finding = planted_finding(run.state)
    done = _cli("replay", str(run.state), finding["id"], "--repeat", "2", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = json.loads(done.stdout)
    assert replayed["reproduced"] is True and "ERROR: AddressSanitizer: SEGV" in replayed["report"]
    assert "planted_fuzzer.c" in replayed["report"]  # the stack of the sanitizer build, with its source lines
    out = tmp_path / "min"
    done = _cli("minimize", str(run.state), finding["id"], "--out", str(out), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    minimized = json.loads(done.stdout)
    assert minimized["signature"] == finding["signature"]
    assert out.read_bytes().startswith(PLANTED[:2]) and PLANTED[3:] in out.read_bytes()
    assert minimized["minimized_size"] <= minimized["input_size"]


def test_a_resume_after_the_harness_was_built_again_is_refused(campaign):
    """The policy records the manifest's path and SHA-256: a resume with ``--harness`` of the rebuilt
    directory differs from the stored policy (exit 2, naming the field), and a resume of the stored
    policy is refused by every kind's check of the manifest (exit 6); nothing starts either way."""
    harness, run = campaign
    manifest = harness.root / "harness.json"
    kept = manifest.read_bytes()
    try:
        directory.write(replace(harness, source={**harness.source, "rebuilt": True}))
        given = _cli("launch", "--state-dir", str(run.state), "--resume", "--harness", str(harness.root))
        assert given.returncode == 2 and "executor_options.harness: stored" in given.stderr, given.stderr
        stored = _cli("launch", "--state-dir", str(run.state), "--resume")
        assert stored.returncode == 6 and "the harness was built again since" in stored.stderr, stored.stderr
    finally:
        manifest.write_bytes(kept)


def test_a_native_worker_beside_an_afl_worker_checks_what_it_finds(campaign, tmp_path):
    """``--worker-kinds afl:1,native:1``: the native worker runs each input concretely on the
    sanitizer build (analyses without candidates) and, with nothing to analyze, is lent to afl; the
    oracle passes and attributes inputs only to afl."""
    harness, _ = campaign
    run = launch(tmp_path / "state", "--harness", str(harness.root), "--worker-kinds", "afl:1,native:1",
                 "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2", "--slice", "1",
                 "--stop-after", "3", "--deadline", "240")
    assert run.returncode == 0, run.stderr[-3000:] + json.dumps(run.verdict.get("problems"))
    attribution = run.verdict["attribution"]
    assert attribution["native"]["works"] >= 1 and attribution["native"]["inputs"] == 0, attribution
    analyzed = [e for e in run.log_events("commit") if not e.get("slice") and e["worker"] == 2]
    assert analyzed, "the native worker analyzed nothing"
