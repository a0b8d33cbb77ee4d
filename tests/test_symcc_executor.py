"""The ``symcc`` executor against real processes built here from C.

The SymCC side is ``tests/fixtures/symcc/fake_symcc.c``, a protocol-compatible stand-in for a
SymCC-compiled binary, NOT SymCC (no SymCC is packaged for Debian or PyPI): it honours
SYMCC_OUTPUT_DIR / SYMCC_INPUT_FILE / SYMCC_ENABLE_LINEARIZATION and writes test cases
``000000``... the way SymCC's runtime does. The coverage side is the same source built with
AFL++'s ``afl-cc`` and measured with the real ``afl-showmap``; those tests skip, with the reason,
when AFL++ is not installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from symcc_ulfm import executors
from symcc_ulfm.errors import PolicyError, ProvenanceChanged, TargetError
from symcc_ulfm.executors.base import HIT_CLASS_BOUNDS, coverage_id, edge_of
from symcc_ulfm.executors.symcc import NO_COVERAGE, SymccExecutor, coverage_from_afl_map

SOURCE = Path(__file__).parent / "fixtures" / "symcc" / "fake_symcc.c"
AFL_MISSING = "afl++ not installed (afl-cc and afl-showmap not on PATH): apt-get install -y afl++"


def _compile(compiler: str, out: Path, *flags: str) -> Path:
    env = {**os.environ, "AFL_QUIET": "1"}
    subprocess.run(
        [compiler, "-O0", "-Wall", "-Wextra", "-Werror", *flags, "-o", str(out), str(SOURCE)],
        check=True,
        env=env,
    )
    return out


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is required to build the SymCC stand-in: apt-get install -y gcc")
    return tmp_path_factory.mktemp("symcc-build")


@pytest.fixture(scope="module")
def stand_in(build) -> Path:
    """The protocol-compatible stand-in for a SymCC-compiled binary (not SymCC)."""
    return _compile("gcc", build / "fake_symcc")


@pytest.fixture(scope="module")
def afl_twin(build) -> Path:
    if shutil.which("afl-cc") is None or shutil.which("afl-showmap") is None:
        pytest.skip(AFL_MISSING)
    return _compile("afl-cc", build / "fake_symcc.afl", "-DAFL_TWIN")


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch) -> Path:
    """Each test's executor temp dirs go to a private directory, so cleanup can be checked."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def _stand_in_run(binary: Path, data: bytes, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {key: val for key, val in os.environ.items() if not key.startswith("SYMCC_")}
    return subprocess.run(
        [str(binary), *args], input=data, env={**base, **env}, capture_output=True, timeout=30
    )


# --- the stand-in itself behaves like SymCC at the process boundary --------------------------


def test_stand_in_not_symcc_fails_like_symcc_without_output_dir(stand_in, tmp_path):
    result = _stand_in_run(
        stand_in, b"XXXX", {"SYMCC_OUTPUT_DIR": str(tmp_path / "missing"), "SYMCC_ENABLE_LINEARIZATION": "1"}
    )
    assert result.returncode == 255
    assert b"(configurable via SYMCC_OUTPUT_DIR) does not exist" in result.stderr


