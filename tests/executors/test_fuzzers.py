"""Fuzzer worker kinds against real processes: AFL++'s afl-fuzz on the AFL twin of the SymCC
stand-in (``tests/fixtures/symcc``, not SymCC), and the engine's havoc fuzzer on a built-in
Python target, contained; then a hybrid campaign under real ``mpiexec --with-ft ulfm`` that kills
its fuzzer worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.mpi import launch, status_json, wal_accounts
from helpers.symcc import AFL_MISSING, CMPLOG, afl_available, afl_twin, cmplog_twin, compile_c, stand_in

from symcc_ulfm.core.slices import descriptor
from symcc_ulfm.executors import create
from symcc_ulfm.executors.fuzzers.afl import TARGET_DIR, AflFuzzer
from symcc_ulfm.executors.fuzzers.afl_sync import FOREIGN
from symcc_ulfm.executors.sandbox import landlock


def slice_of(seq: int, seconds: float, kind: str = "afl") -> dict:
    return descriptor(kind, 0, 0, 1, seq, seconds)


@pytest.fixture(scope="module")
def twin(tmp_path_factory) -> Path:
    if not afl_available():
        pytest.skip(AFL_MISSING)
    return afl_twin(tmp_path_factory.mktemp("afl-twin"))


@pytest.fixture(scope="module")
def twin_cmplog(tmp_path_factory) -> Path:
    if not afl_available():
        pytest.skip(AFL_MISSING)
    return cmplog_twin(tmp_path_factory.mktemp("afl-cmplog"))


def afl_processes(root: Path) -> list[int]:
    """The afl-fuzz processes working in ``root`` (found by their command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmdline and cmdline[0].endswith(b"afl-fuzz") and str(root).encode() in b" ".join(cmdline):
                found.append(int(entry))
    return found


def afl_stats(root: Path) -> dict[str, str]:
    """The ``fuzzer_stats`` afl-fuzz wrote in its directory ``root`` (the last at its exit)."""
    lines = (root / "sync" / "worker" / "fuzzer_stats").read_text().splitlines()
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}


def test_afl_keeps_its_own_finds_imports_the_campaigns_and_resumes_after_it_died(twin, tmp_path):
    fuzzer = AflFuzzer(options={"afl_binary": str(twin)})
    fuzzer.scratch_dir = tmp_path
    try:
        fuzzer.offer([b"ZZZZ", b"", b"x" * (2 << 20)])  # the empty and the oversized one are not afl-fuzz's
        first = fuzzer.fuzz(slice_of(1, 3.0))
        assert first.notes["started"] == "fresh" and fuzzer.starts == 1
        root = fuzzer.root
        assert afl_processes(root), "afl-fuzz is not running"
        assert sorted(os.listdir(root / "in")) == ["000000"]  # only the input afl-fuzz can take
        fuzzer.offer([b"SYM\x80", b"CRSH"])  # found elsewhere: afl-fuzz imports them as a foreign queue
        assert sorted(os.listdir(root / "sync" / FOREIGN / "queue")) == [  # dense ids, in the order offered
            f"id:000000,orig:{hashlib.sha256(b'SYM' + bytes([128])).hexdigest()[:16]}",
            f"id:000001,orig:{hashlib.sha256(b'CRSH').hexdigest()[:16]}"]
        results = [fuzzer.fuzz(slice_of(seq, 3.0)) for seq in (2, 3)]
        kept = [c for r in (first, *results) for c in r.candidates]
        assert all(0 < len(c) <= 1 << 20 for c in kept)
        assert len(kept) == len(set(kept))  # each of its own entries returned once
        measured = fuzzer.measure_many(kept)
        assert all(m is not None and m.coverage for m in measured)
        # afl-fuzz killed from outside: the next slice starts it again on its own directory
        for pid in afl_processes(root):
            os.kill(pid, signal.SIGKILL)
        # an exiting process loses its command line before it can be reaped: wait for its exit status
        fuzzer._process.wait(timeout=30)
        assert not afl_processes(root), "afl-fuzz outlived SIGKILL"
        again = [fuzzer.fuzz(slice_of(4, 1.0))]
        assert again[0].notes["started"] == "resumed" and fuzzer.starts == 2
        # afl-fuzz took the campaign's inputs: at its first sync after they were offered (every
        # 30 s, maybe within slices 2-3) or when the resumed one imports first; slices until it did
        until = time.monotonic() + 90
        while not sum(r.notes["imported"] for r in (*results, *again)) and time.monotonic() < until:
            again.append(fuzzer.fuzz(slice_of(4 + len(again), 1.0)))
        seen = [r.notes for r in (*results, *again)]
        assert sum(notes["imported"] for notes in seen) >= 1, seen
    finally:
        fuzzer.close()
    assert afl_processes(tmp_path) == []
    # the resumed afl-fuzz went on from the count its directory held: never more counted than ran
    final = afl_stats(root)["execs_done"]
    assert 0 < sum(r.executions for r in (first, *results, *again)) <= int(final), final


