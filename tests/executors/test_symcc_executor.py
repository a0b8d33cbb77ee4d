"""The ``symcc`` executor against real processes built here from C.

The SymCC side is ``tests/fixtures/symcc/fake_symcc.c`` linked against
``tests/fixtures/symcc/fake_symcc_rt.c`` (built as ``libsymcc-rt.so``): a protocol-compatible
stand-in for a SymCC-compiled binary and its runtime, NOT SymCC (no SymCC is packaged for Debian
or PyPI). It imports ``_sym_initialize`` from the runtime library as SymCC binaries do, honours
SYMCC_OUTPUT_DIR / SYMCC_INPUT_FILE / SYMCC_ENABLE_LINEARIZATION / SYMCC_NO_SYMBOLIC_INPUT /
SYMCC_AFL_COVERAGE_MAP and writes test cases ``000000``... and ``NNNNNN-optimistic`` the way the
QSYM runtime does. The coverage side is the same source built with AFL++'s ``afl-cc`` and
measured with the real ``afl-showmap``; those tests skip, with the reason, when AFL++ is not
installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers.mpi import launch
from helpers.processes import wait_dead
from helpers.symcc import AFL_MISSING, SOURCE, afl_available, compile_c, linked, runtime

from symcc_ulfm import executors
from symcc_ulfm.core.budget import check_lease, fit_lease
from symcc_ulfm.core.coverage import HIT_CLASS_BOUNDS, coverage_id, edge_of
from symcc_ulfm.core.policy import Policy
from symcc_ulfm.errors import ConfigError, PolicyError, ProvenanceChanged, TargetError
from symcc_ulfm.executors.binary.afl_coverage import coverage_from_afl_map
from symcc_ulfm.executors.binary.options import DEFAULT_SEED_LENGTHS
from symcc_ulfm.executors.binary.runs import classify_exit, run_binary
from symcc_ulfm.executors.sandbox import isolation
from symcc_ulfm.executors.sandbox.parent import Sandbox
from symcc_ulfm.executors.symcc.adapter import MAP_BYTES, NO_COVERAGE, SymccExecutor
from symcc_ulfm.executors.symcc.target import read_dynamic
from symcc_ulfm.launch.prepare import check_executor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "symcc"


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is required to build the SymCC stand-in: apt-get install -y gcc")
    return tmp_path_factory.mktemp("symcc-build")


@pytest.fixture(scope="module", name="runtime")
def runtime_fixture(build) -> Path:
    """The stand-in runtime library (not SymCC's)."""
    return runtime(build / "rt")


@pytest.fixture(scope="module")
def stand_in(build, runtime) -> Path:
    """The protocol-compatible stand-in for a SymCC-compiled binary (not SymCC), RUNPATH to its runtime."""
    return linked(build / "fake_symcc", runtime.parent)


@pytest.fixture(scope="module")
def plain(build) -> Path:
    """The same program built with plain gcc: not instrumented."""
    return compile_c("gcc", build / "fake_symcc.plain", SOURCE, "-DAFL_TWIN")


@pytest.fixture(scope="module")
def afl_twin(build) -> Path:
    if not afl_available():
        pytest.skip(AFL_MISSING)
    return compile_c("afl-cc", build / "fake_symcc.afl", SOURCE, "-DAFL_TWIN")


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch) -> Path:
    """Each test's executor scratch goes to a private directory, so cleanup can be checked."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def _stand_in_run(binary: Path, data: bytes, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {key: val for key, val in os.environ.items() if not key.startswith("SYMCC_")}
    return subprocess.run(
        [str(binary), *args], input=data, env={**base, **env}, capture_output=True, timeout=30
    )


def _sandboxed(binary: Path, scratch: Path, **options) -> Sandbox:
    """The executor as a worker gets it: contained, with the runtime's scratch directory."""
    executor = executors.create("symcc", str(binary), options, scratch=scratch)
    assert isinstance(executor, Sandbox)
    return executor


def _pids(path: Path) -> tuple[int, int, int]:
    pid, ppid, child = (int(value) for value in path.read_text().split())
    path.unlink()  # it was written into the sandbox's only writable directory, which must end empty
    return pid, ppid, child


def _wait_dead_inside(sandbox: Sandbox, *pids: int) -> bool:
    """``pids`` of the sandbox's own PID namespace (isolated) are gone or zombies."""
    outer = [isolation.outer_pid(sandbox._proc.pid, pid) for pid in pids]
    return wait_dead(*(pid for pid in outer if pid is not None))


def _only_scratch_root(scratch: Path) -> Path:
    """The executor's own directory, which must hold nothing between runs."""
    [root] = [entry for entry in scratch.iterdir() if entry.is_dir()]
    assert list(root.iterdir()) == []
    return root


# --- the stand-in itself behaves like SymCC at the process boundary --------------------------


