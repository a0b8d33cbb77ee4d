"""compare/systems: each system kind for one short window, with real processes (afl-fuzz, atheris,
symcc-ulfm launch under mpiexec); validate() on every malformed form."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import harness_builds
from helpers.mpi import BY_COUNT

from symcc_ulfm.compare import study_targets, systems
from symcc_ulfm.compare.listing import Sampler
from symcc_ulfm.compare.systems import spawned
from symcc_ulfm.errors import ConfigError

CORES = sorted(os.sched_getaffinity(0))


def _seeds_dir(target: study_targets.StudyTarget, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for k, data in enumerate(target.seed_inputs()):
        (folder / f"seed-{k}").write_bytes(data)
    return folder


def _wait(condition, timeout: float, what: str) -> None:
    until = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < until, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.parametrize(("system", "form", "field"), [
    ([], "python", "systems.s"),
    ({"kind": "libafl"}, "python", "systems.s.kind"),
    ({"kind": "seeds", "launch": []}, "python", "systems.s"),
    ({"kind": "afl", "instances": [["-M", "main"]]}, "python", "systems.s"),
    ({"kind": "atheris"}, "binary", "systems.s"),
    ({"kind": "campaign", "launch": "--worker-kinds havoc:2"}, "python", "systems.s.launch"),
    ({"kind": "campaign", "launch": [1]}, "python", "systems.s.launch"),
    ({"kind": "campaign", "launch": ["--deadline", "60"]}, "python", "systems.s.launch"),
    ({"kind": "campaign", "launch": ["--state-dir=/tmp/x"]}, "binary", "systems.s.launch"),
    ({"kind": "campaign", "launch": ["--seed", "3"]}, "python", "systems.s.launch"),
    ({"kind": "afl", "instances": []}, "binary", "systems.s.instances"),
    ({"kind": "afl", "instances": ["-M main"]}, "binary", "systems.s.instances"),
    ({"kind": "afl", "instances": [["-M", "a"], ["-M", "b"]]}, "binary", "systems.s.instances"),
    ({"kind": "afl", "instances": [["-M", "a"], ["-p", "fast"]]}, "binary", "systems.s.instances"),
    ({"kind": "afl", "instances": [["-S", "a"], ["-S", "a"]]}, "binary", "systems.s.instances"),
    ({"kind": "afl", "instances": [["-M", "a", "-o", "/tmp"]]}, "binary", "systems.s.instances[0]"),
    ({"kind": "afl", "instances": [["-M"]]}, "binary", "systems.s.instances[0]"),
    ({"kind": "afl", "instances": [["-M", "../x"]]}, "binary", "systems.s.instances[0]"),
    ({"kind": "afl", "instances": [["-M", "a", "-S", "b"]]}, "binary", "systems.s.instances[0]"),
    ({"kind": "atheris", "processes": 0}, "python", "systems.s.processes"),
    ({"kind": "atheris", "processes": "2"}, "python", "systems.s.processes"),
    ({"kind": "atheris", "processes": True}, "python", "systems.s.processes"),
    ({"kind": "atheris", "options": ["use_value_profile=1"]}, "python", "systems.s.options"),
    ({"kind": "atheris", "options": ["-seed=3"]}, "python", "systems.s.options"),
    ({"kind": "atheris", "options": "-use_value_profile=1"}, "python", "systems.s.options"),
])
def test_validate_rejects_each_malformed_system(system, form, field):
    with pytest.raises(ConfigError) as caught:
        systems.validate("s", system, form)
    assert caught.value.field == field


@pytest.mark.parametrize(("system", "form"), [
    ({"kind": "seeds"}, "python"),
    ({"kind": "seeds"}, "binary"),
    ({"kind": "campaign", "launch": ["--worker-kinds", "havoc:1,concolic:1", "--stop-after", "3"]}, "python"),
    ({"kind": "campaign"}, "binary"),
    ({"kind": "afl", "instances": [["-M", "main", "-c", "@cmplog", "-x", "@dictionary"], ["-S", "s1", "-p", "explore"]]},
     "binary"),
    ({"kind": "afl", "instances": [["-S", "a"], ["-S", "b"]]}, "binary"),
    ({"kind": "afl", "instances": [[]]}, "binary"),
    ({"kind": "atheris", "processes": 2, "options": ["-use_value_profile=1"]}, "python"),
])
def test_validate_accepts_the_documented_forms(system, form):
    systems.validate("s", system, form)


def test_the_seeds_system_runs_nothing(tmp_path):
    target = study_targets.resolve("tok", {"python": "tokenizer"}, None)
    started = systems.start({"kind": "seeds"}, target, tmp_path / "work", tmp_path / "seeds", 1.0, CORES[:1], 0)
    assert (started.processes, started.corpus, started.findings) == ([], [], [])
    assert started.finish() == {"problems": []}


def test_stop_kills_a_session_that_ignores_sigterm(tmp_path):
    log = tmp_path / "stubborn.log"
    process = spawned.spawn(["sh", "-c", "trap '' TERM; sleep 300 & echo started; wait"], log, CORES[:1])
    _wait(lambda: "started" in log.read_text(), 10, "the shell to start")
    began = time.monotonic()
    notes = spawned.stop_all([process], ["stubborn"], [log], grace_s=0.5)
    assert time.monotonic() - began < 5
    assert notes == {"problems": [], "exit_codes": {"stubborn": -signal.SIGKILL}, "stopped_at_finding": []}
    _wait(lambda: not _group_alive(process.pid), 5, "its child (sleep) to go with its session")


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


CELL = """import sys
from pathlib import Path
from symcc_ulfm.compare.systems import spawned
process = spawned.spawn(["sleep", "300"], Path(sys.argv[1]), [int(sys.argv[2])])
print(process.pid, flush=True)
sys.stdin.read()
"""


def test_a_system_process_dies_with_the_cell_that_started_it(tmp_path):
    cell = subprocess.Popen([sys.executable, "-c", CELL, str(tmp_path / "sleep.log"), str(CORES[0])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child = int(cell.stdout.readline())
    assert _group_alive(child)
    cell.kill()
    cell.wait(timeout=10)
    _wait(lambda: not _group_alive(child), 10, "the system's process to die with its cell")


def test_atheris_fuzzes_the_tokenizer_on_one_corpus_pinned_to_its_core(tmp_path):
    target = study_targets.resolve("tok", {"python": "tokenizer"}, None)
    seeds = _seeds_dir(target, tmp_path / "seeds")
    work = tmp_path / "work"
    work.mkdir()
    began = time.monotonic()
    started = systems.start({"kind": "atheris", "processes": 2}, target, work, seeds, 3.0, CORES[:1], 7)
    sampler = Sampler(started.corpus, started.findings, began, 0.5)
    sampler.start()
    try:
        assert len(started.processes) == 2
        _wait(lambda: all("INITED" in (work / f"atheris-{k}.log").read_text() for k in range(2)), 60,
              "both atheris processes to load the corpus")
        for process in started.processes:  # taskset has pinned itself and executed the driver by now
            assert process.poll() is None
            assert os.getsid(process.pid) == process.pid
            assert os.sched_getaffinity(process.pid) == set(CORES[:1])
    finally:
        sampler.stop()
        notes = started.finish()
    assert notes["problems"] == []
    assert all(process.returncode is not None for process in started.processes)
    assert [c[-4:] for c in notes["command"]] == [["-timeout=5", "-rss_limit_mb=4096", "-error_exitcode=77",
                                                    "-timeout_exitcode=70"]] * 2
    assert {c[c.index("--") + 2] for c in notes["command"]} == {"-seed=7", "-seed=8"}
    listed = {path.name: role for path, (_, role) in sampler.first_seen.items()}
    assert listed.get("seed-0") == "corpus"  # the seeds were copied into the shared corpus
    # what the driver kept as crashes is never an exception the tokenizer raises by design (ValueError)
    crashes = [str(p) for p in (work / "crashes").iterdir() if not p.name.startswith((".", "crash-"))]
    check = ("import sys\nfrom symcc_ulfm.targets import resolve_target\nf = resolve_target('tokenizer').function\n"
             "for path in sys.argv[1:]:\n    try:\n        f(open(path, 'rb').read())\n"
             "    except Exception as exc:\n        print(type(exc).__name__)\n    else:\n        print('returned')\n")
    raised = subprocess.run([sys.executable, "-c", check, *crashes], capture_output=True, text=True, timeout=60,
                            check=True).stdout.split()
    assert len(raised) == len(crashes) and "ValueError" not in raised and "returned" not in raised


ABORTING = """import os