def test_afl_slices_return_afl_fuzzs_own_executions_and_map_size(twin, tmp_path):
    """Each slice's executions are what afl-fuzz's ``execs_done`` grew by since the slice before, so
    the slices together account for afl-fuzz's executions (its start's calibration included) and
    never for more than it ran (its count when it exits); the notes carry its map size."""
    fuzzer = AflFuzzer(options={"afl_binary": str(twin)})
    fuzzer.scratch_dir = tmp_path
    try:
        fuzzer.offer([b"ZZZZ"])
        slices = [fuzzer.fuzz(slice_of(seq, 1.0)) for seq in (1, 2)]
        root = fuzzer.root
    finally:
        fuzzer.close()
    ran = afl_stats(root)
    assert 0 < slices[0].executions and sum(s.executions for s in slices) <= int(ran["execs_done"]), ran
    assert all(s.notes["map_size"] == slices[0].notes["map_size"] > 0 for s in slices)


def test_afl_reads_the_count_of_plot_data_only_from_the_running_afl_fuzz(tmp_path):
    """``plot_data``'s last whole line (``total_execs``), when written since afl-fuzz started; never
    through a link."""
    from symcc_ulfm.executors.fuzzers.afl_files import plotted_execs

    plot = tmp_path / "plot_data"
    header = "# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, " \
             "saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found\n"
    plot.write_text(header)
    assert plotted_execs(plot, 0.0) is None  # the header only
    plot.write_text(header + "61, 0, 3, 12, 9, 1, 0.41%, 0, 0, 2, 450.10, 27500, 40\n"
                    "66, 0, 4, 13, 9, 1, 0.43%, 0, 0, 2, 452.00, 29760, 42\n66, 0, 4")  # the last line not whole
    assert plotted_execs(plot, 0.0) == 29760
    assert plotted_execs(plot, time.time() + 60) is None  # older than the running afl-fuzz
    (tmp_path / "link").symlink_to(plot)
    assert plotted_execs(tmp_path / "link", 0.0) is None


def test_contained_afl_goes_on_fuzzing_while_the_worker_measures_beside_it(twin, tmp_path):
    """In the sandbox child (a child subreaper that ends what each measured binary left behind)
    afl-fuzz is the executor's own child: a measurement between two slices must not end it, or
    every slice would restart it and return its renamed queue again."""
    fuzzer = create("afl", None, {"afl_binary": str(twin)}, scratch=tmp_path)
    try:
        fuzzer.offer([b"ZZZZ"])
        first = fuzzer.fuzz(slice_of(1, 2.0))
        assert first.notes["started"] == "fresh"
        measured = fuzzer.measure_many([b"ZZZZ", b"SYM\x80", *first.candidates])
        assert all(m is not None for m in measured)
        later = [fuzzer.fuzz(slice_of(seq, 1.0)) for seq in (2, 3)]
        assert all("started" not in r.notes for r in later), [r.notes for r in later]
        returned = [c for r in (first, *later) for c in r.candidates]
        assert len(returned) == len(set(returned))  # each of its entries once
    finally:
        fuzzer.close()
    assert afl_processes(tmp_path) == []


PLANT = Path(__file__).resolve().parents[1] / "fixtures" / "afl" / "plant.c"