def test_stand_in_not_symcc_fails_like_symcc_without_output_dir(stand_in, tmp_path):
    result = _stand_in_run(
        stand_in, b"XXXX", {"SYMCC_OUTPUT_DIR": str(tmp_path / "missing"), "SYMCC_ENABLE_LINEARIZATION": "1"}
    )
    assert result.returncode == 255
    assert b"(configurable via SYMCC_OUTPUT_DIR) does not exist" in result.stderr


def test_stand_in_not_symcc_requires_linearization_to_be_set(stand_in, tmp_path):
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


def test_stand_in_not_symcc_writes_optimistic_cases_and_runs_concretely(stand_in, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = _stand_in_run(stand_in, b"SXXX", {"SYMCC_OUTPUT_DIR": str(out), "SYMCC_ENABLE_LINEARIZATION": "1"})
    assert result.returncode == 0
    # byte 0 == 'S' pins byte 0, so negating the later byte 0 == 'Z' contradicts the path
    assert sorted(p.name for p in out.iterdir()) == ["000000", "000001", "000002-optimistic"]
    concrete = _stand_in_run(stand_in, b"SXXX", {"SYMCC_NO_SYMBOLIC_INPUT": "1"})
    assert concrete.returncode == 0 and concrete.stdout == b"result 0\n"


# --- runs --------------------------------------------------------------------------------------


def test_stdin_mode_reads_test_cases_in_order(stand_in, private_tmp):
    executor = SymccExecutor(target=str(stand_in), options={})
    result = executor.run(b"XXXX")
    # One negated branch per input-dependent branch on the path: byte 0 == 'S', byte 0 == 'Z'.
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert result.notes["returncode"] == 0 and not result.notes["timed_out"]
    assert (result.notes["outputs_plain"], result.notes["outputs_optimistic"]) == (2, 0)
    assert result.notes["coverage"] == NO_COVERAGE
    assert result.findings == [] and result.executions == 1
    assert executor.scratch_root == _only_scratch_root(private_tmp)  # the run's directory is gone
    executor.close()
    assert list(private_tmp.iterdir()) == []


def test_optimistic_test_cases_are_candidates_counted_apart(stand_in):
    result = SymccExecutor(target=str(stand_in), options={}).run(b"SXXX")
    assert result.candidates == [b"RXXX", b"SYXX", b"ZXXX"]  # 000000, 000001, 000002-optimistic
    assert (result.notes["outputs_plain"], result.notes["outputs_optimistic"]) == (2, 1)


def test_deeper_path_negates_every_branch(stand_in):
    result = SymccExecutor(target=str(stand_in), options={}).run(b"SYM")
    assert result.candidates == [b"RYM", b"SXM", b"SYL"]


def test_file_mode_substitutes_at_at_and_sets_symcc_input_file(stand_in, private_tmp):
    executor = SymccExecutor(target=str(stand_in), options={"args": ["@@"]})
    assert executor.identity()["input_mode"] == "file"
    result = executor.run(b"XXXX")
    # The stand-in only emits test cases when SYMCC_INPUT_FILE names the file it read.
    assert result.candidates == [b"SXXX", b"ZXXX"]
    _only_scratch_root(private_tmp)


def test_inherited_symcc_variables_are_ignored(stand_in, tmp_path, monkeypatch):
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "000000").write_bytes(b"stale")
    monkeypatch.setenv("SYMCC_OUTPUT_DIR", str(stale))
    monkeypatch.setenv("SYMCC_INPUT_FILE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("SYMCC_NO_SYMBOLIC_INPUT", "1")
    executor = SymccExecutor(target=str(stand_in), options={})
    first = executor.run(b"XXXX")
    second = executor.run(b"XXXX")
    assert first.candidates == second.candidates == [b"SXXX", b"ZXXX"]
    assert sorted(p.name for p in stale.iterdir()) == ["000000"]


def test_a_nonzero_exit_is_not_a_finding(stand_in):
    result = SymccExecutor(target=str(stand_in), options={}).run(b"EXIT")
    assert result.notes["returncode"] == 1
    assert result.candidates == [b"SXIT", b"ZXIT"]
    assert result.findings == [] and "confirmed" not in result.notes


def test_a_crash_is_confirmed_concretely_and_keeps_its_test_cases(stand_in):
    executor = SymccExecutor(target=str(stand_in), options={"args": ["--crash"]})
    result = executor.run(b"XXXX")
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert result.notes["returncode"] == -signal.SIGABRT
    assert result.notes["partial_possible"] is True
    assert result.notes["confirmed"] == "crash" and result.executions == 2
    [finding] = result.findings
    assert (finding.outcome.kind, finding.outcome.signature, finding.data) == ("crash", "SIGABRT", b"XXXX")


def test_an_input_that_crashes_the_target_is_a_finding(stand_in):
    executor = SymccExecutor(target=str(stand_in), options={})
    result = executor.run(b"CRSH")
    assert [(f.outcome.kind, f.outcome.signature, f.data) for f in result.findings] == [("crash", "SIGSEGV", b"CRSH")]
    assert executor.reproduce(b"CRSH").signature == "SIGSEGV"
    assert executor.reproduce(b"XXXX").kind == "ok"


def test_a_symcc_run_that_times_out_only_while_solving_is_not_a_finding(stand_in):
    executor = SymccExecutor(target=str(stand_in), options={"args": ["--slow-solver"], "timeout_s": 0.5})
    result = executor.run(b"XXXX")
    assert result.notes["timed_out"] is True
    assert result.candidates == [b"SXXX", b"ZXXX"]  # written before the solver got stuck
    assert result.notes["confirmed"] == "ok" and result.findings == []


def test_a_sanitizer_report_is_a_crash_named_by_its_crash_state():
    stderr = "==1==ERROR: AddressSanitizer: heap-buffer-overflow\n...\nSUMMARY: AddressSanitizer: heap-buffer-overflow " \
             "tlv.c:42:7 in parse_record\n"
    outcome = classify_exit(1, False, stderr)
    assert outcome.kind == "crash" and outcome.signature == "AddressSanitizer: heap-buffer-overflow in parse_record"
    assert classify_exit(1, False, "usage: tlv FILE\n").kind == "ok"
    assert classify_exit(2, False, "SUMMARY: 3 records, 1 rejected\n").kind == "ok"  # not a sanitizer's
    assert classify_exit(0, True, "").kind == "hang"
    assert classify_exit(-11, False, "").signature == "SIGSEGV"


def test_symlinks_fifos_and_directories_in_output_dir_are_skipped(stand_in, tmp_path, private_tmp):
    secret = tmp_path / "secret"
    secret.write_bytes(b"must never become a candidate")
    executor = SymccExecutor(target=str(stand_in), options={"args": ["--evil", str(secret)], "timeout_s": 10})
    result = executor.run(b"XXXX")
    assert result.candidates == [b"SXXX", b"ZXXX"]
    assert {key: result.notes[key] for key in result.notes if key.startswith(("skipped_", "outputs_"))} == {
        "outputs_plain": 2, "outputs_optimistic": 0, "skipped_symlink": 1, "skipped_not_regular": 2,
        "skipped_oversized": 0, "skipped_unreadable": 0,
    }
    assert result.notes["ignored_entries"] == 1  # README
    assert secret.read_bytes() == b"must never become a candidate"
    _only_scratch_root(private_tmp)


def test_oversized_outputs_are_skipped_and_counted(stand_in):
    result = SymccExecutor(target=str(stand_in), options={"max_output_bytes": 3}).run(b"XXXX")
    assert result.candidates == []
    assert result.notes["skipped_oversized"] == 2
    assert "skipped" in result.notes["nothing_written"]


def test_a_run_that_writes_nothing_says_why(stand_in, tmp_path):
    result = SymccExecutor(target=str(stand_in), options={"args": [str(tmp_path / "missing-input")]}).run(b"")
    assert result.notes["returncode"] == 4
    assert "missing-input" in result.notes["stderr_tail"]
    assert result.notes["nothing_written"].startswith("exit 4 and no branch on its path depended on the symbolic input")


def test_a_binary_that_cannot_be_executed_is_a_target_error(stand_in, tmp_path):
    copy = tmp_path / "target"
    shutil.copy2(stand_in, copy)
    executor = SymccExecutor(target=str(copy), options={})
    copy.chmod(0o644)  # the content, hence the identity, is unchanged
    with pytest.raises(TargetError, match="cannot execute"):
        executor.run(b"XXXX")


# --- no process between the executor and the binary; nothing outlives a run -------------------


def test_the_binary_is_a_direct_child_of_the_sandbox_and_its_daemon_is_killed(stand_in, tmp_path, private_tmp):
    pidfile = private_tmp / "pids"
    executor = _sandboxed(stand_in, private_tmp, args=["--daemon", "--pidfile", str(pidfile)])
    result = executor.run(b"XXXX")
    assert result.candidates == [b"SXXX", b"ZXXX"] and result.notes["returncode"] == 0
    pid, ppid, daemon = _pids(pidfile)
    assert ppid == executor._pid  # no Python process between the sandbox child (forked by its server) and the target
    assert _wait_dead_inside(executor, pid, daemon), "the daemon (its own session) outlived the run"
    assert [p.name.startswith("symcc-ulfm-exec-") for p in private_tmp.iterdir()] == [True, True]  # dir, lock
    executor.close()
    assert list(private_tmp.iterdir()) == []


def test_timeout_kills_everything_and_keeps_partial_output(stand_in, tmp_path, private_tmp):
    pidfile = private_tmp / "pids"
    executor = _sandboxed(stand_in, private_tmp, args=["--hang", "--pidfile", str(pidfile)], timeout_s=1.0)
    assert executor.execution_limit_s == 1.0 and executor.run_limit_s == 2.0
    started = time.monotonic()
    result = executor.run(b"XXXX")
    assert time.monotonic() - started < 10
    assert result.notes["timed_out"] is True
    assert result.notes["returncode"] == -signal.SIGKILL
    assert result.notes["partial_possible"] is True
    assert result.notes["confirmed"] == "hang"
    assert [(f.outcome.kind, f.data) for f in result.findings] == [("hang", b"XXXX")]
    # Two complete test cases, then the half-written one, read as it was left.
    assert result.candidates == [b"SXXX", b"ZXXX", b"PA"]
    assert (result.notes["outputs_plain"], result.notes["outputs_optimistic"]) == (3, 0)
    pid, _ppid, daemon = _pids(pidfile)  # the concrete confirmation's
    assert _wait_dead_inside(executor, pid, daemon), "the forked child outlived the run"
    assert executor._proc is not None and executor.deaths == 0  # the sandbox child itself lived on
    executor.close()
    assert list(private_tmp.iterdir()) == []


def test_a_spinning_run_is_bounded_by_cpu_time_even_without_its_watcher(tmp_path):
    # The watcher's timeout is far away here: the kernel's RLIMIT_CPU ends the run.
    ended = run_binary("target", ["/bin/sh", "-c", "while :; do :; done"], stdin=Path(os.devnull),
                       stderr=tmp_path / "stderr", env=dict(os.environ), cwd=tmp_path, timeout_s=60, adopt=False,
                       cpu_limit_s=1)
    assert ended.returncode == -signal.SIGKILL and not ended.timed_out and ended.seconds < 30


def test_the_sandbox_reproduces_and_runs_like_the_engine(stand_in, private_tmp):
    executor = _sandboxed(stand_in, private_tmp)
    engine = SymccExecutor(target=str(stand_in), options={})
    assert executor.identity() == engine.identity()
    assert executor.run(b"SXXX").candidates == engine.run(b"SXXX").candidates
    assert executor.reproduce(b"CRSH") == engine.reproduce(b"CRSH")
    assert executor.reproduce(b"XXXX").kind == "ok"
    assert executor.measure(b"XXXX").coverage == frozenset()
    executor.close()
    engine.close()


# --- preflight: a target that cannot work is refused before the campaign ----------------------


def test_an_uninstrumented_binary_is_refused_when_built(plain, private_tmp):
    assert "_sym_initialize" not in read_dynamic(plain.read_bytes()).imports
    with pytest.raises(TargetError, match="not SymCC-instrumented") as info:
        SymccExecutor(target=str(plain), options={})
    assert info.value.exit_code == 2 and str(plain) in str(info.value)
    sandbox = executors.create("symcc", str(plain), {}, scratch=private_tmp)
    with pytest.raises(TargetError, match="not SymCC-instrumented") as info:
        sandbox.identity()  # what launch asks first
    assert info.value.exit_code == 2


def test_preflight_passes_on_the_first_seed_that_works(stand_in):
    executor = SymccExecutor(target=str(stand_in), options={"seeds": ["", "58585858"]})
    summary = executor.preflight()
    assert summary["seed"] == 1 and summary["outputs_plain"] == 2


def test_preflight_refuses_a_target_that_crashes_on_every_seed(stand_in, private_tmp):
    options = {"args": ["--crash"], "seeds": ["58585858", "5a"]}
    with pytest.raises(TargetError, match="no seed gave SymCC test cases") as info:
        SymccExecutor(target=str(stand_in), options=options).preflight()
    assert "seed 0 (4 bytes): crash: SIGABRT" in str(info.value) and "seed 1 (1 bytes)" in str(info.value)
    sandbox = _sandboxed(stand_in, private_tmp, **options)
    with pytest.raises(TargetError, match="crash: SIGABRT") as info:
        sandbox.preflight()
    assert info.value.exit_code == 2
    sandbox.close()


def test_preflight_refuses_a_target_whose_input_is_never_symbolic(stand_in, tmp_path):
    fixed = tmp_path / "fixed-input"
    fixed.write_bytes(b"XXXX")
    executor = SymccExecutor(target=str(stand_in), options={"args": [str(fixed)]})
    with pytest.raises(TargetError, match="no branch on its path depended on the symbolic input, stdin"):
        executor.preflight()


def test_preflight_through_the_sandbox(stand_in, private_tmp):
    sandbox = _sandboxed(stand_in, private_tmp)
    summary = sandbox.preflight()
    assert summary["seed"] == 0 and summary["outputs_plain"] == 2  # b"\0" -> b"S", b"Z"
    assert sandbox.preflight([b"", b"SXXX"])["outputs_optimistic"] == 1  # launch's --seeds replace its own
    with pytest.raises(TargetError, match=r"seed 0 \(0 bytes\)"):
        sandbox.preflight([b""])
    sandbox.close()


def test_default_seeds_are_zeros_of_several_lengths(stand_in):
    seeds = SymccExecutor(target=str(stand_in), options={}).seeds()
    assert seeds == [bytes(length) for length in DEFAULT_SEED_LENGTHS]
    assert len(set(map(len, seeds))) > 1


# --- identity, options, scratch --------------------------------------------------------------


def test_identity_pins_binary_runtime_args_and_mode(stand_in, runtime, build):
    executor = SymccExecutor(target=str(stand_in), options={"args": ["@@"], "timeout_s": 5})
    ident = executor.identity()
    assert ident["target_sha256"] == hashlib.sha256(stand_in.read_bytes()).hexdigest()
    assert ident["runtime"] == str(runtime)
    assert ident["runtime_sha256"] == hashlib.sha256(runtime.read_bytes()).hexdigest()
    assert ident["args"] == ["@@"] and ident["input_mode"] == "file" and ident["timeout_s"] == 5.0
    assert ident["coverage"] == {"kind": "none", "note": NO_COVERAGE}
    assert ident["env"] == {"SYMCC_ENABLE_LINEARIZATION": "0"}
    other = compile_c("gcc", build / "fake_symcc.other", SOURCE, "-DUNUSED_VARIANT=1", "-g",
                     f"-L{runtime.parent}", "-lsymcc-rt", f"-Wl,-rpath,{runtime.parent}")
    assert SymccExecutor(target=str(other), options={"args": ["@@"], "timeout_s": 5}).identity() != ident
    assert SymccExecutor(target=str(stand_in), options={"timeout_s": 5}).identity() != ident


def test_the_runtime_is_found_as_the_loader_finds_it(build, tmp_path, monkeypatch):
    variant = runtime(tmp_path / "rt-variant", "-DRT_VARIANT")
    unlinked = linked(tmp_path / "no-runpath", variant.parent, rpath=False)
    with pytest.raises(TargetError, match="cannot find libsymcc-rt.so"):
        SymccExecutor(target=str(unlinked), options={})
    monkeypatch.setenv("LD_LIBRARY_PATH", str(variant.parent))
    executor = SymccExecutor(target=str(unlinked), options={})
    assert executor.identity()["runtime"] == str(variant)
    assert executor.identity()["runtime_sha256"] == hashlib.sha256(variant.read_bytes()).hexdigest()
    assert executor.run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]


