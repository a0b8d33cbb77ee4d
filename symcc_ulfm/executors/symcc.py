"""The ``symcc`` executor: drive a real SymCC-compiled binary the way SymCC expects.

One :meth:`SymccExecutor.run` is one concolic execution of the binary on one input:

- a fresh, existing, empty ``SYMCC_OUTPUT_DIR`` per run (SymCC exits with status 255 when the
  directory does not exist), ``SYMCC_ENABLE_LINEARIZATION=1`` unless ``env`` says otherwise;
- the input on stdin, or (``@@`` in ``args``) in a file whose path replaces ``@@`` and is also
  exported as ``SYMCC_INPUT_FILE``, because SymCC only treats reads of the file named there as
  symbolic;
- every inherited ``SYMCC_*`` (and ``AFL_*``) variable is dropped first, so the run means exactly
  what :meth:`~SymccExecutor.identity` says (a stray ``SYMCC_INPUT_FILE`` would make stdin
  concrete); the only SymCC runtime variables a campaign may set are those of
  :data:`RUNTIME_ENV`, through the ``env`` option;
- every test case SymCC wrote is a candidate, in the order it wrote them: QSYM names them
  ``000000``, ``000001``, ... and ``NNNNNN-optimistic`` when it could only solve the negated
  branch alone (the path constraint was unsatisfiable; such inputs often reach new code anyway),
  counted as ``outputs_plain`` and ``outputs_optimistic``. SymCC writes them in place, so a
  killed run can leave a partial last file: it is read as it is (any byte string is a valid
  input; the master deduplicates by content). Entries are opened with ``O_NOFOLLOW`` and must be
  regular files; symlinks, FIFOs, directories, unreadable and oversized entries are skipped and
  counted in the notes.

The binary runs as a direct child of the executor's process (:func:`.symcc_io.run_binary`): its
own process group, the time limit enforced there, and every process it left behind killed once
it is done. The runtime hosts this executor in the sandbox child (``in_process_target``), which
makes itself a child subreaper for it (``adopts_orphans``), so that also daemons and AFL's fork
server (both call ``setsid()``) are found and killed; the sandbox is told of each execution
(:attr:`~.base.Executor.on_execution`).

Outcomes (:func:`.symcc_io.classify_exit`): a signal or a sanitizer report is a ``crash``, the
time limit a ``hang``, an exit status alone is ``ok`` (parsers exit non-zero on inputs they
reject). A SymCC run that is not ``ok`` is confirmed by :meth:`~SymccExecutor.reproduce`, a
concrete run of the same binary (``SYMCC_NO_SYMBOLIC_INPUT=1``: the runtime does no symbolic
work), and only a confirmed outcome makes the input a finding: a run that timed out because the
solver was slow, or a crash inside SymCC's runtime, is not a bug of the target.

Before a campaign, :meth:`~SymccExecutor.preflight` runs SymCC on the seeds until one run ends
cleanly with test cases; a target that never does (nothing symbolic reaches a branch, it crashes
or hangs on every seed, the runtime refuses to start) is refused with a TargetError naming why.
A binary that is not SymCC-instrumented is refused when the executor is built
(:mod:`.symcc_target`).

Coverage comes from an optional AFL-instrumented twin of the target measured in batches
(:mod:`.symcc_coverage`). Without a twin there is no coverage: :meth:`~SymccExecutor.measure`
returns an empty set and the identity and notes say "no coverage: content dedup only".
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from ..errors import PolicyError, ProvenanceChanged, TargetError
from .base import Executor, Finding, Measurement, RunResult
from .outcome import Outcome
from .symcc_coverage import AflTwin, check_instrumented, which_showmap
from .symcc_io import (
    Exit,
    Scratch,
    classify_exit,
    clean_env,
    is_subreaper,
    read_outputs,
    remove_tree,
    run_binary,
    tail,
)
from .symcc_target import symcc_runtime

VERSION = 2
NO_COVERAGE = "no coverage: content dedup only"
# SymCC never changes an input's length, and a target's length checks are concrete: one seed
# length reaches one side of each. Zero bytes at lengths from 1 B to 1 KiB reach both sides of
# the usual header and minimum-size checks.
DEFAULT_SEED_LENGTHS = (1, 4, 16, 64, 256, 1024)
DEFAULT_SEEDS = tuple(bytes(length) for length in DEFAULT_SEED_LENGTHS)
PREFLIGHT_SEEDS = 16  # seeds tried by preflight() before the target is refused
MEASURE_RUNS = 3  # runs of the AFL twin for an input that fails: in its batch, alone under afl-showmap, directly
MAX_TIMEOUT_S = 3600.0
DEFAULTS: dict[str, Any] = {
    "args": [],
    "input_mode": None,  # derived from args: "file" when an argument contains @@, else "stdin"
    "timeout_s": 8.0,  # one SymCC run (and one concrete run of the same binary); fits the default lease
    "measure_timeout_s": None,  # one concrete run of the AFL twin: 1 s (afl-fuzz's default), at most timeout_s / 3
    "env": {},  # SymCC runtime variables of every run (RUNTIME_ENV)
    "afl_binary": None,
    "afl_showmap": None,  # afl-showmap on PATH when afl_binary is set
    "seeds": None,  # DEFAULT_SEEDS: zero bytes of several lengths, all of them symbolic
    "max_output_bytes": 1024 * 1024,
}


def _flag(value: str) -> str | None:
    return None if value in ("0", "1") else "expected '0' or '1'"


def _count(value: str) -> str | None:
    return None if value.isascii() and value.isdigit() and 0 < int(value) < 2**63 else "expected a positive integer"


def _map_path(value: str) -> str | None:
    if os.path.isabs(value):
        return None if os.path.isdir(os.path.dirname(value)) else "its directory does not exist"
    if not value or "/" in value or value in (".", ".."):
        return "expected a file name (one per worker, in its scratch directory) or an absolute path"
    return None


# The SymCC runtime variables (symcc-rt's Config.cpp) a campaign may set, each with its check.
# Left out on purpose: SYMCC_OUTPUT_DIR and SYMCC_INPUT_FILE (set per run), SYMCC_NO_SYMBOLIC_INPUT
# (a run would write nothing; reproduce() sets it), SYMCC_MEMORY_INPUT (needs a harness that
# calls symcc_make_symbolic, not stdin or @@), SYMCC_LOG_FILE (a file per run nobody reads).
RUNTIME_ENV = {
    # QSYM's pruning of expressions (linearization of non-linear ones); SymCC's drivers set 1.
    "SYMCC_ENABLE_LINEARIZATION": _flag,
    # QSYM's record of the branches it already tried to negate, read at start and rewritten at
    # each new one; later runs skip those branches. A file name is a map per worker (in the
    # worker's scratch directory, kept across its runs); an absolute path is one map shared by
    # every worker that sees it, which QSYM rewrites without locking (a torn read is an empty map).
    "SYMCC_AFL_COVERAGE_MAP": _map_path,
    # Expressions alive before the runtime collects garbage.
    "SYMCC_GC_THRESHOLD": _count,
}


class SymccExecutor(Executor):
    """Runs ``target``, a SymCC-compiled binary; options as in :data:`DEFAULTS`."""

    name = "symcc"
    in_process_target: ClassVar[bool] = True  # hosted in the sandbox child: no Python process per run
    batch_measure: ClassVar[bool] = True  # one afl-showmap per chunk
    adopts_orphans: ClassVar[bool] = True  # the sandbox child becomes a child subreaper for it

    def __init__(self, target: str | None, options: dict[str, Any]):
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise PolicyError(
                f"executor_options.{unknown[0]}", f"unknown option; known: {', '.join(sorted(DEFAULTS))}"
            )
        opts = {**DEFAULTS, **options}
        self._args = _string_list("args", opts["args"])
        self._input_mode = _input_mode(opts["input_mode"], self._args)
        self._timeout_s = _number("timeout_s", opts["timeout_s"], 0.01, MAX_TIMEOUT_S)
        measure_timeout_s = opts["measure_timeout_s"]
        if measure_timeout_s is None:
            measure_timeout_s = min(1.0, self._timeout_s / MEASURE_RUNS)
        self._measure_timeout_s = _number("measure_timeout_s", measure_timeout_s, 0.001, MAX_TIMEOUT_S)
        if self._measure_timeout_s * MEASURE_RUNS > self._timeout_s:
            raise PolicyError(
                "executor_options.measure_timeout_s",
                f"{self._measure_timeout_s:g} s is more than timeout_s / {MEASURE_RUNS} ({self._timeout_s:g} s / "
                f"{MEASURE_RUNS}): measuring an input that crashes or hangs takes up to {MEASURE_RUNS} runs of the "
                "AFL twin, and one measurement must fit in the time of one execution (timeout_s), the sandbox's bound",
            )
        self._max_output_bytes = _integer("max_output_bytes", opts["max_output_bytes"], 1, 256 * 1024 * 1024)
        self._env = _runtime_env(opts["env"])
        self._seeds = _seeds(opts["seeds"])
        if opts["afl_showmap"] is not None and opts["afl_binary"] is None:
            raise PolicyError(
                "executor_options.afl_showmap", "only used with afl_binary (the AFL-instrumented twin)"
            )
        if not target:
            raise TargetError("target", "the symcc executor needs the path of a SymCC-compiled binary")
        self._target = target
        self._base_env = clean_env()
        self._stamps: dict[str, tuple[int, ...]] = {}
        self._binary, self._binary_sha256, binary_data = self._pin("target", target)
        runtime = symcc_runtime(self._binary, binary_data, self._base_env)
        self._runtime, self._runtime_sha256, _ = self._pin("target", runtime, executable=False)
        self._coverage_identity: dict[str, Any] = {"kind": "none", "note": NO_COVERAGE}
        self._twin: AflTwin | None = None
        if opts["afl_binary"] is not None:
            afl_binary, afl_sha256, afl_data = self._pin("executor_options.afl_binary", opts["afl_binary"])
            check_instrumented(opts["afl_binary"], afl_data)
            showmap, showmap_sha256, _ = self._pin(
                "executor_options.afl_showmap", opts["afl_showmap"] or which_showmap()
            )
            self._twin = AflTwin(afl_binary, showmap, self._args, self._measure_timeout_s)
            self._coverage_identity = {
                "kind": "afl-showmap -Z -b",
                "afl_binary": opts["afl_binary"],
                "afl_binary_sha256": afl_sha256,
                "afl_showmap_sha256": showmap_sha256,
            }
        self._scratch: Scratch | None = None  # made at the first run: the runtime sets scratch_dir after __init__
        self._map = self._env.get("SYMCC_AFL_COVERAGE_MAP")
        self._run_env = dict(self._env)
        # Leftovers outside a run's process group can only be found by a child subreaper.
        self._adopt = is_subreaper()

    def _pin(self, field: str, path: Any, executable: bool = True) -> tuple[str, str, bytes]:
        """Absolute path, SHA-256 and bytes of a regular file that must not change from now on."""
        if not isinstance(path, str) or not path:
            raise PolicyError(field, f"{path!r}: expected the path of an executable file")
        resolved = os.path.abspath(path)
        if not os.path.isfile(resolved):
            raise TargetError(field, f"{path}: no such file")
        if executable and not os.access(resolved, os.X_OK):
            raise TargetError(field, f"{path}: not executable")
        with open(resolved, "rb") as handle:
            data = handle.read()
            self._stamps[resolved] = _stamp(handle.fileno())
        return resolved, hashlib.sha256(data).hexdigest(), data

    def identity(self) -> dict[str, Any]:
        env = dict(self._env)
        if self._map is not None and not os.path.isabs(self._map):
            env["SYMCC_AFL_COVERAGE_MAP"] = f"per-worker:{self._map}"
        return {
            "executor": self.name,
            "version": VERSION,
            "target": self._target,
            "target_sha256": self._binary_sha256,
            "runtime": self._runtime,
            "runtime_sha256": self._runtime_sha256,
            "args": list(self._args),
            "input_mode": self._input_mode,
            "env": env,
            "timeout_s": self._timeout_s,
            "measure_timeout_s": self._measure_timeout_s,
            "max_output_bytes": self._max_output_bytes,
            "coverage": dict(self._coverage_identity),
            "seeds_sha256": [hashlib.sha256(seed).hexdigest() for seed in self._seeds],
        }

    def seeds(self) -> list[bytes]:
        return list(self._seeds)

    @property
    def execution_limit_s(self) -> float:
        return self._timeout_s

    @property
    def run_limit_s(self) -> float:
        return 2 * self._timeout_s  # the SymCC run, and its concrete confirmation when it failed

    @property
    def scratch_root(self) -> Path:
        return self._workspace().root

    def _workspace(self) -> Scratch:
        """This executor's directory under ``scratch_dir`` (the runtime's per-worker directory under
        the state dir, else the system temp dir), made on first use; a relative coverage map is there."""
        if self._scratch is None:
            self._scratch = Scratch(Path(self.scratch_dir or tempfile.gettempdir()))
            if self._map is not None and not os.path.isabs(self._map):
                self._run_env["SYMCC_AFL_COVERAGE_MAP"] = str(self._scratch.root / self._map)
        return self._scratch

    def run(self, data: bytes, hint: dict[str, Any] | None = None) -> RunResult:
        started = time.monotonic()
        candidates, outcome, notes = self._symbolic(bytes(data))
        findings = []
        if outcome.is_finding:
            confirmed = self.reproduce(data)
            notes["confirmed"] = confirmed.kind
            if confirmed.is_finding:
                findings.append(Finding(confirmed, bytes(data)))
        return RunResult(candidates=candidates, executions=1 + outcome.is_finding,
                         seconds=time.monotonic() - started, notes=notes, findings=findings)

    def reproduce(self, data: bytes) -> Outcome:
        """The outcome of a concrete run of the binary on ``data`` (no symbolic input, no solving)."""
        work = self._workspace().fresh("reproduce")
        try:
            input_path = work / "input"
            input_path.write_bytes(data)
            ended = self._execute(data, work, input_path, {**self._base_env, "SYMCC_NO_SYMBOLIC_INPUT": "1"})
            return classify_exit(ended.returncode, ended.timed_out, tail(work / "stderr"))
        finally:
            remove_tree(work)

    def preflight(self, seeds: list[bytes] | None = None) -> dict[str, Any]:
        """Run SymCC on the seeds (``seeds``, else the executor's own; at most
        :data:`PREFLIGHT_SEEDS`) until one run ends cleanly with test cases; its notes. TargetError
        (exit 2) naming each seed's failure otherwise."""
        failures, last_stderr = [], ""
        for index, seed in enumerate((self._seeds if seeds is None else seeds)[:PREFLIGHT_SEEDS]):
            candidates, outcome, notes = self._symbolic(seed)
            if candidates and not outcome.is_finding:
                return {"seed": index, **notes}
            why = f"{outcome.kind}: {outcome.signature}" if outcome.is_finding else notes["nothing_written"]
            failures.append(f"seed {index} ({len(seed)} bytes): {why}")
            last_stderr = notes.get("stderr_tail", "").strip()
        shown = "; ".join(failures[:3]) + (f"; and {len(failures) - 3} more" if len(failures) > 3 else "")
        stderr = f"; its stderr ends: {last_stderr[-300:]}" if last_stderr else ""
        raise TargetError(
            "target",
            f"{self._target}: refused before the campaign: no seed gave SymCC test cases from a run "
            f"that ended cleanly ({shown}){stderr}",
        )

    def _symbolic(self, data: bytes) -> tuple[list[bytes], Outcome, dict[str, Any]]:
        """One SymCC run: the test cases it wrote, the run's outcome, notes."""
        work = self._workspace().fresh("run")
        try:
            output_dir = work / "output"
            output_dir.mkdir()
            input_path = work / "input"
            input_path.write_bytes(data)
            env = {**self._base_env, **self._run_env, "SYMCC_OUTPUT_DIR": str(output_dir)}
            if self._input_mode == "file":
                env["SYMCC_INPUT_FILE"] = str(input_path)
            ended = self._execute(data, work, input_path, env)
            candidates, counts = read_outputs(output_dir, self._max_output_bytes)
            stderr = tail(work / "stderr")
        finally:
            remove_tree(work)
        outcome = classify_exit(ended.returncode, ended.timed_out, stderr)
        notes: dict[str, Any] = {
            "returncode": ended.returncode,
            "timed_out": ended.timed_out,
            "run_seconds": round(ended.seconds, 6),
            # A run that was killed (timeout or signal) may have died inside a write.
            "partial_possible": ended.timed_out or ended.returncode < 0,
            **counts,
        }
        if self._twin is None:
            notes["coverage"] = NO_COVERAGE
        if not candidates:
            notes["nothing_written"] = self._why_nothing(ended, outcome, counts)
        if ended.returncode != 0 or ended.timed_out or not candidates:
            notes["stderr_tail"] = stderr
        return candidates, outcome, notes

    def _execute(self, data: bytes, work: Path, input_path: Path, env: dict[str, str]) -> Exit:
        """One run of the SymCC binary, announced to the sandbox."""
        self._check_unchanged()
        argv = [self._binary, *(arg.replace("@@", str(input_path)) for arg in self._args)]
        self.on_execution(data)
        try:
            return run_binary("target", argv, stdin=input_path, stderr=work / "stderr", env=env, cwd=work,
                              timeout_s=self._timeout_s, adopt=self._adopt)
        finally:
            self.on_execution(None)

    def _why_nothing(self, ended: Exit, outcome: Outcome, counts: dict[str, Any]) -> str:
        if "output_dir_error" in counts:
            return "the target removed or replaced its output directory"
        if any(value for key, value in counts.items() if key.startswith("skipped_")):
            return "every test case it wrote was skipped (see skipped_*)"
        if ended.timed_out:
            return f"timed out after {self._timeout_s:g} s before writing a test case"
        if outcome.is_finding:
            return f"{outcome.signature} before writing a test case"
        where = "stdin (does the target read it?)" if self._input_mode == "stdin" else \
            "the @@ file (does the target open exactly that path?)"
        return f"exit {ended.returncode} and no branch on its path depended on the symbolic input, {where}"

    def measure(self, data: bytes) -> Measurement:
        measured = self.measure_many([data])[0]
        assert measured is not None  # no budget: every input is measured
        return measured

    def measure_many(self, inputs: list[bytes], budget_s: float | None = None) -> list[Measurement | None]:
        if self._twin is None:
            return [Measurement(frozenset()) for _ in inputs]
        self._check_unchanged()
        return self._twin.measure_many([bytes(data) for data in inputs], budget_s, self._workspace(), self._adopt)

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.close()

    def _check_unchanged(self) -> None:
        """Refuse to run files replaced since the identity was taken (their SHA-256 is in it)."""
        for path, stamp in self._stamps.items():
            try:
                current = _stamp(path)
            except OSError:
                current = None
            if current != stamp:
                raise ProvenanceChanged(f"{path}: changed since its SHA-256 was taken into the work identity")