def test_an_afl_target_plants_nothing_in_afl_fuzzs_directory(tmp_path):
    """A hostile target (tests/fixtures/afl/plant.c) tries, on every execution under afl-fuzz and
    under the worker's measurements, to write afl-fuzz's finds into its directory: a queue entry and
    a crash under afl-fuzz's naming by the absolute and the relative path, its bytes appended to
    afl-fuzz's own queue entries, crashes through ``/proc/PID/cwd`` and ``/proc/PID/root`` of each
    of its ancestors. Every attempt is refused, and nothing planted is returned as afl-fuzz's."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    binary = compile_c("afl-cc", tmp_path / "plant", PLANT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    fuzzer = create("afl", None, {"afl_binary": str(binary), "args": [str(scratch / "afl-fuzz")]}, scratch=scratch)
    try:
        fuzzer.offer([b"ZZZZ", b"SYMS"])
        slices = [fuzzer.fuzz(slice_of(1, 2.0))]
        measured = fuzzer.measure_many([b"ZZZZ", b"SYM!", *slices[0].candidates])  # the target runs here too
        assert all(m is not None for m in measured)
        slices += [fuzzer.fuzz(slice_of(seq, 1.0)) for seq in (2, 3)]
    finally:
        fuzzer.close()
    kept = [c for s in slices for c in s.candidates]
    assert kept, [s.notes for s in slices]  # afl-fuzz ran the target and kept what it found
    assert not [c for c in kept if b"PLANTED" in c], [s.notes for s in slices]
    found = [f.data for s in slices for f in s.findings]  # afl-fuzz's crashes/ and hangs/: findings of the slice
    assert not [data for data in found if b"PLANTED" in data], found
    logs = list(scratch.rglob("plant-attempts"))
    assert len(logs) == 1, logs
    attempts = logs[0].read_text().splitlines()
    paths = [line.split()[-1] for line in attempts]
    assert {p.split("/")[-2] for p in paths} == {"queue", "crashes"}, attempts
    through_proc = [p for p in paths if p.startswith("/proc/")]
    assert len(through_proc) >= 8, attempts  # cwd and root of its fork server, afl-fuzz, the worker's child, PID 1
    assert not [line for line in attempts if not line.startswith("refused")], attempts
    planted = [p for p in (scratch / "afl-fuzz").rglob("*") if p.is_file() and b"PLANTED" in p.read_bytes()]
    assert planted == []


def test_a_confined_afl_target_keeps_its_persistent_mode(tmp_path):
    """afl-fuzz cannot check a binary it starts through the confining launcher; the executor tells
    it what its check would have found: a persistent-mode binary (tests/fixtures/afl/persistent.c,
    ``__AFL_LOOP(4)``) runs 4 inputs per process, and writes where its TMPDIR says (the only
    directory it may write). Slices until a process has ended its loop (bounded by count)."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    binary = compile_c("afl-cc", tmp_path / "persistent", PLANT.parent / "persistent.c")
    fuzzer = AflFuzzer(options={"afl_binary": str(binary)})
    fuzzer.scratch_dir = tmp_path
    counts: list[int] = []
    try:
        fuzzer.offer([b"QQQQ"])
        for seq in range(1, 31):
            fuzzer.fuzz(slice_of(seq, 1.0))
            written = [p.read_text() for p in (tmp_path / TARGET_DIR).glob("iterations-*")]
            counts = [int(text) for text in written if text.endswith("\n")]  # a process writing its count: not yet
            if counts:
                break
    finally:
        fuzzer.close()
    assert counts and set(counts) == {4}, counts


MAGIC = PLANT.parent / "magic.c"
MAGIC_VALUE = (0x1BADC0FFEE15DEAD).to_bytes(8, "little")


def test_afl_fuzz_runs_the_cmplog_build_confined_and_solves_what_needs_it(tmp_path):
    """The only afl-fuzz of a campaign is its main instance with CmpLog ``-l 2AT``
    (core.afl_diversity): afl-fuzz starts the CmpLog build through the launcher (its
    ``command_line``), and its input-to-state stage (``op:its``) finds the crash behind a whole
    64-bit compare (tests/fixtures/afl/magic.c) from a seed of other bytes. Slices until the crash
    (bounded by count)."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    main = compile_c("afl-cc", tmp_path / "magic", MAGIC)
    cmplog = compile_c("afl-cc", tmp_path / "magic.cmplog", MAGIC, env=CMPLOG)
    fuzzer = AflFuzzer(options={"afl_binary": str(main), "cmplog_binary": str(cmplog)})
    fuzzer.scratch_dir = tmp_path
    slices = []
    try:
        fuzzer.offer([b"AAAAAAAA"])
        for seq in range(1, 61):
            slices.append(fuzzer.fuzz(slice_of(seq, 1.0)))
            if any(s.notes.get("crashes") for s in slices):
                break
    finally:
        fuzzer.close()
    settings = slices[0].notes["settings"]
    assert settings["role"] == "main" and settings["cmplog"] == "2AT" and settings["position"] == [0, 1]
    command_line = afl_stats(tmp_path / "afl-fuzz")["command_line"].split()
    assert command_line[command_line.index("-c") + 1] == sys.executable  # the launcher, as afl-fuzz's target is
    assert command_line[command_line.index("--cmplog") + 1] == str(cmplog)
    assert command_line[command_line.index("-l") + 1] == "2AT" and "-M" in command_line
    crashes = [c for s in slices for c in s.candidates if c[:8] == MAGIC_VALUE]
    assert crashes, [s.notes for s in slices]
    names = os.listdir(tmp_path / "afl-fuzz" / "sync" / "worker" / "crashes")
    # afl-fuzz's own record of the crash; which stage found it first (CmpLog's input-to-state, or havoc
    # with the auto-dictionary's constant) is a race between stages, not something a test may decide
    assert [n for n in names if n.startswith("id:") and ",sig:" in n], names


HDR_OPCODE = Path(__file__).resolve().parents[2] / "benchmarks" / "c_targets" / "hdr_opcode.c"


def test_afl_fuzz_gets_the_map_of_a_cmplog_build_larger_than_the_main_ones(tmp_path):
    """CmpLog instrumentation adds edges: the checksum target's main build reports a 62-entry map
    (afl-fuzz rounds it to 64) and its CmpLog build 77, and afl-fuzz aborts on a CmpLog build whose
    map exceeds ``AFL_MAP_SIZE``. The kind gives afl-fuzz the larger map, so its main instance
    starts and fuzzes; a few slices (bounded by count) see it keep running."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    include = f"-I{HDR_OPCODE.parent}"
    main = compile_c("afl-cc", tmp_path / "hdr", HDR_OPCODE, include)
    cmplog = compile_c("afl-cc", tmp_path / "hdr.cmplog", HDR_OPCODE, include, env=CMPLOG)
    sizes = [int(subprocess.run([str(b)], env={"AFL_DUMP_MAP_SIZE": "1"}, capture_output=True).stdout)
             for b in (main, cmplog)]
    assert sizes[0] <= 64 < sizes[1], sizes  # the builds cross afl-fuzz's power of two, as in the study
    fuzzer = AflFuzzer(options={"afl_binary": str(main), "cmplog_binary": str(cmplog)})
    fuzzer.scratch_dir = tmp_path
    try:
        fuzzer.offer([b"SQ\x01\x01\xa5\x00"])
        slices = [fuzzer.fuzz(slice_of(seq, 1.0)) for seq in range(1, 4)]
    finally:
        fuzzer.close()
    assert [s.notes.get("started") for s in slices] == ["fresh", None, None], [s.notes for s in slices]
    assert not any("afl_fuzz_exit" in s.notes for s in slices), [s.notes for s in slices]
    assert slices[-1].notes["map_size"] == max(sizes)
    assert afl_stats(tmp_path / "afl-fuzz")["command_line"].split().count("-c") == 1