def test_a_runtime_replaced_after_the_identity_is_refused(tmp_path):
    library = runtime(tmp_path / "rt")
    binary = linked(tmp_path / "target", library.parent)
    executor = SymccExecutor(target=str(binary), options={})
    runtime(tmp_path / "rt", "-DRT_VARIANT")
    with pytest.raises(ProvenanceChanged, match="libsymcc-rt.so"):
        executor.run(b"XXXX")


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


def test_time_limits_have_defaults_that_fit_a_lease(stand_in, private_tmp):
    executor = SymccExecutor(target=str(stand_in), options={})
    ident = executor.identity()
    assert (ident["timeout_s"], ident["measure_timeout_s"]) == (8.0, 1.0)
    assert (executor.execution_limit_s, executor.run_limit_s) == (8.0, 16.0)
    # the default lease holds them; a timeout_s it cannot hold is refused, unless the lease is fitted to it
    policy = Policy(executor="symcc", target=str(stand_in))
    probe = check_executor(policy)
    check_lease(policy, probe.run_limit_s, probe.execution_limit_s)
    assert fit_lease(policy, probe.run_limit_s, probe.execution_limit_s) is policy
    slow = Policy(executor="symcc", target=str(stand_in), executor_options={"timeout_s": 10})
    probe = check_executor(slow)
    with pytest.raises(PolicyError, match="lease"):
        check_lease(slow, probe.run_limit_s, probe.execution_limit_s)
    fitted = fit_lease(slow, probe.run_limit_s, probe.execution_limit_s)
    assert fitted.timeouts.lease_s == math.ceil(2 * (probe.run_limit_s + probe.execution_limit_s)) > 60
    check_lease(fitted, probe.run_limit_s, probe.execution_limit_s)
    short = SymccExecutor(target=str(stand_in), options={"timeout_s": 0.75}).identity()
    assert short["measure_timeout_s"] == 0.25  # three runs of the twin fit in one SymCC run's time


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
        ({"timeout_s": 7200}, "executor_options.timeout_s"),
        ({"measure_timeout_s": 0}, "executor_options.measure_timeout_s"),
        ({"timeout_s": 2, "measure_timeout_s": 1}, "executor_options.measure_timeout_s"),
        ({"max_output_bytes": 0}, "executor_options.max_output_bytes"),
        ({"seeds": []}, "executor_options.seeds"),
        ({"seeds": ["zz"]}, "executor_options.seeds"),
        ({"afl_showmap": "/usr/bin/afl-showmap"}, "executor_options.afl_showmap"),
        ({"afl_binary": 5}, "executor_options.afl_binary"),
        ({"env": ["SYMCC_GC_THRESHOLD"]}, "executor_options.env"),
        ({"env": {"SYMCC_OUTPUT_DIR": "/tmp"}}, "executor_options.env.SYMCC_OUTPUT_DIR"),
        ({"env": {"SYMCC_NO_SYMBOLIC_INPUT": "1"}}, "executor_options.env.SYMCC_NO_SYMBOLIC_INPUT"),
        ({"env": {"LD_PRELOAD": "/x.so"}}, "executor_options.env.LD_PRELOAD"),
        ({"env": {"SYMCC_ENABLE_LINEARIZATION": "yes"}}, "executor_options.env.SYMCC_ENABLE_LINEARIZATION"),
        ({"env": {"SYMCC_ENABLE_LINEARIZATION": 1}}, "executor_options.env.SYMCC_ENABLE_LINEARIZATION"),
        ({"env": {"SYMCC_GC_THRESHOLD": "-5"}}, "executor_options.env.SYMCC_GC_THRESHOLD"),
        ({"env": {"SYMCC_AFL_COVERAGE_MAP": "../map"}}, "executor_options.env.SYMCC_AFL_COVERAGE_MAP"),
        ({"env": {"SYMCC_AFL_COVERAGE_MAP": "/no/such/dir/map"}}, "executor_options.env.SYMCC_AFL_COVERAGE_MAP"),
    ],
)
def test_bad_options_name_the_field(stand_in, options, field):
    with pytest.raises(PolicyError) as info:
        SymccExecutor(target=str(stand_in), options=options)
    assert info.value.field == field
    assert info.value.exit_code == 2


