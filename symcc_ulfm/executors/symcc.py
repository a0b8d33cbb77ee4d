"""The ``symcc`` executor: drive a real SymCC-compiled binary the way SymCC expects.

One :meth:`SymccExecutor.run` is one concolic execution of the binary on one input:

- a fresh, existing, empty ``SYMCC_OUTPUT_DIR`` per run (SymCC exits with status 255 when the
  directory does not exist), ``SYMCC_ENABLE_LINEARIZATION=1``;
- the input on stdin, or (``@@`` in ``args``) in a file whose path replaces ``@@`` and is also
  exported as ``SYMCC_INPUT_FILE``, because SymCC only treats reads of the file named there as
  symbolic;
- every inherited ``SYMCC_*`` variable is dropped first, so the run means exactly what
  :meth:`~SymccExecutor.identity` says (a stray ``SYMCC_INPUT_FILE`` would make stdin concrete);
- the binary runs under :mod:`.symcc_reaper`: in its own process group, killed as a whole on
  timeout, and every process it left behind (forked, daemonized, or escaped the group like
  AFL's fork server) is killed once it is done, so no process outlives a run;
- the test cases SymCC wrote (``000000``, ``000001``, ... in numeric order) become the
  candidates. SymCC writes them in place, so a killed run can leave a partial last file: it is
  read as it is (any byte string is a valid input; the master deduplicates by content). Entries
  are opened with ``O_NOFOLLOW`` and must be regular files; symlinks, FIFOs, directories,
  unreadable and oversized entries are skipped and counted in the notes.

The outcome of a run is classified as every execution's is (:mod:`.outcome`): killed by a
signal or reporting a sanitizer error (AddressSanitizer's ``SUMMARY:`` line on stderr) is a
``crash``, the time limit is a ``hang``; such a run's input is a finding. The binary already
runs in processes of its own (below), so this executor is not hosted in the sandbox.

Coverage comes from an optional AFL-instrumented twin of the target (same source, built with
``afl-cc``) run under ``afl-showmap -q -b``. ``-b`` (undocumented in ``afl-showmap -h`` of AFL++
4.x, still accepted) writes the whole trace map, one byte per map index. The index is the edge;
the byte is AFL's binary hit-count class, a single set bit: 1, 2, 4, 8, 16, 32, 64, 128 for hit
counts 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+ (``count_class_binary`` in afl-showmap.c). Bit
``k`` is exactly bucket ``k`` of :data:`~symcc_ulfm.executors.base.HIT_CLASS_BOUNDS`, so the
coverage id is ``coverage_id(edge, HIT_CLASS_BOUNDS[k]) == edge * 8 + k``. AFL counters are
8 bits (AFL++ skips zero on wrap-around), so 128+ is the top class. Without a twin there is no
coverage: :meth:`~SymccExecutor.coverage` returns an empty set and the identity and notes say
"no coverage: content dedup only".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ..errors import PolicyError, ProvenanceChanged, TargetError
from .base import HIT_CLASS_BOUNDS, Executor, Finding, Measurement, RunResult, coverage_id
from .outcome import OK, Outcome, death, signal_name
from .symcc_io import clean_env, read_outputs, remove_tree, run_contained, tail

VERSION = 1
NO_COVERAGE = "no coverage: content dedup only"
DEFAULT_SEEDS = (bytes(16),)
DEFAULTS: dict[str, Any] = {
    "args": [],
    "input_mode": None,  # derived from args: "file" when an argument contains @@, else "stdin"
    "timeout_s": 30.0,
    "afl_binary": None,
    "afl_showmap": None,  # afl-showmap on PATH when afl_binary is set
    "seeds": None,  # DEFAULT_SEEDS: 16 zero bytes, all of them symbolic
    "max_output_bytes": 1024 * 1024,
}
AFL_SHM_MARKER = b"__AFL_SHM_ID"  # what afl-fuzz looks for to call a binary instrumented
# afl-showmap exits 0 (ran), 1 (could not run the target), 2 (the target crashed or timed out: AFL++
# 4.04c returns 2 for both, so the time the run took tells them apart).
SHOWMAP_EXITS = (0, 1, 2)


def classify_exit(returncode: int, timed_out: bool, stderr: str) -> Outcome:
    """The outcome of one run of a binary (its exit status and the tail of its stderr)."""
    if timed_out:
        return death("hang (killed after its time limit)", stderr, kind="hang")
    if returncode < 0:
        return death(signal_name(-returncode), stderr)
    return death(f"exit {returncode}", stderr) if "SUMMARY: " in stderr else OK


def coverage_from_afl_map(bitmap: bytes) -> frozenset[int]:
    """Coverage ids of an ``afl-showmap -b`` map (see the module docstring for the format)."""
    ids = set()
    for edge, value in enumerate(bitmap):
        if value:
            if value & (value - 1):
                raise ValueError(f"map entry {edge} is {value:#04x}, not an AFL binary hit class")
            ids.add(coverage_id(edge, HIT_CLASS_BOUNDS[value.bit_length() - 1]))
    return frozenset(ids)


class SymccExecutor(Executor):
    """Runs ``target``, a SymCC-compiled binary; options as in :data:`DEFAULTS`."""

    name = "symcc"

    def __init__(self, target: str | None, options: dict[str, Any]):
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise PolicyError(
                f"executor_options.{unknown[0]}", f"unknown option; known: {', '.join(sorted(DEFAULTS))}"
            )
        opts = {**DEFAULTS, **options}
        if not target:
            raise TargetError("target", "the symcc executor needs the path of a SymCC-compiled binary")
        self._target = target
        self._binary, self._binary_sha256, stamp = _executable("target", target)
        self._stamps = {self._binary: stamp}
        self._args = _string_list("args", opts["args"])
        self._input_mode = _input_mode(opts["input_mode"], self._args)
        self._timeout_s = _number("timeout_s", opts["timeout_s"], 0.01, 86400.0)
        self._max_output_bytes = _integer("max_output_bytes", opts["max_output_bytes"], 1, 256 * 1024 * 1024)
        self._coverage_identity: dict[str, Any] = {"kind": "none", "note": NO_COVERAGE}
        self._afl_binary = self._showmap = None
        if opts["afl_binary"] is not None:
            self._afl_binary, afl_sha256 = self._afl_twin(opts["afl_binary"])
            self._showmap, showmap_sha256, _ = _executable(
                "executor_options.afl_showmap", opts["afl_showmap"] or _which_showmap()
            )
            self._coverage_identity = {
                "kind": "afl-showmap -b",
                "afl_binary": opts["afl_binary"],
                "afl_binary_sha256": afl_sha256,
                "afl_showmap_sha256": showmap_sha256,
            }
        elif opts["afl_showmap"] is not None:
            raise PolicyError(
                "executor_options.afl_showmap", "only used with afl_binary (the AFL-instrumented twin)"
            )
        self._seeds = _seeds(opts["seeds"])

    def _afl_twin(self, path: Any) -> tuple[str, str]:
        binary, digest, stamp = _executable("executor_options.afl_binary", path)
        self._stamps[binary] = stamp
        if AFL_SHM_MARKER not in Path(binary).read_bytes():
            raise TargetError(
                "executor_options.afl_binary", f"{path}: not AFL-instrumented (build it with afl-cc)"
            )
        return binary, digest

    def identity(self) -> dict[str, Any]:
        return {
            "executor": self.name,
            "version": VERSION,
            "target": self._target,
            "target_sha256": self._binary_sha256,
            "args": list(self._args),
            "input_mode": self._input_mode,
            "env": {"SYMCC_ENABLE_LINEARIZATION": "1"},
            "timeout_s": self._timeout_s,
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
        return self._timeout_s

    def run(self, data: bytes, hint: dict[str, Any] | None = None) -> RunResult:
        started = time.monotonic()
        candidates, outcome, notes = self._symcc(data)
        findings = [Finding(outcome, bytes(data))] if outcome.is_finding else []
        return RunResult(candidates=candidates, seconds=time.monotonic() - started, notes=notes, findings=findings)

    def reproduce(self, data: bytes) -> Outcome:
        return self._symcc(data)[1]

    def _symcc(self, data: bytes) -> tuple[list[bytes], Outcome, dict[str, Any]]:
        """One SymCC run: the test cases it wrote, the run's outcome, notes."""
        self._check_unchanged()
        work = Path(tempfile.mkdtemp(prefix="symcc-ulfm-"))
        try:
            output_dir = work / "output"
            output_dir.mkdir()
            input_path = work / "input"
            input_path.write_bytes(data)
            env = clean_env()
            env["SYMCC_OUTPUT_DIR"] = str(output_dir)
            env["SYMCC_ENABLE_LINEARIZATION"] = "1"
            if self._input_mode == "file":
                env["SYMCC_INPUT_FILE"] = str(input_path)
            returncode, timed_out = run_contained(
                "target", [self._binary, *self._argv(input_path)], input_path, env, work, self._timeout_s
            )
            candidates, counts = read_outputs(output_dir, self._max_output_bytes)
            stderr = tail(work / "stderr")
            outcome = classify_exit(returncode, timed_out, stderr)
            notes: dict[str, Any] = {
                "returncode": returncode,
                "timed_out": timed_out,
                # A run that was killed (timeout or signal) may have died inside a write.
                "partial_possible": timed_out or returncode < 0,
                **counts,
            }
            if self._afl_binary is None:
                notes["coverage"] = NO_COVERAGE
            if returncode != 0:
                notes["stderr_tail"] = stderr
        finally:
            remove_tree(work)
        return candidates, outcome, notes

    def measure(self, data: bytes) -> Measurement:
        if self._afl_binary is None:
            return Measurement(frozenset())
        self._check_unchanged()
        work = Path(tempfile.mkdtemp(prefix="symcc-ulfm-cov-"))
        try:
            input_path = work / "input"
            input_path.write_bytes(data)
            map_path = work / "map"
            timeout_ms = max(10, int(self._timeout_s * 1000))
            argv = [self._showmap, "-q", "-b", "-o", str(map_path), "-t", str(timeout_ms), "--"]
            argv += [self._afl_binary, *self._argv(input_path)]
            # afl-showmap enforces -t itself; the outer bound also covers its fork-server start-up.
            started = time.monotonic()
            returncode, timed_out = run_contained(
                "executor_options.afl_showmap", argv, input_path, clean_env(), work, 2 * self._timeout_s + 15
            )
            if timed_out or returncode not in SHOWMAP_EXITS or not map_path.is_file():
                raise TargetError(
                    "executor_options.afl_binary",
                    f"afl-showmap gave no map (exit {returncode}, timed out: {timed_out}): {tail(work / 'stderr')}",
                )
            outcome = OK
            if returncode == 2 and time.monotonic() - started >= timeout_ms / 1000:
                outcome = Outcome("hang", "hang (the AFL twin timed out under afl-showmap)", "the AFL twin timed out")
            elif returncode == 2:
                outcome = Outcome("crash", "crash (the AFL twin crashed under afl-showmap)", "the AFL twin crashed")
            return Measurement(coverage_from_afl_map(map_path.read_bytes()), outcome)
        finally:
            remove_tree(work)

    def _argv(self, input_path: Path) -> list[str]:
        return [arg.replace("@@", str(input_path)) for arg in self._args]

    def _check_unchanged(self) -> None:
        """Refuse to run binaries replaced since the identity was taken (their SHA-256 is in it)."""
        for binary, stamp in self._stamps.items():
            if _stamp(binary) != stamp:
                raise ProvenanceChanged(
                    f"{binary}: changed since its SHA-256 was taken into the work identity"
                )


def _executable(field: str, path: Any) -> tuple[str, str, tuple[int, ...]]:
    """Absolute path, SHA-256 and stat stamp of an executable regular file, or TargetError."""
    if not isinstance(path, str) or not path:
        raise PolicyError(field, f"{path!r}: expected the path of an executable file")
    resolved = os.path.abspath(path)
    if not os.path.isfile(resolved):
        raise TargetError(field, f"{path}: no such file")
    if not os.access(resolved, os.X_OK):
        raise TargetError(field, f"{path}: not executable")
    digest = hashlib.sha256()
    with open(resolved, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return resolved, digest.hexdigest(), _stamp(resolved)


def _stamp(path: str) -> tuple[int, ...]:
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _which_showmap() -> str:
    found = shutil.which("afl-showmap")
    if found is None:
        raise TargetError(
            "executor_options.afl_showmap",
            "afl-showmap not on PATH: install AFL++ (apt-get install afl++) or set afl_showmap",
        )
    return found


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