def test_a_cmplog_build_plants_nothing_in_afl_fuzzs_directory(tmp_path):
    """The hostile target of the test above (tests/fixtures/afl/plant.c) as the campaign's CmpLog
    build, beside a benign AFL build: afl-fuzz runs it for its CmpLog stage, through the launcher,
    and each of its attempts to write afl-fuzz's finds is refused; nothing planted is returned."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    main = compile_c("afl-cc", tmp_path / "magic", MAGIC)
    hostile = compile_c("afl-cc", tmp_path / "plant.cmplog", PLANT, env=CMPLOG)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    fuzzer = create("afl", None, {"afl_binary": str(main), "cmplog_binary": str(hostile),
                                  "args": [str(scratch / "afl-fuzz")]}, scratch=scratch)
    slices = []
    try:
        fuzzer.offer([b"ZZZZZZZZ", b"SYMSSYMS"])
        for seq in range(1, 31):  # until the CmpLog build ran (it logs its attempts at its first run)
            slices.append(fuzzer.fuzz(slice_of(seq, 1.0)))
            if list(scratch.rglob("plant-attempts")):
                break
    finally:
        fuzzer.close()
    assert slices[0].notes["settings"]["cmplog"] == "2AT"
    logs = list(scratch.rglob("plant-attempts"))
    assert len(logs) == 1, [s.notes for s in slices]  # the CmpLog build ran (the AFL build is benign)
    attempts = logs[0].read_text().splitlines()
    assert [p for p in attempts if " /proc/" in p], attempts  # through the processes above it, too
    assert attempts and not [line for line in attempts if not line.startswith("refused")], attempts
    kept = [c for s in slices for c in s.candidates]
    assert not [c for c in kept if b"PLANTED" in c]
    planted = [p for p in (scratch / "afl-fuzz").rglob("*") if p.is_file() and b"PLANTED" in p.read_bytes()]
    assert planted == []


REFUSED = """
import sys
from symcc_ulfm.errors import SymccUlfmError
from symcc_ulfm.executors import create
executor = create("afl", None, {"afl_binary": "/bin/true"})
try:
    executor.identity()
except SymccUlfmError as exc:
    print(type(exc).__name__, exc)
    sys.exit(exc.exit_code)
finally:
    executor.close()