def test_allowed_runtime_variables_are_in_the_identity(stand_in, tmp_path):
    env = {"SYMCC_ENABLE_LINEARIZATION": "0", "SYMCC_GC_THRESHOLD": "100000",
           "SYMCC_AFL_COVERAGE_MAP": str(tmp_path / "shared.map")}
    assert SymccExecutor(target=str(stand_in), options={"env": env}).identity()["env"] == env
    ident = SymccExecutor(target=str(stand_in), options={"env": {"SYMCC_AFL_COVERAGE_MAP": "qsym.map"}}).identity()
    assert ident["env"]["SYMCC_AFL_COVERAGE_MAP"] == "per-worker:qsym.map"


def test_a_per_worker_coverage_map_is_kept_across_the_workers_runs(stand_in, private_tmp):
    options = {"env": {"SYMCC_AFL_COVERAGE_MAP": "qsym.map"}}
    worker = SymccExecutor(target=str(stand_in), options=options)
    assert worker.run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]
    assert (worker.scratch_root / "qsym.map").is_file()
    again = worker.run(b"XXXX")  # the runtime skips the branches it already tried
    assert again.candidates == [] and "no branch" in again.notes["nothing_written"]
    other = SymccExecutor(target=str(stand_in), options=options)  # another worker: a map of its own
    assert other.run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]


