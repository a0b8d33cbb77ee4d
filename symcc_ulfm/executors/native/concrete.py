"""The ``native`` executor: the analysis kind of a binary campaign without SymCC, so that
``--executor native --worker-kinds afl:N`` is a campaign of AFL++ builds alone, run by the same
masters, WAL, group commit and recovery as a hybrid one (fault-tolerant, multi-master,
effectively-once, sealed).

The search is the ``afl`` workers' (``executors.fuzzers.afl``); this executor is what the campaign
needs of its analysis kind beside them, on the builds of the target it is given:

- ``target`` is the build it runs concretely: the sanitizer build when the campaign has one
  (``sanitizer_binary``: ``target`` must be that file), else the AFL build (``afl_binary``:
  ``target`` must be that file), so that its outcomes are those every other kind measures;
  without an ``afl_binary`` any executable build, and no coverage;
- :meth:`~NativeExecutor.run` is one concrete run of ``target`` on the input and gives no
  candidates: the input's outcome (:func:`..binary.runs.classify_exit`: a signal or a sanitizer
  report is a ``crash``, the time limit a ``hang``, an exit status alone is ``ok``) and, when it
  is not ``ok``, the finding. A worker slot of this kind (``--worker-kinds afl:1,native:1``)
  checks each input the fuzzers found on the sanitizer build; an analysis worker with nothing
  to analyze is lent to the fuzzers (``--idle fuzz``);
- :meth:`~NativeExecutor.measure_many` is the AFL twin's coverage (``afl-showmap``,
  :mod:`..binary.afl_coverage`), a failing input's outcome from a direct run of ``target``;
- :meth:`~NativeExecutor.seeds` are the options' seeds (``launch --seeds``, the harness's);
- :meth:`~NativeExecutor.reproduce_report` (``replay``, ``minimize``, ``findings --confirm``)
  is a run of ``target``: its stderr, a sanitizer's report, is what a person triaging reads;
- :meth:`~NativeExecutor.preflight` runs the seeds on ``target`` and refuses (TargetError) a
  build that fails on every one of them.

Every file it runs is pinned by SHA-256 in its identity (:mod:`..binary.pinned`), and runs
happen as the symcc executor's do (:func:`..binary.runs.run_binary`: a session and process group
of their own, the time limit, and, hosted in the sandbox child that is a child subreaper for it,
every process a run left behind killed). The SymCC options (``env``, ``max_output_bytes``) are
refused: nothing here runs SymCC.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ...errors import PolicyError, TargetError
from ..base import Executor, Finding, Measurement, RunResult
from ..binary.afl_coverage import JUDGE_FIELD, twin_of
from ..binary.options import parse_options
from ..binary.pinned import Pinned
from ..binary.runs import Scratch, clean_env, remove_tree, run_input
from ..outcome import Outcome
from ..sandbox.reaper import is_subreaper

VERSION = 1
PREFLIGHT_SEEDS = 16  # seeds tried by preflight() before the target is refused
RUN_SLACK_S = 2.0  # one run's input file and directory, beyond its time limit
SYMCC_ONLY = ("env", "max_output_bytes")


class NativeExecutor(Executor):
    """Runs ``target``, a build of a binary target; options as in :data:`..binary.options.DEFAULTS`
    but those of SymCC."""

    name = "native"
    target_kind = "binary"
    hosted = True  # in the sandbox child, like the symcc executor
    measures_in_batches = True  # one afl-showmap per chunk
    reaps_own_orphans = True

    def __init__(self, target: str | None, options: dict[str, Any]):
        for name in SYMCC_ONLY:
            if name in options:
                raise PolicyError(f"executor_options.{name}", "an option of SymCC runs; the native executor runs none")
        o = parse_options(options)
        if not target:
            raise TargetError("target", "the native executor needs the path of a build to run: the sanitizer "
                                        "build, else the AFL build (launch --harness DIR names them)")
        self._target = target
        self._args, self._input_mode, self._seeds = o.args, o.input_mode, o.seeds
        self._timeout_s, self._measure_timeout_s = o.timeout_s, o.measure_timeout_s
        _check_consistent(target, o.sanitizer_binary, o.afl_binary)
        self._pinned = Pinned()
        self._binary, self._binary_sha256, _ = self._pinned.pin("target", target)
        self._twin, self._coverage_identity = twin_of(o, self._pinned, judge=self._binary)
        self._env = clean_env()
        self._scratch: Scratch | None = None  # made at the first run: the runtime sets scratch_dir after __init__
        self._adopt = is_subreaper()  # leftovers outside a run's process group: only a subreaper finds them

    def identity(self) -> dict[str, Any]:
        return {"executor": self.name, "version": VERSION, "target": self._target,
                "target_sha256": self._binary_sha256, "args": list(self._args), "input_mode": self._input_mode,
                "timeout_s": self._timeout_s, "measure_timeout_s": self._measure_timeout_s,
                "coverage": dict(self._coverage_identity)}

    def seeds(self) -> list[bytes]:
        return list(self._seeds)

    @property
    def execution_limit_s(self) -> float:
        return self._timeout_s

    @property
    def run_limit_s(self) -> float:
        return self._timeout_s + RUN_SLACK_S

    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        """One concrete run of ``target``: no candidates; the input's finding when it is not ``ok``."""
        started = time.monotonic()
        outcome = self.reproduce(data)
        findings = [Finding(outcome, bytes(data))] if outcome.is_finding else []
        return RunResult(candidates=[], executions=1, seconds=time.monotonic() - started,
                         notes={"outcome": outcome.kind}, findings=findings)

    def reproduce(self, data: bytes) -> Outcome:
        return self.reproduce_report(data)[0]

    def reproduce_report(self, data: bytes) -> tuple[Outcome, str]:
        """A run of ``target`` on ``data``: its outcome and the tail of its stderr."""
        work = self._workspace().fresh("run")
        try:
            input_path = work / "input"
            input_path.write_bytes(data)
            self._pinned.check()
            self.on_execution(data)
            try:
                return run_input("target", self._binary, self._args, input_path, work, "stderr", env=self._env,
                                 timeout_s=self._timeout_s, adopt=self._adopt)
            finally:
                self.on_execution(None)
        finally:
            remove_tree(work)

    def preflight(self, seeds: list[bytes] | None = None) -> dict[str, Any]:
        """Run ``target`` on the seeds (``seeds``, else the executor's own; at most
        :data:`PREFLIGHT_SEEDS`): how many ended ``ok``; TargetError (exit 2) naming each seed's
        failure when none did."""
        tried = (self._seeds if seeds is None else seeds)[:PREFLIGHT_SEEDS]
        failures = []
        for index, seed in enumerate(tried):
            outcome, stderr = self.reproduce_report(seed)
            if outcome.is_finding:
                failures.append((f"seed {index} ({len(seed)} bytes): {outcome.kind}: {outcome.signature}", stderr))
        if len(failures) < len(tried):
            return {"seeds": len(tried), "ok": len(tried) - len(failures)}
        shown = "; ".join(why for why, _ in failures[:3]) + (f"; and {len(failures) - 3} more" if len(failures) > 3
                                                              else "")
        last = failures[-1][1].strip()[-300:] if failures else ""
        raise TargetError("target", f"{self._target}: refused before the campaign: no seed ends cleanly ({shown})"
                                    + (f"; its stderr ends: {last}" if last else ""))

    def measure(self, data: bytes) -> Measurement:
        """The AFL twin's coverage (a failing input's outcome from ``target``); without a twin, no
        coverage and the outcome of a run of ``target``."""
        if self._twin is None:
            return Measurement(frozenset(), self.reproduce(data))
        measured = self.measure_many([data])[0]
        assert measured is not None  # no budget: every input is measured
        return measured

    def measure_many(self, inputs: list[bytes], budget_s: float | None = None) -> list[Measurement | None]:
        if self._twin is None:
            return super().measure_many(inputs, budget_s)
        self._pinned.check()
        return self._twin.measure_many([bytes(data) for data in inputs], budget_s, self._workspace(), self._adopt)

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.close()

    def _workspace(self) -> Scratch:
        """This executor's directory under ``scratch_dir`` (the runtime's per-worker directory
        under the state dir, else the system temp dir), made on first use."""
        if self._scratch is None:
            self._scratch = Scratch(Path(self.scratch_dir or tempfile.gettempdir()))
        return self._scratch


def _check_consistent(target: str, sanitizer: Any, afl: Any) -> None:
    """``target`` must be the build every kind takes a failing input's outcome from: the sanitizer
    build when there is one, else the AFL build (PolicyError naming both otherwise)."""
    same = os.path.abspath(target)
    if isinstance(sanitizer, str) and sanitizer:
        if os.path.abspath(sanitizer) != same:
            raise PolicyError("target", f"{target} is not the sanitizer build {sanitizer} ({JUDGE_FIELD}): the native "
                                        "executor runs the build every kind takes a failing input's outcome from")
    elif isinstance(afl, str) and afl and os.path.abspath(afl) != same:
        raise PolicyError("target", f"{target} is not the AFL build {afl}: give it as {JUDGE_FIELD} too, so that the "
                                    "afl workers take a failing input's outcome from it as this executor does")