"""


def test_the_afl_kind_is_refused_where_the_kernel_has_no_landlock(tmp_path):
    """Run as on a kernel without Landlock (tests/fixtures/afl/no_landlock.c: a seccomp filter
    makes its system calls fail with ENOSYS), the afl kind is refused (CapabilityError, exit 5)
    saying why, in its sandbox before afl-fuzz or its target runs: its target is never started
    with afl-fuzz's directory writable."""
    launcher = compile_c("gcc", tmp_path / "no_landlock", PLANT.parent / "no_landlock.c")
    done = subprocess.run([str(launcher), sys.executable, "-c", REFUSED], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 5, done.stdout + done.stderr
    assert done.stdout.startswith("CapabilityError") and "has no Landlock" in done.stdout, done.stdout
    if landlock.unavailable() is None:  # the kernel has it: the same refused for another reason (not an AFL build)
        allowed = subprocess.run([sys.executable, "-c", REFUSED], capture_output=True, text=True, timeout=120)
        assert allowed.returncode == 2 and "Landlock" not in allowed.stdout, allowed.stdout + allowed.stderr


def test_afl_refuses_a_binary_it_cannot_fuzz(tmp_path):
    plain = tmp_path / "plain"
    subprocess.run(["gcc", "-o", str(plain), "-x", "c", "-"], input=b"int main(void){return 0;}", check=True)
    from symcc_ulfm.errors import TargetError

    with pytest.raises(TargetError, match="not AFL-instrumented"):
        AflFuzzer(options={"afl_binary": str(plain)})
    with pytest.raises(TargetError, match="afl_binary"):
        AflFuzzer(options={})


def test_afl_refuses_cmplog_whose_binary_it_could_not_confine(tmp_path):
    """afl-fuzz would start a ``-c`` binary itself, not through the confining launcher."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    from symcc_ulfm.errors import PolicyError
    from symcc_ulfm.executors.binary.afl_coverage import AFL_SHM_MARKER

    marked = tmp_path / "marked"
    marked.write_bytes(AFL_SHM_MARKER)  # all that the check of an AFL build looks for
    for extra in (["-c", "./prog.cmplog"], ["-c./prog.cmplog"], ["-dc", "0"], ["-p", "fast", "-Dc", "0"]):
        with pytest.raises(PolicyError, match="CmpLog"):
            AflFuzzer(options={"afl_binary": str(marked), "extra_args": extra})
    AflFuzzer(options={"afl_binary": str(marked), "extra_args": ["-p", "fast"]}).close()  # other flags are taken


def marked_builds(tmp_path: Path) -> tuple[Path, Path]:
    """Two files that pass the check of an AFL build (an AFL build and its CmpLog build, for the
    options' checks: never run)."""
    from symcc_ulfm.executors.binary.afl_coverage import AFL_SHM_MARKER

    (tmp_path / "prog").write_bytes(AFL_SHM_MARKER + b" main")
    (tmp_path / "prog.cmplog").write_bytes(AFL_SHM_MARKER + b" cmplog")
    return tmp_path / "prog", tmp_path / "prog.cmplog"


def test_each_afl_fuzz_gets_the_flags_of_its_position_and_explicit_flags_win(tmp_path):
    """The afl kind's command line by position (core.afl_diversity): the main instance with CmpLog
    ``-l 2AT`` through the launcher (``-c`` is the launcher's interpreter), a secondary with its own
    schedule and no trimming; ``extra_args`` overrides the variant's flag of the same name;
    ``diversity: off`` is the plain ``-M``. The identity names the CmpLog build and the diversity,
    never the position: every instance of a campaign has the launch's identity."""
    if not afl_available():
        pytest.skip(AFL_MISSING)
    from symcc_ulfm.core.afl_diversity import PLAIN
    from symcc_ulfm.executors.fuzzers.afl_command import flags, variant_of

    main, cmplog = marked_builds(tmp_path)
    launcher = sys.executable
    first = variant_of("guide", (0, 2), cmplog=True)
    assert first.main and flags(first, [], launcher) == ["-c", launcher, "-l", "2AT"]
    second = variant_of("guide", (1, 2), cmplog=True)
    assert not second.main and flags(second, [], launcher) == ["-p", "explore"]
    assert second.env() == {"AFL_DISABLE_TRIM": "1"}
    assert flags(second, ["-p", "fast", "-D"], launcher) == ["-p", "fast", "-D"]  # the explicit -p wins
    assert flags(first, ["-l", "3"], launcher) == ["-c", launcher, "-l", "3"]
    assert variant_of("off", (1, 2), cmplog=True) == PLAIN and flags(PLAIN, ["-D"], launcher) == ["-D"]
    identities = []
    for position in (None, [0, 2], [1, 2]):
        fuzzer = AflFuzzer(options={"afl_binary": str(main), "cmplog_binary": str(cmplog),
                                    "position": position})
        identities.append(fuzzer.identity())
        fuzzer.close()
    assert identities[0] == identities[1] == identities[2]
    assert identities[0]["cmplog_sha256"] == hashlib.sha256(cmplog.read_bytes()).hexdigest()
    assert identities[0]["diversity"] == "guide"
    plain = AflFuzzer(options={"afl_binary": str(main), "diversity": "off"})
    assert plain.identity()["diversity"] == "off" and "cmplog_sha256" not in plain.identity()
    plain.close()


def test_afl_options_that_shape_its_command_line_are_checked(tmp_path):
    if not afl_available():
        pytest.skip(AFL_MISSING)
    from symcc_ulfm.errors import PolicyError, TargetError

    main, cmplog = marked_builds(tmp_path)
    for options, field in (({"diversity": "some"}, "diversity"), ({"position": [2, 2]}, "position"),
                           ({"position": [0]}, "position"), ({"extra_args": "-p fast"}, "extra_args")):
        with pytest.raises(PolicyError, match=field):
            AflFuzzer(options={"afl_binary": str(main), **options})
    with pytest.raises(PolicyError, match="cmplog_binary"):  # a CmpLog build without the AFL build
        AflFuzzer(options={"cmplog_binary": str(cmplog)})
    persistent = tmp_path / "persistent.cmplog"
    persistent.write_bytes(cmplog.read_bytes() + b"##SIG_AFL_PERSISTENT##")
    with pytest.raises(TargetError, match="fork-server modes"):  # another program's build
        AflFuzzer(options={"afl_binary": str(main), "cmplog_binary": str(persistent)})
    plain = tmp_path / "plain"
    plain.write_bytes(b"\x7fELF not instrumented")
    with pytest.raises(TargetError, match="cmplog_binary.*not AFL-instrumented"):
        AflFuzzer(options={"afl_binary": str(main), "cmplog_binary": str(plain)})


def test_every_afl_instance_takes_the_dictionary_and_its_own_position():
    """What the runtime gives an afl instance (``at_position``): the campaign's options with its
    position among the campaign's afl-fuzz processes; the dictionary (launch --dictionary or a
    harness's) stays, for the main instance, the varied ones and the lent ones alike."""
    from symcc_ulfm.executors import at_position, options_for, varies_by_position

    dictionary = {"tokens": ["6b6579"], "sha256": "0" * 64}
    options = {"afl_binary": "/x.afl", "dictionary": dictionary, "afl": {"extra_args": ["-D"]}}
    for position in ((0, 3), (1, 3), (2, 3)):
        given = options_for("afl", at_position("afl", options, position))
        assert given["dictionary"] == dictionary and given["extra_args"] == ["-D"]
        assert given["position"] == list(position)
    assert varies_by_position("afl") and not varies_by_position("havoc")


def test_the_launcher_runs_the_cmplog_build_where_afl_fuzz_asks_for_it(tmp_path):
    """afl-fuzz starts ``-c PATH`` with the target's command line, its first word replaced by PATH,
    and ``___AFL_EINS_ZWEI_POLIZEI___`` set (AFL++'s cmplog_exec_child): given ``-c`` the launcher's
    interpreter, the launcher runs the CmpLog build there instead of the main build, with the
    same arguments, confined the same way (its write outside the directory is refused)."""
    if landlock.unavailable() is not None:
        pytest.skip(landlock.unavailable())
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    for name in ("main", "cmplog"):
        script = tmp_path / f"{name}.sh"
        script.write_text(f'#!/bin/sh\necho {name} "$@" > "$1/ran"\necho {name} > "{outside}/{name}"\n')
        script.chmod(0o755)
    command = landlock.command([str(allowed)], [str(tmp_path / "main.sh"), str(allowed), "@@"],
                               cmplog=str(tmp_path / "cmplog.sh"))
    env = {"PATH": os.environ["PATH"]}
    subprocess.run(command, env=env, capture_output=True, timeout=60)  # exits 2: its write outside failed
    assert (allowed / "ran").read_text() == f"main {allowed} @@\n"
    as_afl_fuzz = [sys.executable, *command[1:]]  # argv[0] replaced by the -c path: the same interpreter
    subprocess.run(as_afl_fuzz, env={**env, landlock.CMPLOG_ENV: "1"}, capture_output=True, timeout=60)
    assert (allowed / "ran").read_text() == f"cmplog {allowed} @@\n"
    assert list(outside.iterdir()) == []  # neither build could write outside


def test_havoc_fuzzes_a_python_target_contained_and_keeps_what_is_new(tmp_path):
    fuzzer = create("havoc", "tokenizer", {"mutations": 1000, "mutate_clock": False}, scratch=tmp_path)
    try:
        fuzzer.offer([b"1+2", b"(3*4)-5"])
        result = fuzzer.fuzz(slice_of(1, 2.0, "havoc"))
        assert result.notes["mutations"] == result.executions == 1000 and not result.notes["mutations_cut"]
        assert result.candidates and result.executions > len(result.candidates)
        assert len(set(result.candidates)) == len(result.candidates)
        second = fuzzer.fuzz(slice_of(2, 1.0, "havoc"))
        assert not set(second.candidates) & set(result.candidates)  # only edges it had not seen
        assert fuzzer.identity()["executor"] == "havoc"
        assert fuzzer.identity() != create("concolic", "tokenizer", {}, scratch=tmp_path).identity()
    finally:
        fuzzer.close()


@pytest.mark.mpi
def test_a_hybrid_campaign_survives_the_death_of_its_fuzzer_worker(twin, tmp_path):
    """afl and symcc workers on one corpus: the afl worker (rank 1) dies by the schedule; in the
    next generation the slots are refilled in order (the spare, rank 3, takes the last one, a
    symcc slot; rank 2 moves to the afl slot and runs afl-fuzz); nothing is lost or counted twice,
    and the oracle counts what each kind found. The campaign ends once each worker of generation 1
    committed a result: the seed is analyzed once (a symcc worker is lent to afl only when nothing
    is queued), rank 2 ran an afl slice of its own."""
    binary = stand_in(tmp_path / "build")
    seeds = json.dumps([b"ZZZZ".hex()])
    run = launch(tmp_path / "state", "--ranks", "4", "--warm-spares", "1", "--workers-per-master", "2",
                 "--worker-kinds", "afl:1,symcc:1", "--keep", "novel", "--slice", "2", "--stop-after", "1",
                 "--failure-schedule", "0:1", "--deadline", "240", "--executor", "symcc", "--target", str(binary),
                 "--executor-option", f"afl_binary={twin}", "--executor-option", f"seeds={seeds}",
                 "--executor-option", "timeout_s=5")
    verdict = run.verdict
    assert run.returncode == 0, run.stderr[-3000:] + json.dumps(verdict.get("problems"))
    assert run.outcome == "budget-reached"
    assert verdict["passed"] and verdict["receipts"] == [{"generation": 1, "missing": [1]}]
    attribution = verdict["attribution"]
    assert set(attribution) == {"afl", "symcc"}, attribution
    assert attribution["afl"]["works"] >= 1 and attribution["symcc"]["works"] >= 1
    assert verdict["wal_slices"] == attribution["afl"]["works"]
    commits = run.log_events("commit")
    slices = [(e["generation"], e["worker"]) for e in commits if e.get("slice")]
    assert (1, 2) in slices  # rank 2 fuzzes in the afl slot it moved to
    lent = [s for s in slices if s in {(0, 2), (1, 3)}]  # slices of workers in a symcc slot: lent ones
    assert verdict["lent_slices"].get("afl", 0) == len(lent)
    assert set(slices) <= {(0, 2), (1, 2), (1, 3)}  # rank 1 died before its first slice was committed
    solved = [e for e in commits if not e.get("slice") and e["generation"] == 1]
    assert {e["worker"] for e in solved} <= {3}
    assert verdict["double_counted"] == 0 and verdict["lost_objects"] == 0
    leftovers = [p for p in (run.state / "scratch").rglob("*") if p.is_file() and "afl-fuzz" in p.name]
    assert afl_processes(run.state) == [], leftovers
    # status counts afl-fuzz's own executions (its slices') beside SymCC's, as the WAL accounts for them
    by_kind, edges = wal_accounts(run.state)
    totals = status_json(run.state)["totals"]
    assert totals["executions_by_kind"] == by_kind and by_kind["afl"] > 0 and by_kind["symcc"] > 0, by_kind
    assert totals["executions"] == sum(by_kind.values()) and totals["edges"] == len(edges)
    assert totals["map_size"] > 0  # afl-fuzz's map, as its slices reported it


@pytest.mark.mpi
def test_an_idle_symcc_worker_fuzzes_with_afl_until_it_has_inputs_again(twin, twin_cmplog, tmp_path):
    """With one seed the SymCC worker soon has nothing to analyze: it is lent to the afl kind (its
    own afl-fuzz in ``lent-afl/``, stopped before each analysis and resumed after), its slices are
    published and attributed to afl, it still analyzes what the fuzzers find, and nothing is lost,
    counted twice or left running. The stand-in's coverage is soon exhausted (18 inputs in 60 s),
    so of a budget of 30 results the SymCC worker can only reach by analyses fewer than 30: the
    rest are lent slices. The two afl-fuzz processes run the variants of their positions
    (core.afl_diversity), as the workers' logs say: the afl worker's the main instance with CmpLog,
    the lent one a secondary with its own schedule; both with the dictionary."""
    binary = stand_in(tmp_path / "build")
    seeds = json.dumps([b"ZZZZ".hex()])
    dictionary = tmp_path / "tokens.dict"
    dictionary.write_text('magic="SYM\\x80"\n')
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--worker-kinds", "afl:1,symcc:1", "--keep", "novel", "--slice", "0.2", "--failure-schedule", "",
                 "--stop-after", "30", "--deadline", "240", "--executor", "symcc", "--target", str(binary),
                 "--executor-option", f"afl_binary={twin}", "--executor-option", f"cmplog_binary={twin_cmplog}",
                 "--executor-option", f"seeds={seeds}", "--executor-option", "timeout_s=5",
                 "--dictionary", str(dictionary))
    verdict = run.verdict
    assert run.returncode == 0, run.stderr[-3000:] + json.dumps(verdict.get("problems"))
    assert run.outcome == "budget-reached"
    commits = [e for e in run.log_events("commit") if e["generation"] == 0]
    analyzed = [e for e in commits if not e.get("slice")]
    lent = [e for e in commits if e.get("slice") and e["worker"] == 2]
    assert {e["worker"] for e in analyzed} == {2}  # it analyzed, too
    assert len(analyzed) < 30 and len(analyzed) + len(lent) >= 30
    assert verdict["passed"] and verdict["lent_slices"].get("afl", 0) == len(lent) >= 1, verdict.get("lent_slices")
    assert verdict["wal_slices"] == verdict["attribution"]["afl"]["works"]
    assert verdict["double_counted"] == 0 and verdict["lost_objects"] == 0
    assert afl_processes(run.state) == []
    started = {(e["rank"], e["settings"]["role"]): e["settings"] for e in run.log_events("fuzzer-started")}
    assert set(started) == {(1, "main"), (2, "secondary")}, started
    main, lent = started[1, "main"], started[2, "secondary"]
    assert main["position"] == [0, 2] and main["cmplog"] == "2AT" and main["schedule"] is None
    assert main["argv"][main["argv"].index("-c") + 1] == sys.executable and "-M" in main["argv"]
    assert lent["position"] == [1, 2] and lent["schedule"] == "explore" and lent["cmplog"] is None
    assert "-c" not in lent["argv"] and "-S" in lent["argv"] and lent["env"] == {"AFL_DISABLE_TRIM": "1"}
    for argv in (main["argv"], lent["argv"]):  # each takes the dictionary's tokens, written for -x
        assert Path(argv[argv.index("-x") + 1]).name == "dictionary.txt"


def lent_afl_processes(root: Path) -> list[int]:
    """afl-fuzz processes an idle analysis worker runs (in its ``lent-afl/``)."""
    return [pid for pid in afl_processes(root) if b"lent-afl" in Path(f"/proc/{pid}/cmdline").read_bytes()]


@pytest.mark.mpi
def test_a_symcc_worker_killed_while_it_fuzzes_takes_its_afl_fuzz_along(twin, tmp_path):
    """``kill -9`` of the SymCC worker while its own afl-fuzz runs: that afl-fuzz dies with it,
    the spare takes the slot, and the oracle passes with nothing lost or counted twice."""
    from symcc_ulfm.launch import json_child
    from symcc_ulfm.store.paths import StateDir
    from symcc_ulfm.store.runlog import Event, read_log

    binary = stand_in(tmp_path / "build")
    state = tmp_path / "state"
    # generation 0 can end only by the kill (the budget counts from generation 1 on)
    args = ["--ranks", "4", "--warm-spares", "1", "--workers-per-master", "2", "--worker-kinds", "afl:1,symcc:1",
            "--keep", "novel", "--slice", "1", "--failure-schedule", "", "--stop-after", "2", "--stop-from", "1",
            "--deadline", "240",
            "--executor", "symcc", "--target", str(binary), "--executor-option", f"afl_binary={twin}",
            "--executor-option", f"seeds={json.dumps([b'ZZZZ'.hex()])}", "--executor-option", "timeout_s=5"]
    process = json_child.start(state, args)
    try:
        deadline = time.time() + 60
        while not lent_afl_processes(state) and time.time() < deadline and process.poll() is None:
            time.sleep(0.1)
        lent = lent_afl_processes(state)
        assert lent, "the SymCC worker never ran an afl-fuzz of its own"
        (pid,) = [row["pid"] for row in read_log(StateDir(state).rank_log(2)) if row["event"] == Event.STARTUP]
        os.kill(pid, signal.SIGKILL)
        gone = time.time() + 10
        while any(Path(f"/proc/{p}").exists() for p in lent) and time.time() < gone:
            time.sleep(0.1)
        assert not [p for p in lent if Path(f"/proc/{p}").exists()], "its afl-fuzz outlived the worker"
        done = json_child.finish(process, timeout=120)
    finally:
        if process.poll() is None:
            json_child.kill(process)
    verdict = done.verdict
    assert done.returncode == 0, done.stderr[-3000:] + json.dumps(verdict.get("problems"))
    assert verdict["passed"] and verdict["receipts"] == [{"generation": 1, "missing": [2]}]
    assert json.loads((state / "outcome.json").read_text())["status"] == "budget-reached"
    assert verdict["double_counted"] == 0 and verdict["lost_objects"] == 0
    assert afl_processes(state) == []


IDIOMS = Path(__file__).resolve().parents[1] / "fixtures" / "idioms.py"


@pytest.mark.mpi
def test_a_python_hybrid_reaches_what_grows_in_the_middle(tmp_path):
    """``verb:key:value`` with a five-digit key from a one-digit seed: the concolic worker cannot
    grow the middle field; the havoc worker inserts there, the concolic worker then solves the rest.
    The fixture is the project's own (tests/fixtures/idioms.py), run here only to read the corpus.
    Havoc slices of a fixed count of mutants (``mutate_clock`` off) and a budget of 40 results per
    worker: "deep" came after 33-38 of some 90 commits in three runs on 2 cores."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "seed").write_bytes(b"get:1:x")
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--worker-kinds", "havoc:1,concolic:1", "--keep", "novel", "--slice", "1",
                 "--failure-schedule", "", "--stop-after", "40", "--deadline", "240",
                 "--executor-option", "mutate_clock=false",
                 "--target", f"{IDIOMS}:numeric_key_protocol", "--seeds", str(seeds))
    assert run.returncode == 0, run.stderr[-3000:] + json.dumps(run.verdict.get("problems"))
    assert run.outcome == "budget-reached"
    namespace: dict = {}
    exec(compile(IDIOMS.read_text(), str(IDIOMS), "exec"), namespace)

    def returned(data: bytes) -> str:
        try:
            return namespace["numeric_key_protocol"](data)
        except Exception as exc:
            return type(exc).__name__

    corpus = [p.read_bytes() for p in (run.state / "corpus" / "objects").iterdir()]
    assert "deep" in {returned(data) for data in corpus}, sorted(corpus)[:40]
    assert set(run.verdict["attribution"]) == {"havoc", "concolic"}