def test_an_absolute_coverage_map_is_shared(stand_in, tmp_path):
    options = {"env": {"SYMCC_AFL_COVERAGE_MAP": str(tmp_path / "shared.map")}}
    assert SymccExecutor(target=str(stand_in), options=options).run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]
    assert SymccExecutor(target=str(stand_in), options=options).run(b"XXXX").candidates == []


def test_a_map_file_shorter_than_qsyms_two_maps_is_an_empty_map(stand_in, private_tmp):
    options = {"env": {"SYMCC_AFL_COVERAGE_MAP": "qsym.map"}}
    worker = SymccExecutor(target=str(stand_in), options=options)
    assert worker.run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]
    assert (worker.scratch_root / "qsym.map").stat().st_size == MAP_BYTES  # the trace map, then the context map
    (worker.scratch_root / "qsym.map").write_bytes(b"\xff" * (MAP_BYTES - 1))
    assert worker.run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]


def _bits(data: bytes) -> set[int]:
    return {8 * offset + place for offset, byte in enumerate(data) for place in range(8) if byte >> place & 1}


def test_in_edge_order_the_map_holds_the_campaigns_record_and_a_run_reports_the_bits_it_set(stand_in, private_tmp):
    options = {"env": {"SYMCC_AFL_COVERAGE_MAP": "qsym.map"}}
    first = SymccExecutor(target=str(stand_in), options=options)
    first.learn([])  # edge order: a record, empty so far
    ran = first.run(b"XXXX")
    assert ran.candidates == [b"SXXX", b"ZXXX"]
    assert set(ran.tried) == _bits((first.scratch_root / "qsym.map").read_bytes()) != set()
    assert first.run(b"XXXX").tried == []  # it set nothing new
    other = SymccExecutor(target=str(stand_in), options=options)  # another worker: a map of its own ...
    other.learn(ran.tried)  # ... holding the campaign's record
    again = other.run(b"XXXX")
    assert again.candidates == [] and again.tried == []
    assert other.run(b"SXXX").candidates  # a path with branches nobody tried
    third = SymccExecutor(target=str(stand_in), options=options)
    third.learn([])
    assert third.run(b"XXXX").candidates == [b"SXXX", b"ZXXX"]  # the record, not the worker, pruned