def _stamp(path_or_fd: str | int) -> tuple[int, ...]:
    info = os.stat(path_or_fd)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _runtime_env(value: Any) -> dict[str, str]:
    """``{"SYMCC_ENABLE_LINEARIZATION": "1"}`` updated with the checked ``env`` option."""
    if not isinstance(value, dict):
        raise PolicyError("executor_options.env", f"{value!r}: expected a mapping of SymCC runtime variables")
    env = {"SYMCC_ENABLE_LINEARIZATION": "1"}
    for name, setting in value.items():
        field = f"executor_options.env.{name}"
        check = RUNTIME_ENV.get(name)
        if check is None:
            raise PolicyError(field, f"not a SymCC runtime variable a campaign may set; allowed: {', '.join(RUNTIME_ENV)}")
        problem = "expected a string" if not isinstance(setting, str) else check(setting)
        if problem:
            raise PolicyError(field, f"{setting!r}: {problem}")
        env[name] = setting
    return dict(sorted(env.items()))


def _string_list(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyError(f"executor_options.{name}", f"{value!r}: expected a list of strings")
    return list(value)


def _input_mode(value: Any, args: list[str]) -> str:
    derived = "file" if any("@@" in arg for arg in args) else "stdin"
    if value is None:
        return derived
    if value not in ("stdin", "file"):
        raise PolicyError("executor_options.input_mode", f"{value!r}: expected 'stdin' or 'file'")
    if value != derived:
        why = "file mode needs @@ in args" if value == "file" else "stdin mode cannot have @@ in args"
        raise PolicyError(
            "executor_options.input_mode", f"{value!r}: {why} (the input file's path replaces @@)"
        )
    return value


def _number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise PolicyError(f"executor_options.{name}", f"{value!r}: expected a number in {low}..{high}")
    return float(value)


def _integer(name: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise PolicyError(f"executor_options.{name}", f"{value!r}: expected an integer in {low}..{high}")
    return value


def _seeds(value: Any) -> tuple[bytes, ...]:
    """Seeds from a list of hex strings, or from the regular files of a directory (by name)."""
    field = "executor_options.seeds"
    if value is None:
        return DEFAULT_SEEDS
    if isinstance(value, str):
        directory = Path(value)
        if not directory.is_dir():
            raise TargetError(field, f"{value}: not a directory")
        seeds = tuple(path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file())
        if not seeds:
            raise TargetError(field, f"{value}: no regular files to use as seeds")
        return seeds
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise PolicyError(field, f"{value!r}: expected a non-empty list of hex strings or a directory path")
    try:
        return tuple(bytes.fromhex(item) for item in value)
    except ValueError as exc:
        raise PolicyError(field, f"{value!r}: not hex ({exc})") from None
