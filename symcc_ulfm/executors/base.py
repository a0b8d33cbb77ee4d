"""The executor contract shared by ``simulate``, ``concolic`` and ``symcc``.

A worker calls :meth:`Executor.run` on one input (a corpus object) and gets back candidate
children; it then measures each candidate with :meth:`Executor.measure`, a separate concrete
run that gives its coverage and its :class:`~.outcome.Outcome` (anything but ``ok`` is a
finding). The master decides what is unique (by content) and novel (adds an edge or a
hit-count class). Executors never touch the corpus, the WAL or MPI.

An executor whose target code runs in its own process (``in_process_target``: ``concolic``) is
never called directly by the runtime: :mod:`.sandbox` hosts it in a child process that the
runtime restarts after a crash, and the engine reports each target execution it starts through
:attr:`Executor.on_execution`, so the sandbox knows which input a death belongs to.

Coverage ids are ``core.coverage``'s (AFL-style edge and hit-count class). Beside the edges a
concrete run measures, an executor may say which *branch directions* a candidate was solved to
take (:attr:`RunResult.reaches`, ``core.coverage.branch_coverage``).
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .outcome import OK, Outcome


@dataclass(frozen=True)
class Measurement:
    """One concrete execution: coverage ids, outcome, and the return value when it is a short
    string (the built-in targets name the branch they reached that way)."""

    coverage: frozenset[int]
    outcome: Outcome = OK
    returned: str | None = None


@dataclass(frozen=True)
class Finding:
    """An execution whose outcome is not ``ok``, with the input that produced it."""

    outcome: Outcome
    data: bytes


@dataclass
class RunResult:
    """What one :meth:`Executor.run` produced.

    ``hints`` (optional, one per candidate) is small JSON-able search state that the candidate's
    own later run needs, such as the SAGE generation bound. It travels with the candidate through
    the manifest and the WORK message, because that run usually happens on another worker.
    """

    candidates: list[bytes]
    hints: list[dict[str, Any]] | None = None
    executions: int = 1
    solver_queries: int = 0
    solver_seconds: float = 0.0
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # per candidate (None: none), coverage ids it was built to reach beyond what measuring it sees
    reaches: list[list[int]] | None = None


def _ignore(data: bytes | None) -> None:
    return None


class Executor(abc.ABC):
    """One executor instance per process; cheap to call many times."""

    name: ClassVar[str]
    # the targets it runs ("python", "binary", "simulated"): the worker kinds of one campaign share it.
    # A fuzzer kind (``executors.is_fuzzer``) is given time slices, not inputs: ``run`` gets b"" and the
    # slice's descriptor as its hint (``core.slices``) and returns what it kept meanwhile.
    family: ClassVar[str]
    in_process_target: ClassVar[bool] = False  # runs target code in its own process: needs the sandbox
    batch_measure: ClassVar[bool] = False  # measure_many is one batch (its targets run in processes of their own)
    # The sandbox child is a child subreaper (sandbox.reaper): processes its targets leave behind, also
    # those in other sessions, become its children. True: the executor kills them after each binary it
    # ran (its targets are processes); False: the child kills them after each target execution.
    adopts_orphans: ClassVar[bool] = False
    takes_dictionary: ClassVar[bool] = False  # uses the shared option ``dictionary`` (executors.dictionary)
    # A fuzzer whose processes go on fuzzing between its slices (afl-fuzz): an analysis worker lent
    # to it (core.policy ``idle``) closes it before it analyzes again (runtime.rank_state.pause_lent).
    runs_between_slices: ClassVar[bool] = False
    on_execution = staticmethod(_ignore)  # called with the input before each target execution, None after
    scratch_dir: Path | None = None  # where executions may write files (the runtime's, under the state dir)
    # A hybrid executor (``concolic``) executes mutants of its input inside ``run``; False asks it not to
    # (the sandbox reruns a run without them when a mutant ended the process).
    mutate: bool = True

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """JSON-able description that becomes part of every work identity.

        Must change whenever the meaning of a run changes (target code digest, binary SHA-256,
        executor version, search parameters).
        """

    @abc.abstractmethod
    def seeds(self) -> list[bytes]:
        """Initial inputs of the campaign (published into the corpus at generation 0)."""

    @abc.abstractmethod
    def run(self, data: bytes, hint: dict[str, Any] | None = None) -> RunResult:
        """Expand one input into candidate children (bounded in time by the executor's options).

        ``hint`` is what an earlier run returned for this input in ``RunResult.hints``, if any;
        an executor must treat it as untrusted input and validate it.
        """

    @abc.abstractmethod
    def measure(self, data: bytes) -> Measurement:
        """Coverage ids (see module docstring) and outcome of one concrete run of ``data``."""

    def offer(self, inputs: list[bytes]) -> None:  # noqa: B027 - optional hook: only fuzzers take it
        """Inputs the other workers found: a fuzzer imports them (AFL++'s sync, a mutation pool);
        an executor that analyzes one input per lease has no use for them."""

    def preflight(self, seeds: list[bytes] | None = None) -> dict[str, Any]:
        """Before a campaign: raise TargetError when the target cannot do its work at all (e.g. it
        fails on every seed of ``seeds``, by default its own); otherwise a JSON-able summary. Most
        executors have nothing to check."""
        return {}

    def reproduce(self, data: bytes) -> Outcome:
        """The outcome of executing ``data`` again, as a finding would be (``symcc-ulfm replay``)."""
        return self.measure(data).outcome

    def reproduce_report(self, data: bytes) -> tuple[Outcome, str]:
        """:meth:`reproduce` and what a person triaging it reads: the traceback of a Python
        exception, a binary's stderr (a sanitizer report), a dead child's stack; "" when none."""
        return self.reproduce(data), ""

    def renew(self) -> None:  # noqa: B027 - optional hook: only executors that keep a process have one to renew
        """Run the next execution in a freshly started process (a new address-space layout, no
        state left by earlier executions): what repeated replays measure reproduction with."""

    def measure_many(self, inputs: list[bytes], budget_s: float | None = None) -> list[Measurement | None]:
        """:meth:`measure` of each input in order; those not started within ``budget_s`` are None."""
        until = None if budget_s is None else time.monotonic() + budget_s
        return [None if until is not None and time.monotonic() >= until else self.measure(d) for d in inputs]

    @property
    def execution_limit_s(self) -> float:
        """How long one target execution may take (the sandbox kills the target after this, plus grace)."""
        return 60.0

    @property
    def run_limit_s(self) -> float:
        """How long one :meth:`run` may take in all."""
        return 60.0

    def close(self) -> None:  # noqa: B027 - optional hook, most executors hold nothing
        """Release resources (temporary directories, subprocesses)."""