def parse(data: bytes) -> None:
    os.abort()  # a native crash on every input: libFuzzer reports it and ends
"""


def test_an_atheris_process_libfuzzer_ends_at_a_native_crash_is_a_finding_not_a_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the target, the seeds and the work directory named relative to it
    Path("aborting.py").write_text(ABORTING)
    target = study_targets.resolve("abort", {"python": "aborting.py:parse", "seeds": ["00"]}, None)
    seeds = _seeds_dir(target, Path("seeds"))
    work = Path("work")
    work.mkdir()
    started = systems.start({"kind": "atheris", "processes": 1}, target, work, seeds, 60.0, CORES[:1], 0)
    try:
        started.processes[0].wait(timeout=60)
    finally:
        notes = started.finish()
    assert notes["problems"] == [] and notes["stopped_at_finding"] == ["atheris-0"]
    sampler = Sampler(started.corpus, started.findings, time.monotonic(), 60)
    sampler.stop()
    assert [path.name.startswith("crash-") for path, (_, role) in sampler.first_seen.items() if role == "finding"] \
        == [True]


@pytest.fixture(scope="module")
def harness_target(tmp_path_factory):
    why = harness_builds.missing()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("harnesses")
    harness_builds.build_harness(root / "planted", sanitizer=False)
    return study_targets.resolve("planted", {"harness": "planted"}, root)


AFL_PAIR = {"kind": "afl", "instances": [["-M", "main", "-x", "@dictionary"], ["-S", "s1"]]}


@pytest.mark.skipif(len(CORES) < 2, reason="one afl-fuzz per core: needs two cores")
def test_afl_main_and_secondary_start_are_listed_and_stopped(harness_target, tmp_path):
    seeds = _seeds_dir(harness_target, tmp_path / "seeds")
    work = tmp_path / "work"
    work.mkdir()
    began = time.monotonic()
    started = systems.start(AFL_PAIR, harness_target, work, seeds, 5.0, CORES[:2], 3)
    sampler = Sampler(started.corpus, started.findings, began, 0.5)
    sampler.start()
    try:
        _wait(lambda: all((work / "afl" / name / "fuzzer_stats").exists() for name in ("main", "s1")), 60,
              "both instances' fuzzer_stats")
        assert all(process.poll() is None for process in started.processes)
        _wait(lambda: {p.parent.parent.name for p in list(sampler.first_seen)} >= {"main", "s1"}, 10,
              "both queues to be listed")
    finally:
        sampler.stop()
        notes = started.finish()
    assert notes["problems"] == []
    assert all(process.returncode is not None for process in started.processes)
    assert set(notes["exit_codes"]) == {"main", "s1"}
    assert notes["execs"] > 0 and notes["execs_unknown"] == 0
    main, secondary = notes["command"]
    assert main[main.index("-x") + 1] == str(harness_target.harness.root / "planted_fuzzer.dict")
    assert main[main.index("-s") + 1] == "3" and secondary[secondary.index("-s") + 1] == "4"
    assert main[main.index("--") + 1:] == [str(harness_target.harness.path("afl")), "-"]
    assert {path.parent.name for path in sampler.first_seen} <= {"queue", "crashes"}


@pytest.mark.skipif(len(CORES) < 2, reason="one afl-fuzz per core: needs two cores")
def test_an_afl_instance_that_dies_in_the_window_is_a_problem(harness_target, tmp_path):
    seeds = _seeds_dir(harness_target, tmp_path / "seeds")
    work = tmp_path / "work"
    work.mkdir()
    started = systems.start(AFL_PAIR, harness_target, work, seeds, 5.0, CORES[:2], 0)
    try:
        os.killpg(started.processes[1].pid, signal.SIGKILL)
        started.processes[1].wait(timeout=10)
    finally:
        notes = started.finish()
    assert len(notes["problems"]) == 1 and notes["problems"][0].startswith("s1 exited with status -9")


def test_afl_refuses_a_missing_build_and_a_core_count_before_starting(harness_target, tmp_path):
    seeds = _seeds_dir(harness_target, tmp_path / "seeds")
    cmplog = {"kind": "afl", "instances": [["-M", "main", "-c", "@cmplog"]]}
    with pytest.raises(ConfigError, match="no cmplog"):
        systems.start(cmplog, harness_target, tmp_path, seeds, 5.0, CORES[:1], 0)
    with pytest.raises(ConfigError, match="one instance per core"):
        systems.start(AFL_PAIR, harness_target, tmp_path, seeds, 5.0, CORES[:1], 0)
    assert list(tmp_path.glob("*.log")) == []


@pytest.mark.mpi
def test_a_campaign_by_count_on_the_tokenizer_passes(tmp_path):
    target = study_targets.resolve("tok", {"python": "tokenizer"}, None)
    seeds = _seeds_dir(target, tmp_path / "seeds")
    work = tmp_path / "work"
    work.mkdir()
    stop_after = BY_COUNT[:2]  # the window (the campaign's deadline) only bounds it
    began = time.monotonic()
    started = systems.start({"kind": "campaign", "launch": stop_after}, target, work, seeds, 240.0, CORES[:2], 5)
    sampler = Sampler(started.corpus, started.findings, began, 0.5)
    sampler.start()
    try:
        started.processes[0].wait(timeout=240)
    finally:
        sampler.stop()
        notes = started.finish()
    assert notes["problems"] == [], notes["problems"]
    assert notes["returncode"] == 0 and notes["passed"] is True
    assert notes["wal"]["analyzed"] >= 1
    command = notes["command"]
    assert command[command.index("--seed") + 1] == "5"
    assert command[command.index("--ranks") + 1] == str(len(CORES[:2]) + 1)
    objects = work / "state" / "corpus" / "objects"
    assert {path for path in sampler.first_seen} == set(objects.iterdir())
    assert all(role == "corpus" for _, role in sampler.first_seen.values())


@pytest.mark.mpi
@pytest.mark.slow
def test_a_campaign_of_afl_workers_on_a_harness_passes_and_notes_its_handoffs(harness_target, tmp_path):
    seeds = _seeds_dir(harness_target, tmp_path / "seeds")
    work = tmp_path / "work"
    work.mkdir()
    launch = ["--worker-kinds", "afl:2", *BY_COUNT[:1], "2"]
    started = systems.start({"kind": "campaign", "launch": launch}, harness_target, work, seeds, 240.0, CORES[:2], 0)
    try:
        started.processes[0].wait(timeout=240)
    finally:
        notes = started.finish()
    assert notes["problems"] == [], notes["problems"]
    assert notes["passed"] is True and set(notes["handoffs"]) == {"to_analysis", "to_fuzzers"}
    assert notes["command"][notes["command"].index("--harness") + 1] == str(harness_target.harness.root)
