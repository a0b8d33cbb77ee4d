"""Coverage and outcomes of concrete runs on a binary target (``executors.symcc.adapter``,
``executors.native.concrete``, ``executors.fuzzers.afl``): an AFL-instrumented twin of the target (same source, built with
``afl-cc``) under AFL++'s ``afl-showmap``.

A chunk of inputs is measured by one ``afl-showmap -q -Z -b -t MS -i IN_DIR -o OUT_DIR -- TWIN
ARGS`` (one fork server for the chunk). What AFL++ 4.04c does there (``afl-showmap.c``):

- every non-empty regular file of ``IN_DIR``, in ``alphasort`` order (our names are the zero-padded
  index), runs once; ``@@`` in ARGS becomes a file of its own in the working directory, stdin
  otherwise; **empty files are skipped** (no map at all);
- ``OUT_DIR/NAME`` gets that run's map: with ``-b`` the whole trace map, one byte per map index,
  classified into AFL's binary hit-count classes (below);
- ``-Z`` (afl-cmin's mode, undocumented but what ``afl-cmin`` itself runs) writes an **empty**
  file instead when the run crashed (a signal) or timed out (``-t``); without ``-Z`` crashes and
  timeouts get ordinary maps and nothing tells them apart from clean runs;
- the exit status says nothing about the chunk (it describes the last input only);
- ``-C`` (collect coverage) writes only the union of the chunk's edges to ``-o`` (a file), nothing
  per input: it is what the benchmark uses to count a corpus's edges, not what a worker needs.

So a non-empty map is an ``ok`` run with its coverage. An empty map (crash or timeout) and an
empty input are measured alone: ``afl-showmap -q -b -o MAP`` (without ``-Z`` it keeps the map of
a crashing or timed-out run) for the coverage, and the twin run directly, under the same time
limit, for the outcome (:func:`.runs.classify_exit`: the signal's name, a sanitizer's
``SUMMARY`` line, or a hang), which afl-showmap cannot give: its messages name no signal with
``-q``, its exit status is the last run's only, and with ``-Z`` a crash and a hang look the same.
A twin that behaves differently when run directly (nondeterminism, a run close to the limit) gets
the direct run's outcome. Given a sanitizer build (``sanitizer_binary``), the direct run is of
that build instead: its report is the finding's signature, whichever kind measured the input. Inputs the time budget left unmeasured are ``None``; the results are a
prefix (everything after the first ``None`` is ``None``), as the sandbox reports them.

A ``confined`` twin (the ``afl`` worker kind's) runs, afl-showmap with it, under
:mod:`..sandbox.landlock`: it may write only beneath the run's own directory and ``/dev``.

Map bytes: AFL's binary hit-count class is a single set bit: 1, 2, 4, 8, 16, 32, 64, 128 for hit
counts 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+ (``count_class_binary``). Bit ``k`` is exactly
bucket ``k`` of :data:`~symcc_ulfm.executors.base.HIT_CLASS_BOUNDS`, so the coverage id is
``coverage_id(edge, HIT_CLASS_BOUNDS[k]) == edge * 8 + k``. AFL counters are 8 bits (AFL++ skips
zero on wrap-around), so 128+ is the top class.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from ...core.coverage import HIT_CLASS_BOUNDS, coverage_id
from ...errors import TargetError
from ..base import Measurement
from .options import SymccOptions
from .pinned import Pinned
from .runs import Scratch, clean_env, run_binary, run_input, tail

AFL_SHM_MARKER = b"__AFL_SHM_ID"  # what afl-fuzz looks for to call a binary instrumented
FIELD = "executor_options.afl_binary"
JUDGE_FIELD = "executor_options.sanitizer_binary"
STARTUP_S = 10.0  # afl-showmap's own start and its fork server's, beyond the runs' time limits
PER_RUN_SLACK_S = 0.05  # a fork-server round trip and the map write, per input
TERM_GRACE_S = 2.0  # SIGTERM lets afl-showmap remove its shared memory before SIGKILL
DEVNULL = Path(os.devnull)
NO_COVERAGE = "no coverage: content dedup only"


def coverage_from_afl_map(bitmap: bytes) -> frozenset[int]:
    """Coverage ids of an ``afl-showmap -b`` map (see the module docstring for the format)."""
    ids = set()
    for edge, value in enumerate(bitmap):
        if value:
            if value & (value - 1):
                raise ValueError(f"map entry {edge} is {value:#04x}, not an AFL binary hit class")
            ids.add(coverage_id(edge, HIT_CLASS_BOUNDS[value.bit_length() - 1]))
    return frozenset(ids)


def which_showmap() -> str:
    found = shutil.which("afl-showmap")
    if found is None:
        raise TargetError(
            "executor_options.afl_showmap",
            "afl-showmap not on PATH: install AFL++ (apt-get install afl++) or set afl_showmap",
        )
    return found


def check_instrumented(path: str, data: bytes) -> None:
    if AFL_SHM_MARKER not in data:
        raise TargetError(FIELD, f"{path}: not AFL-instrumented (build it with afl-cc)")


def twin_of(options: SymccOptions, pinned: Pinned, judge: str | None) -> tuple[AflTwin | None, dict[str, Any]]:
    """The AFL twin of an executor's options (its files pinned in ``pinned``; a failing input's
    outcome from ``judge`` when given) and the coverage part of the executor's identity; None
    and :data:`NO_COVERAGE` without an ``afl_binary``."""
    if options.afl_binary is None:
        return None, {"kind": "none", "note": NO_COVERAGE}
    binary, binary_sha256, data = pinned.pin(FIELD, options.afl_binary)
    check_instrumented(options.afl_binary, data)
    showmap, showmap_sha256, _ = pinned.pin("executor_options.afl_showmap", options.afl_showmap or which_showmap())
    identity = {"kind": "afl-showmap -Z -b", "afl_binary": options.afl_binary, "afl_binary_sha256": binary_sha256,
                "afl_showmap_sha256": showmap_sha256}
    return AflTwin(binary, showmap, options.args, options.measure_timeout_s, judge=judge), identity


class AflTwin:
    """Measures inputs on ``binary`` (``args`` may hold ``@@``) with ``showmap``, ``timeout_s`` per run;
    the outcome of an input that crashed or hung there is that of a direct run of ``judge`` (the
    sanitizer build, ``sanitizer_binary``), else of ``binary``."""

    def __init__(self, binary: str, showmap: str, args: list[str], timeout_s: float, confined: bool = False,
                 judge: str | None = None):
        self.binary = binary
        self.judge = judge  # the build whose direct run gives a failing input's outcome (default: the twin)
        self.showmap = showmap
        self.args = args
        self.timeout_s = timeout_s
        self.timeout_ms = max(1, round(timeout_s * 1000))
        self.confined = confined
        self.map_size: int | None = None  # the length of afl-showmap's maps (the map's indices), once it wrote one

    def measure_many(self, inputs: list[bytes], budget_s: float | None, scratch: Scratch,
                     adopt: bool, spare: frozenset[int] = frozenset()) -> list[Measurement | None]:
        """Each input's coverage (and outcome when it crashed or hung); ``adopt`` and ``spare`` as
        :func:`.runs.run_binary` takes them."""
        until = None if budget_s is None else time.monotonic() + budget_s
        results: list[Measurement | None] = [None] * len(inputs)
        alone = [index for index, data in enumerate(inputs) if not data]
        batch = [index for index, data in enumerate(inputs) if data]
        if batch and (until is None or time.monotonic() < until):
            for index, bitmap in self._batch(inputs, batch, scratch, adopt, until, spare).items():
                if bitmap:
                    self.map_size = len(bitmap)
                    results[index] = Measurement(coverage_from_afl_map(bitmap))
                else:
                    alone.append(index)  # crashed or timed out: measured again below
        for index in sorted(alone):
            if until is not None and time.monotonic() >= until:
                break
            results[index] = self._alone(inputs[index], scratch, adopt, spare)
        first_missing = next((i for i, r in enumerate(results) if r is None), len(results))
        return results[:first_missing] + [None] * (len(results) - first_missing)

    def _batch(self, inputs: list[bytes], batch: list[int], scratch: Scratch, adopt: bool,
               until: float | None, spare: frozenset[int]) -> dict[int, bytes]:
        """Index -> the map afl-showmap wrote for it (empty: crashed or timed out)."""
        work = scratch.fresh("coverage")
        in_dir, out_dir = work / "in", work / "out"
        in_dir.mkdir()
        for index in batch:
            (in_dir / f"{index:06d}").write_bytes(inputs[index])
        limit = STARTUP_S + len(batch) * (self.timeout_s + PER_RUN_SLACK_S)
        if until is not None:
            limit = min(limit, max(0.0, until - time.monotonic()))
        argv = [self.showmap, "-q", "-Z", "-b", "-t", str(self.timeout_ms), "-i", str(in_dir), "-o", str(out_dir),
                "--", self.binary, *self.args]
        ended = run_binary("executor_options.afl_showmap", argv, stdin=DEVNULL, stderr=work / "stderr",
                           env=clean_env(), cwd=work, timeout_s=limit, adopt=adopt, term_grace_s=TERM_GRACE_S,
                           spare=spare, writable=self._writable(work))
        if not ended.timed_out and ended.returncode not in (0, 1, 2):
            raise TargetError(FIELD, f"afl-showmap failed on a batch (exit {ended.returncode}): {tail(work / 'stderr')}")
        maps = {}
        for index in batch:
            path = out_dir / f"{index:06d}"
            if path.is_file():
                maps[index] = path.read_bytes()
        if ended.timed_out and maps:
            del maps[max(maps)]  # the map being written when afl-showmap was killed may be partial
        if not maps and not ended.timed_out:
            raise TargetError(FIELD, f"afl-showmap wrote no map (exit {ended.returncode}): {tail(work / 'stderr')}")
        return maps

    def _alone(self, data: bytes, scratch: Scratch, adopt: bool, spare: frozenset[int]) -> Measurement:
        """One input: its coverage from afl-showmap (crash and hang maps kept), its outcome from a
        direct run of the twin."""
        work = scratch.fresh("coverage-one")
        input_path, map_path = work / "input", work / "map"
        input_path.write_bytes(data)
        argv = [arg.replace("@@", str(input_path)) for arg in self.args]
        shown = run_binary("executor_options.afl_showmap",
                           [self.showmap, "-q", "-b", "-t", str(self.timeout_ms), "-o", str(map_path), "--",
                            self.binary, *argv],
                           stdin=input_path, stderr=work / "stderr", env=clean_env(), cwd=work,
                           timeout_s=STARTUP_S + self.timeout_s, adopt=adopt, term_grace_s=TERM_GRACE_S,
                           spare=spare, writable=self._writable(work))
        if not map_path.is_file():
            raise TargetError(FIELD, f"afl-showmap gave no map (exit {shown.returncode}, timed out: "
                                     f"{shown.timed_out}): {tail(work / 'stderr')}")
        coverage = coverage_from_afl_map(map_path.read_bytes())
        field, binary = (FIELD, self.binary) if self.judge is None else (JUDGE_FIELD, self.judge)
        outcome, _stderr = run_input(field, binary, self.args, input_path, work, "stderr-direct", env=clean_env(),
                                     timeout_s=self.timeout_s, adopt=adopt, spare=spare, writable=self._writable(work))
        return Measurement(coverage, outcome)

    def _writable(self, work: Path) -> list[Path] | None:
        return [work] if self.confined else None