def test_stand_in_not_symcc_requires_linearization(stand_in, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = _stand_in_run(stand_in, b"XXXX", {"SYMCC_OUTPUT_DIR": str(out)})
    assert result.returncode == 3
    assert list(out.iterdir()) == []


def test_stand_in_not_symcc_file_input_is_symbolic_only_if_named_by_symcc_input_file(stand_in, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    data = tmp_path / "input"
    data.write_bytes(b"XXXX")
    env = {"SYMCC_OUTPUT_DIR": str(out), "SYMCC_ENABLE_LINEARIZATION": "1"}
    assert _stand_in_run(stand_in, b"", env, str(data)).returncode == 0
    assert list(out.iterdir()) == []  # concrete input: no test cases
    assert _stand_in_run(stand_in, b"", {**env, "SYMCC_INPUT_FILE": str(data)}, str(data)).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["000000", "000001"]


# --- runs --------------------------------------------------------------------------------------


def test_stdin_mode_reads_numbered_outputs_in_order(stand_in, private_tmp):
    executor = SymccExecutor(target=str(stand_in), options={})
    result = executor.run(b"XXXX")
    # One negated branch per input-dependent branch on the path: byte 0 == 'S', byte 0 == 'Z'.
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert result.notes["returncode"] == 0 and not result.notes["timed_out"]
    assert result.notes["outputs_found"] == result.notes["outputs_read"] == 2
    assert result.notes["coverage"] == NO_COVERAGE
    assert list(private_tmp.iterdir()) == []  # temp dirs cleaned up


def test_deeper_path_negates_every_branch(stand_in):
    result = SymccExecutor(target=str(stand_in), options={}).run(b"SYM")
    assert result.candidates == [b"RYM", b"SXM", b"SYL"]


def test_file_mode_substitutes_at_at_and_sets_symcc_input_file(stand_in, private_tmp):
    executor = SymccExecutor(target=str(stand_in), options={"args": ["@@"]})
    assert executor.identity()["input_mode"] == "file"
    result = executor.run(b"XXXX")
    # The stand-in only emits test cases when SYMCC_INPUT_FILE names the file it read.
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert list(private_tmp.iterdir()) == []


def test_inherited_symcc_variables_are_ignored(stand_in, tmp_path, monkeypatch):
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "000000").write_bytes(b"stale")
    monkeypatch.setenv("SYMCC_OUTPUT_DIR", str(stale))
    monkeypatch.setenv("SYMCC_INPUT_FILE", str(tmp_path / "elsewhere"))
    executor = SymccExecutor(target=str(stand_in), options={})
    first = executor.run(b"XXXX")
    second = executor.run(b"XXXX")
    assert first.candidates == second.candidates == [b"SXXX", b"ZXXX"]
    assert sorted(p.name for p in stale.iterdir()) == ["000000"]


def _dead(pid: int) -> bool:
    """Gone or a zombie (PID 1 in a container may not reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_timeout_kills_the_process_group_and_keeps_partial_output(stand_in, tmp_path, private_tmp):
    pidfile = tmp_path / "pids"
    executor = SymccExecutor(
        target=str(stand_in), options={"args": ["--hang", "--pidfile", str(pidfile)], "timeout_s": 1.0}
    )
    started = time.monotonic()
    result = executor.run(b"XXXX")
    assert time.monotonic() - started < 10
    assert result.notes["timed_out"] is True
    assert result.notes["returncode"] == -signal.SIGKILL
    assert result.notes["partial_possible"] is True
    assert [(f.outcome.kind, f.data) for f in result.findings] == [("hang", b"XXXX")]
    # Two complete test cases, then the half-written one, read as it was left.
    assert result.candidates == [b"SXXX", b"ZXXX", b"PA"]
    assert result.notes["outputs_read"] == 3
    parent, child = (int(pid) for pid in pidfile.read_text().split())
    deadline = time.monotonic() + 5
    while not (_dead(parent) and _dead(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(parent) and _dead(child), "the forked child outlived the run"
    assert list(private_tmp.iterdir()) == []


def test_crashing_target_still_yields_its_test_cases(stand_in):
    result = SymccExecutor(target=str(stand_in), options={"args": ["--crash"]}).run(b"XXXX")
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert result.notes["returncode"] == -signal.SIGABRT
    assert result.notes["partial_possible"] is True
    [finding] = result.findings
    assert (finding.outcome.kind, finding.outcome.signature, finding.data) == ("crash", "SIGABRT", b"XXXX")


def test_a_sanitizer_report_is_a_crash_named_by_its_summary():
    from symcc_ulfm.executors.symcc import classify_exit

    stderr = "==1==ERROR: AddressSanitizer: heap-buffer-overflow\n...\nSUMMARY: AddressSanitizer: heap-buffer-overflow " \
             "tlv.c:42:7 in parse_record\n"
    outcome = classify_exit(1, False, stderr)
    assert outcome.kind == "crash" and outcome.signature == "AddressSanitizer: heap-buffer-overflow tlv.c:42:7 in parse_record"
    assert classify_exit(1, False, "usage: tlv FILE\n").kind == "ok"
    assert classify_exit(0, True, "").kind == "hang"
    assert classify_exit(-11, False, "").signature == "SIGSEGV"


def test_symlinks_fifos_and_directories_in_output_dir_are_skipped(stand_in, tmp_path, private_tmp):
    secret = tmp_path / "secret"
    secret.write_bytes(b"must never become a candidate")
    result = SymccExecutor(
        target=str(stand_in), options={"args": ["--evil", str(secret)], "timeout_s": 10}
    ).run(b"XXXX")
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert result.notes["outputs_found"] == 5
    assert result.notes["outputs_skipped"] == {
        "symlink": 1,
        "not_regular": 2,
        "oversized": 0,
        "unreadable": 0,
    }
    assert result.notes["ignored_entries"] == 1  # README
    assert secret.read_bytes() == b"must never become a candidate"
    assert list(private_tmp.iterdir()) == []


def test_oversized_outputs_are_skipped_and_counted(stand_in):
    result = SymccExecutor(target=str(stand_in), options={"max_output_bytes": 3}).run(b"XXXX")
    assert result.candidates == []
    assert result.notes["outputs_skipped"]["oversized"] == 2


def test_failed_start_reports_stderr_tail(stand_in, tmp_path):
    result = SymccExecutor(target=str(stand_in), options={"args": [str(tmp_path / "missing-input")]}).run(b"")
    assert result.notes["returncode"] == 4
    assert "missing-input" in result.notes["stderr_tail"]


# --- identity, seeds, options, bad targets ---------------------------------------------------


def test_identity_pins_binary_sha256_args_and_mode(stand_in, build):
    executor = SymccExecutor(target=str(stand_in), options={"args": ["@@"], "timeout_s": 5})
    ident = executor.identity()
    assert ident["target_sha256"] == hashlib.sha256(stand_in.read_bytes()).hexdigest()
    assert ident["args"] == ["@@"] and ident["input_mode"] == "file" and ident["timeout_s"] == 5.0
    assert ident["coverage"] == {"kind": "none", "note": NO_COVERAGE}
    assert ident["env"] == {"SYMCC_ENABLE_LINEARIZATION": "1"}
    other = _compile("gcc", build / "fake_symcc.other", "-DUNUSED_VARIANT=1", "-g")
    assert SymccExecutor(target=str(other), options={"args": ["@@"], "timeout_s": 5}).identity() != ident
    assert SymccExecutor(target=str(stand_in), options={"timeout_s": 5}).identity() != ident


def test_binary_replaced_after_identity_is_refused(stand_in, tmp_path):
    copy = tmp_path / "target"
    shutil.copy2(stand_in, copy)
    executor = SymccExecutor(target=str(copy), options={})
    with open(copy, "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ProvenanceChanged):
        executor.run(b"XXXX")


def test_seeds_from_hex_and_directory(stand_in, tmp_path):
    assert SymccExecutor(target=str(stand_in), options={"seeds": ["53594d00", ""]}).seeds() == [b"SYM\0", b""]
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "b").write_bytes(b"two")
    (seeds / "a").write_bytes(b"one")
    (seeds / "sub").mkdir()
    executor = SymccExecutor(target=str(stand_in), options={"seeds": str(seeds)})
    assert executor.seeds() == [b"one", b"two"]
    assert executor.identity()["seeds_sha256"] == [hashlib.sha256(s).hexdigest() for s in (b"one", b"two")]
    assert SymccExecutor(target=str(stand_in), options={}).seeds() == [bytes(16)]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"bogus": 1}, "executor_options.bogus"),
        ({"args": "@@"}, "executor_options.args"),
        ({"input_mode": "stdin", "args": ["@@"]}, "executor_options.input_mode"),
        ({"input_mode": "file"}, "executor_options.input_mode"),
        ({"input_mode": "tty"}, "executor_options.input_mode"),
        ({"timeout_s": 0}, "executor_options.timeout_s"),
        ({"timeout_s": True}, "executor_options.timeout_s"),
        ({"max_output_bytes": 0}, "executor_options.max_output_bytes"),
        ({"seeds": []}, "executor_options.seeds"),
        ({"seeds": ["zz"]}, "executor_options.seeds"),
        ({"afl_showmap": "/usr/bin/afl-showmap"}, "executor_options.afl_showmap"),
        ({"afl_binary": 5}, "executor_options.afl_binary"),
    ],
)
def test_bad_options_name_the_field(stand_in, options, field):
    with pytest.raises(PolicyError) as info:
        SymccExecutor(target=str(stand_in), options=options)
    assert info.value.field == field
    assert info.value.exit_code == 2


def test_missing_binary_is_a_target_error_naming_the_path(tmp_path):
    missing = tmp_path / "no-such-binary"
    with pytest.raises(TargetError) as info:
        SymccExecutor(target=str(missing), options={})
    assert str(missing) in str(info.value) and info.value.exit_code == 2
    with pytest.raises(TargetError):
        SymccExecutor(target=None, options={})
    with pytest.raises(TargetError):
        SymccExecutor(target=str(tmp_path / "seeds"), options={"seeds": str(tmp_path / "nowhere")})


def test_not_executable_binary_is_a_target_error(stand_in, tmp_path):
    copy = tmp_path / "plain"
    shutil.copyfile(stand_in, copy)
    copy.chmod(0o644)
    with pytest.raises(TargetError, match="not executable") as info:
        SymccExecutor(target=str(copy), options={})
    assert str(copy) in str(info.value)


def test_unrunnable_binary_is_a_target_error(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF not really")
    junk.chmod(0o755)
    executor = SymccExecutor(target=str(junk), options={})
    with pytest.raises(TargetError, match="cannot execute"):
        executor.run(b"")


def test_registry_builds_the_symcc_executor(stand_in):
    executor = executors.create("symcc", str(stand_in), {"args": []})
    assert isinstance(executor, SymccExecutor)
    assert executor.measure(b"XXXX").coverage == frozenset()
    executor.close()


# --- coverage ----------------------------------------------------------------------------------


def test_afl_binary_map_conversion():
    bitmap = bytes([0, 1, 0, 2, 4, 8, 16, 32, 64, 128])
    ids = coverage_from_afl_map(bitmap)
    assert ids == {coverage_id(edge, HIT_CLASS_BOUNDS[edge - 2]) for edge in range(3, 10)} | {
        coverage_id(1, 1)
    }
    assert {edge_of(cov) for cov in ids} == {1, *range(3, 10)}
    assert coverage_id(7, 5) == 7 * 8 + 3  # 4-7 hits: binary class 8, bucket 3
    with pytest.raises(ValueError, match="not an AFL binary hit class"):
        coverage_from_afl_map(bytes([3]))


def test_afl_twin_coverage_differs_between_branches(stand_in, afl_twin):
    executor = SymccExecutor(target=str(stand_in), options={"afl_binary": str(afl_twin), "timeout_s": 5})
    ident = executor.identity()["coverage"]
    assert ident["kind"] == "afl-showmap -b"
    assert ident["afl_binary_sha256"] == hashlib.sha256(afl_twin.read_bytes()).hexdigest()
    rejected, accepted = executor.measure(b"XXXX").coverage, executor.measure(b"SYM\0").coverage
    assert rejected and accepted
    assert {edge_of(c) for c in rejected} != {edge_of(c) for c in accepted}
    assert executor.measure(b"XXXX").coverage == rejected  # deterministic
    assert "coverage" not in executor.run(b"XXXX").notes


def test_afl_twin_hit_counts_change_coverage_ids_not_edges(stand_in, afl_twin):
    executor = SymccExecutor(target=str(stand_in), options={"afl_binary": str(afl_twin)})
    three, five = executor.measure(b"SYM\x03").coverage, executor.measure(b"SYM\x05").coverage
    assert {edge_of(c) for c in three} == {edge_of(c) for c in five}
    assert three != five  # the loop edge moves from the "3" class to the "4-7" class
    assert executor.measure(b"SYM\x06").coverage == five


def test_afl_twin_coverage_of_a_hanging_input_is_bounded(stand_in, afl_twin, tmp_path, private_tmp):
    pidfile = tmp_path / "pids"
    executor = SymccExecutor(
        target=str(stand_in),
        options={
            "afl_binary": str(afl_twin),
            "args": ["--hang", "--pidfile", str(pidfile)],
            "timeout_s": 0.5,
        },
    )
    started = time.monotonic()
    measured = executor.measure(b"SYM\x01")
    assert measured.coverage and measured.outcome.kind == "hang"
    assert time.monotonic() - started < 20
    _parent, child = (int(pid) for pid in pidfile.read_text().split())
    deadline = time.monotonic() + 5
    while not _dead(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(child), "the target's forked child outlived afl-showmap"
    assert list(private_tmp.iterdir()) == []


def test_afl_twin_replaced_after_identity_is_refused(stand_in, afl_twin, tmp_path):
    copy = tmp_path / "twin"
    shutil.copy2(afl_twin, copy)
    executor = SymccExecutor(target=str(stand_in), options={"afl_binary": str(copy)})
    with open(copy, "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ProvenanceChanged):
        executor.measure(b"XXXX")


def test_uninstrumented_afl_twin_is_rejected(stand_in, afl_twin):
    with pytest.raises(TargetError, match="not AFL-instrumented"):
        SymccExecutor(target=str(stand_in), options={"afl_binary": str(stand_in)})


def test_missing_afl_showmap_is_a_target_error(stand_in, afl_twin, tmp_path):
    with pytest.raises(TargetError, match="no such file"):
        SymccExecutor(
            target=str(stand_in), options={"afl_binary": str(afl_twin), "afl_showmap": str(tmp_path / "none")}
        )