def test_a_shared_map_or_none_keeps_no_record(stand_in, tmp_path, private_tmp):
    shared = SymccExecutor(target=str(stand_in), options={"env": {"SYMCC_AFL_COVERAGE_MAP": str(tmp_path / "m")}})
    shared.learn([1, 2, 3])
    assert shared.run(b"XXXX").tried == [] and not _bits((tmp_path / "m").read_bytes()) & {1, 2, 3}
    plain = SymccExecutor(target=str(stand_in), options={})
    plain.learn([1])
    ran = plain.run(b"XXXX")
    assert ran.tried == [] and ran.candidates == [b"SXXX", b"ZXXX"]


def test_scratch_of_dead_executors_is_removed_at_start_live_ones_kept(stand_in, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    live = SymccExecutor(target=str(stand_in), options={})
    live.scratch_dir = base  # as the runtime sets it
    (live.scratch_root / "keep").write_bytes(b"")
    # A dead executor's: its directory and a lock file nobody holds.
    (base / "symcc-ulfm-exec-dead0001").mkdir()
    (base / "symcc-ulfm-exec-dead0001" / "run").mkdir()
    (base / "symcc-ulfm-exec-dead0001.lock").write_bytes(b"")
    unrelated = base / "symcc-ulfm-exec-nolock"
    unrelated.mkdir()
    fresh = SymccExecutor(target=str(stand_in), options={})
    fresh.scratch_dir = base
    fresh.run(b"XXXX")
    assert not (base / "symcc-ulfm-exec-dead0001").exists() and not (base / "symcc-ulfm-exec-dead0001.lock").exists()
    assert (live.scratch_root / "keep").exists() and unrelated.exists()
    with open(fresh.scratch_root.with_suffix(".lock"), "rb") as handle, pytest.raises(BlockingIOError):
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fresh.close()
    assert not fresh.scratch_root.exists()


def test_missing_binary_is_a_target_error_naming_the_path(tmp_path):
    missing = tmp_path / "no-such-binary"
    with pytest.raises(TargetError) as info:
        SymccExecutor(target=str(missing), options={})
    assert str(missing) in str(info.value) and info.value.exit_code == 2
    with pytest.raises(TargetError):
        SymccExecutor(target=None, options={})
    with pytest.raises(ConfigError, match="executor_options.seeds") as info:
        SymccExecutor(target=str(tmp_path / "seeds"), options={"seeds": str(tmp_path / "nowhere")})
    assert str(tmp_path / "nowhere") in str(info.value) and info.value.exit_code == 2


def test_not_executable_binary_is_a_target_error(stand_in, tmp_path):
    copy = tmp_path / "plain"
    shutil.copyfile(stand_in, copy)
    copy.chmod(0o644)
    with pytest.raises(TargetError, match="not executable") as info:
        SymccExecutor(target=str(copy), options={})
    assert str(copy) in str(info.value)


def test_a_file_that_is_not_elf_is_a_target_error(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF not really")
    junk.chmod(0o755)
    with pytest.raises(TargetError, match="ELF"):
        SymccExecutor(target=str(junk), options={})


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
    assert ident["kind"] == "afl-showmap -Z -b"
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


def test_a_sanitizer_build_judges_failing_inputs_and_reproduces_findings(stand_in, afl_twin, build):
    """With ``sanitizer_binary`` (here the stand-in's source built with AddressSanitizer) a crash
    measured on the twin and a failing SymCC run's confirmation both run that build: one signature,
    the sanitizer's report, and its SHA-256 in the identity."""
    if shutil.which("clang") is None:
        pytest.skip("needs clang for the sanitizer build")
    sanitizer = compile_c("clang", build / "fake_symcc.asan", SOURCE, "-DAFL_TWIN", "-fsanitize=address,undefined")
    executor = SymccExecutor(target=str(stand_in), options={"afl_binary": str(afl_twin),
                                                              "sanitizer_binary": str(sanitizer), "timeout_s": 5})
    try:
        measured = executor.measure(b"CRSH")
        outcome, report = executor.reproduce_report(b"CRSH")
        assert measured.outcome == outcome and "AddressSanitizer" in outcome.signature
        assert "ERROR: AddressSanitizer" in report
        [finding] = executor.run(b"CRSH").findings
        assert finding.outcome == outcome
        assert executor.identity()["sanitizer_sha256"] == hashlib.sha256(sanitizer.read_bytes()).hexdigest()
    finally:
        executor.close()


def _counting_showmap(tmp_path: Path) -> tuple[Path, Path]:
    """A wrapper that logs each afl-showmap start, then runs the real one (same arguments)."""
    log = tmp_path / "showmap.log"
    wrapper = tmp_path / "afl-showmap"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {shutil.which("afl-showmap")} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def test_a_batch_is_one_afl_showmap_with_an_outcome_per_input(stand_in, afl_twin, tmp_path):
    wrapper, log = _counting_showmap(tmp_path)
    executor = SymccExecutor(target=str(stand_in), options={
        "afl_binary": str(afl_twin), "afl_showmap": str(wrapper), "measure_timeout_s": 0.5, "timeout_s": 1.5})
    inputs = [b"XXXX", b"SYM\x05", b"CRSH", b"LOOP", b"", b"EXIT", b"ZZZZ"]
    measured = executor.measure_many(inputs)
    assert [(m.outcome.kind, m.outcome.signature) for m in measured] == [
        ("ok", ""), ("ok", ""), ("crash", "SIGSEGV"), ("hang", "hang"), ("ok", ""), ("ok", ""), ("ok", "")]
    starts = log.read_text().splitlines()
    assert len(starts) == 4 and " -Z " in f" {starts[0]} "  # the batch, then CRSH, LOOP and b"" alone
    log.unlink()
    alone = [executor.measure(data) for data in inputs]
    hang = inputs.index(b"LOOP")  # how often its loop edge was hit depends on when it was killed
    assert [m.coverage for i, m in enumerate(measured) if i != hang] == [
        m.coverage for i, m in enumerate(alone) if i != hang]
    assert {edge_of(c) for c in measured[hang].coverage} == {edge_of(c) for c in alone[hang].coverage}
    assert all(m.coverage for m in measured)  # the crash and the hang keep the map of what ran
    assert len({m.coverage for m in measured}) >= 4


def test_a_batch_stops_at_its_budget(stand_in, afl_twin):
    executor = SymccExecutor(target=str(stand_in), options={"afl_binary": str(afl_twin), "measure_timeout_s": 0.5})
    assert executor.measure_many([b"XXXX", b"SYM\0"], budget_s=0) == [None, None]
    started = time.monotonic()
    measured = executor.measure_many([b"XXXX", *[b"LOOP%d" % i for i in range(8)]], budget_s=2.5)
    assert time.monotonic() - started < 10  # the budget, then SIGTERM's grace at most
    assert measured[0] is not None and measured[0].outcome.kind == "ok"
    assert measured[-1] is None
    first_missing = measured.index(None)
    assert measured[first_missing:] == [None] * (len(measured) - first_missing)


def test_afl_twin_coverage_of_a_hanging_input_is_bounded(stand_in, afl_twin, tmp_path, private_tmp):
    pidfile = private_tmp / "pids"
    executor = _sandboxed(stand_in, private_tmp, afl_binary=str(afl_twin), timeout_s=1.5, measure_timeout_s=0.5,
                          args=["--hang", "--pidfile", str(pidfile)])
    started = time.monotonic()
    measured = executor.measure(b"SYM\x01")
    assert measured.coverage and measured.outcome.kind == "hang"
    assert time.monotonic() - started < 20
    _pid, _ppid, child = _pids(pidfile)
    assert _wait_dead_inside(executor, child), "the target's forked child outlived afl-showmap"
    executor.close()
    assert list(private_tmp.iterdir()) == []


def test_the_sandbox_measures_a_batch_like_the_engine(stand_in, afl_twin, private_tmp):
    options = {"afl_binary": str(afl_twin), "measure_timeout_s": 0.5, "timeout_s": 1.5}
    sandbox = _sandboxed(stand_in, private_tmp, **options)
    engine = SymccExecutor(target=str(stand_in), options=options)
    inputs = [b"XXXX", b"CRSH", b"SYM\x07"]
    assert sandbox.measure_many(inputs) == engine.measure_many(inputs)
    sandbox.close()


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


# --- a campaign -------------------------------------------------------------------------------


@pytest.mark.mpi
def test_a_campaign_runs_the_stand_in_finds_its_crash_and_replays_it(stand_in, tmp_path):
    """`launch --executor symcc` end to end: workers host the executor in sandbox children whose
    scratch is under the state dir, the crash is one confirmed finding, `replay` reproduces it."""
    seeds = json.dumps([b"XXXX".hex(), b"CRSH".hex()])
    # the stand-in's search is finite: the campaign ends once it is exhausted (the deadline only
    # bounds a run that goes wrong), having analyzed every input it found
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--failure-schedule", "", "--deadline", "240", "--executor", "symcc", "--target", str(stand_in),
                 "--executor-option", f"seeds={seeds}")
    verdict = run.verdict
    assert run.returncode == 0, run.stderr + json.dumps(verdict.get("problems"))
    assert run.outcome == "exhausted"
    assert verdict["passed"] and verdict["wal_analyzed"] == verdict["public_objects"]  # each input once
    assert [(f["kind"], f["signature"]) for f in verdict["findings"]] == [("crash", "SIGSEGV")]
    corpus = {path.read_bytes() for path in (run.state / "corpus" / "objects").iterdir()}
    assert {b"SXXX", b"ZXXX", b"SRSH", b"ZRSH", b"SYXX"} <= corpus  # children of the seeds, and theirs
    listed = subprocess.run([sys.executable, "-m", "symcc_ulfm", "findings", str(run.state), "--json"],
                            capture_output=True, text=True, timeout=60)
    [row] = json.loads(listed.stdout)["findings"]
    replayed = subprocess.run([sys.executable, "-m", "symcc_ulfm", "replay", str(run.state), row["id"], "--json"],
                              capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["observed"]["signature"] == "SIGSEGV"
    leftovers = [p for p in (run.state / "scratch").rglob("*") if p.is_file()]
    assert leftovers == [], leftovers
