"""The ``symcc`` executor: drive a real SymCC-compiled binary the way SymCC expects.

One :meth:`SymccExecutor.run` is one concolic execution of the binary on one input:

- a fresh, existing, empty ``SYMCC_OUTPUT_DIR`` per run (SymCC exits with status 255 when the
  directory does not exist), ``SYMCC_ENABLE_LINEARIZATION=0`` unless ``env`` says otherwise;
- the input on stdin, or (``@@`` in ``args``) in a file whose path replaces ``@@`` and is also
  exported as ``SYMCC_INPUT_FILE``, because SymCC only treats reads of the file named there as
  symbolic;
- every inherited ``SYMCC_*`` (and ``AFL_*``) variable is dropped first, so the run means exactly
  what :meth:`~SymccExecutor.identity` says (a stray ``SYMCC_INPUT_FILE`` would make stdin
  concrete); the only SymCC runtime variables a campaign may set are those of
  :data:`..binary.options.RUNTIME_ENV`, through the ``env`` option;
- every test case SymCC wrote is a candidate, in the order it wrote them: QSYM names them
  ``000000``, ``000001``, ... and ``NNNNNN-optimistic`` when it could only solve the negated
  branch alone (the path constraint was unsatisfiable; such inputs often reach new code anyway),
  counted as ``outputs_plain`` and ``outputs_optimistic``. SymCC writes them in place, so a
  killed run can leave a partial last file: it is read as it is (any byte string is a valid
  input; the master deduplicates by content). Entries are opened with ``O_NOFOLLOW`` and must be
  regular files; symlinks, FIFOs, directories, unreadable and oversized entries are skipped and
  counted in the notes.

The binary runs as a direct child of the executor's process (:func:`..binary.runs.run_binary`): its
own process group, the time limit enforced there, and every process it left behind killed once
it is done. The runtime hosts this executor in the sandbox child (``hosted``), which
makes itself a child subreaper for it (``reaps_own_orphans``), so that also daemons and AFL's fork
server (both call ``setsid()``) are found and killed; the sandbox is told of each execution
(:attr:`~..base.Target.on_execution`).

Outcomes (:func:`..binary.runs.classify_exit`): a signal or a sanitizer report is a ``crash``, the
time limit a ``hang``, an exit status alone is ``ok`` (parsers exit non-zero on inputs they
reject). A SymCC run that is not ``ok`` is confirmed by :meth:`~SymccExecutor.reproduce`, a
concrete run of the same binary (``SYMCC_NO_SYMBOLIC_INPUT=1``: the runtime does no symbolic
work), and only a confirmed outcome makes the input a finding: a run that timed out because the
solver was slow, or a crash inside SymCC's runtime, is not a bug of the target. With a
sanitizer build (``sanitizer_binary``) the confirmation is a run of it instead, as every
measurement of a failing input is (:mod:`..binary.afl_coverage`): a finding's signature is its
report.

Before a campaign, :meth:`~SymccExecutor.preflight` runs SymCC on the seeds until one run ends
cleanly with test cases; a target that never does (nothing symbolic reaches a branch, it crashes
or hangs on every seed, the runtime refuses to start) is refused with a TargetError naming why.
A binary that is not SymCC-instrumented is refused when the executor is built
(:mod:`.target`).

The campaign's record of tried branches (edge order, ``core.master.branches``) is QSYM's: the bits of
its coverage map file (:data:`MAP_BYTES`: the trace map, then the context map, as qsym's
``AflTraceMap`` reads and commits them; a bit's id is its byte offset times 8 plus its place, least
significant first). With a map of its own (``SYMCC_AFL_COVERAGE_MAP`` a plain file name) the executor
keeps the record it was handed (:meth:`~SymccExecutor.learn`), writes it into the map before each run
(what its own runs set is in it), and reports the bits the run set that it did not hold. The map is
QSYM's runtime's, in the target's process: a hostile target can set bits, which only steers which
branches others negate. A map shared by several workers (an absolute path) is not written: QSYM
rewrites it unlocked, and other processes' bits would be reported as this run's.

Coverage comes from an optional AFL-instrumented twin of the target measured in batches
(:mod:`..binary.afl_coverage`). Without a twin there is no coverage: :meth:`~SymccExecutor.measure`
returns an empty set and the identity and notes say "no coverage: content dedup only".
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ...errors import TargetError
from ..base import Executor, Finding, Measurement, RunResult
from ..binary.afl_coverage import JUDGE_FIELD, NO_COVERAGE, twin_of
from ..binary.options import parse_options
from ..binary.pinned import Pinned
from ..binary.runs import (
    REPORT_BYTES,
    STDERR_TAIL_BYTES,
    Exit,
    Scratch,
    classify_exit,
    clean_env,
    read_outputs,
    remove_tree,
    run_binary,
    run_input,
    tail,
)
from ..outcome import Outcome
from ..sandbox.reaper import is_subreaper
from .target import symcc_runtime

VERSION = 2
PREFLIGHT_SEEDS = 16  # seeds tried by preflight() before the target is refused
MAP_BYTES = 2 * 65536  # QSYM's coverage map file: its trace map, then its context map


class SymccExecutor(Executor):
    """Runs ``target``, a SymCC-compiled binary; options as in :data:`..binary.options.DEFAULTS`."""

    name = "symcc"
    target_kind = "binary"
    hosted = True  # in the sandbox child: no Python process per run
    measures_in_batches = True  # one afl-showmap per chunk
    reaps_own_orphans = True  # the sandbox child becomes a child subreaper for it

    def __init__(self, target: str | None, options: dict[str, Any]):
        o = parse_options(options)
        self._args, self._input_mode, self._timeout_s = o.args, o.input_mode, o.timeout_s
        self._measure_timeout_s, self._max_output_bytes = o.measure_timeout_s, o.max_output_bytes
        self._env, self._seeds = o.env, o.seeds
        if not target:
            raise TargetError("target", "the symcc executor needs the path of a SymCC-compiled binary")
        self._target = target
        self._base_env = clean_env()
        self._pinned = Pinned()
        self._binary, self._binary_sha256, binary_data = self._pinned.pin("target", target)
        runtime = symcc_runtime(self._binary, binary_data, self._base_env)
        self._runtime, self._runtime_sha256, _ = self._pinned.pin("target", runtime, executable=False)
        self._sanitizer: str | None = None  # the build that reproduces a finding (sanitizer_binary), if any
        self._sanitizer_identity: dict[str, Any] = {}
        if o.sanitizer_binary is not None:
            self._sanitizer, sanitizer_sha256, _ = self._pinned.pin(JUDGE_FIELD, o.sanitizer_binary)
            self._sanitizer_identity = {"sanitizer_binary": o.sanitizer_binary, "sanitizer_sha256": sanitizer_sha256}
        self._twin, self._coverage_identity = twin_of(o, self._pinned, judge=self._sanitizer)
        self._scratch: Scratch | None = None  # made at the first run: the runtime sets scratch_dir after __init__
        self._map = self._env.get("SYMCC_AFL_COVERAGE_MAP")
        self._run_env = dict(self._env)
        self._bits: bytearray | None = None  # the campaign's record of tried branches, once handed one (learn)
        # Leftovers outside a run's process group can only be found by a child subreaper.
        self._adopt = is_subreaper()

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
            **self._sanitizer_identity,
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

    def learn(self, tried: list[int]) -> None:
        """Bits of QSYM's map (module docstring) to hold in this worker's map file; ignored without
        a map of its own."""
        if self._map is None or os.path.isabs(self._map):
            return
        if self._bits is None:
            self._bits = bytearray(MAP_BYTES)
        for bit in tried:
            if bit < 8 * MAP_BYTES:
                self._bits[bit >> 3] |= 1 << (bit & 7)

    def _map_file(self) -> Path:
        return Path(self._run_env["SYMCC_AFL_COVERAGE_MAP"])

    def _write_map(self) -> None:
        """The record into the map file, before a run (never through a link)."""
        fd = os.open(self._map_file(), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(self._bits)

    def _bits_set(self) -> list[int]:
        """The bits the run set in the map file that the record did not hold (now held); none when
        the file is not a whole map."""
        try:
            fd = os.open(self._map_file(), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return []
        with os.fdopen(fd, "rb") as source:
            written = source.read(MAP_BYTES + 1)
        if len(written) != MAP_BYTES:
            return []
        held, run = int.from_bytes(self._bits, "little"), int.from_bytes(written, "little")
        new = (run & ~held).to_bytes(MAP_BYTES, "little")
        self._bits = bytearray((held | run).to_bytes(MAP_BYTES, "little"))
        return [8 * offset + place for offset, byte in enumerate(new) if byte for place in range(8) if byte >> place & 1]

    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        started = time.monotonic()
        if self._bits is not None:
            self._workspace()
            self._write_map()
        candidates, outcome, notes = self._symbolic(bytes(data))
        tried = self._bits_set() if self._bits is not None else []
        findings = []
        if outcome.is_finding:
            confirmed = self.reproduce(data)
            notes["confirmed"] = confirmed.kind
            if confirmed.is_finding:
                findings.append(Finding(confirmed, bytes(data)))
        if self._twin is not None and self._twin.map_size:
            notes["map_size"] = self._twin.map_size  # known once the twin measured an input
        return RunResult(candidates=candidates, executions=1 + outcome.is_finding,
                         seconds=time.monotonic() - started, notes=notes, findings=findings, tried=tried)

    def reproduce(self, data: bytes) -> Outcome:
        """The outcome of a concrete run of the binary on ``data`` (no symbolic input, no solving)."""
        return self.reproduce_report(data)[0]

    def reproduce_report(self, data: bytes) -> tuple[Outcome, str]:
        """:meth:`reproduce` and the tail of the run's stderr (a sanitizer's report is there): a run
        of the sanitizer build when there is one, else of the SymCC binary."""
        work = self._workspace().fresh("reproduce")
        try:
            input_path = work / "input"
            input_path.write_bytes(data)
            if self._sanitizer is not None:
                self._pinned.check()
                self.on_execution(data)
                try:
                    return run_input(JUDGE_FIELD, self._sanitizer, self._args, input_path,
                                     work, "stderr", env=self._base_env, timeout_s=self._timeout_s, adopt=self._adopt)
                finally:
                    self.on_execution(None)
            ended = self._execute(data, work, input_path, {**self._base_env, "SYMCC_NO_SYMBOLIC_INPUT": "1"})
            stderr = tail(work / "stderr", REPORT_BYTES)
            return classify_exit(ended.returncode, ended.timed_out, stderr), stderr
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
            stderr = tail(work / "stderr", REPORT_BYTES)
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
            notes["stderr_tail"] = stderr[-STDERR_TAIL_BYTES:]
        return candidates, outcome, notes

    def _execute(self, data: bytes, work: Path, input_path: Path, env: dict[str, str]) -> Exit:
        """One run of the SymCC binary, announced to the sandbox."""
        self._pinned.check()
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
        self._pinned.check()
        return self._twin.measure_many([bytes(data) for data in inputs], budget_s, self._workspace(), self._adopt)

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.close()
