"""The two contracts of a worker kind, over what both share about the target they run.

:class:`Executor` (``simulate``, ``concolic``, ``symcc``, ``native``: a campaign's analysis kind)
analyzes one input per lease: :meth:`Executor.run` expands a corpus object into candidate children, and
:meth:`Executor.seeds` gives the campaign its first inputs. :class:`Fuzzer` (``afl``, ``havoc``,
``simfuzz``: worker kinds beside it) is leased time slices instead (``core.slices``):
:meth:`Fuzzer.fuzz` returns what it kept during one, and :meth:`Fuzzer.offer` hands it what the
other workers found. Both are a :class:`Target`: they measure a candidate with
:meth:`Target.measure`, a separate concrete run that gives its coverage and its
:class:`~.outcome.Outcome` (anything but ``ok`` is a finding), reproduce a finding, and name
themselves by :meth:`Target.identity`. The master decides what is unique (by content) and novel
(adds an edge or a hit-count class). Neither touches the corpus, the WAL or MPI.

What a kind needs from the runtime is said by its class's capabilities (:class:`Target`'s and
:attr:`Fuzzer.keeps_running_between_slices`), which only the registry (``executors``) reads: a
kind whose target code runs in its process or is started from it (``hosted``: ``concolic``,
``havoc``, ``symcc``, ``afl``) is never called directly by the runtime: :mod:`.sandbox` hosts it
in a child process that the runtime restarts after a crash, and the engine reports each target
execution it starts through :attr:`Target.on_execution`, so the sandbox knows which input a
death belongs to.

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
    """What one :meth:`Executor.run` or :meth:`Fuzzer.fuzz` produced.

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
    # ids the run added to the campaign's record of tried branches (Executor.learn), once it was handed one
    tried: list[int] = field(default_factory=list)


def _ignore(data: bytes | None) -> None:
    return None


class Target(abc.ABC):
    """What an executor and a fuzzer share about the target they run: one instance per process,
    cheap to call many times."""

    name: ClassVar[str]
    target_kind: ClassVar[str]  # the targets it runs ("python", "binary", "simulated"): one campaign's kinds share it
    # Its target code runs in this process or is started from it: the runtime hosts it in the sandbox child.
    hosted: ClassVar[bool] = False
    measures_in_batches: ClassVar[bool] = False  # measure_many is one batch (its targets run in processes of their own)
    # The sandbox child is a child subreaper (sandbox.reaper): processes its targets leave behind, also
    # those in other sessions, become its children. True: it kills them after each binary it ran (its
    # targets are processes); False: the child kills them after each target execution.
    reaps_own_orphans: ClassVar[bool] = False
    uses_dictionary: ClassVar[bool] = False  # uses the shared option ``dictionary`` (executors.dictionary)
    on_execution = staticmethod(_ignore)  # called with the input before each target execution, None after
    scratch_dir: Path | None = None  # where executions may write files (the runtime's, under the state dir)

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """JSON-able description that becomes part of every work identity.

        Must change whenever the meaning of a run changes (target code digest, binary SHA-256,
        executor version, search parameters).
        """

    @abc.abstractmethod
    def measure(self, data: bytes) -> Measurement:
        """Coverage ids (see module docstring) and outcome of one concrete run of ``data``."""

    def preflight(self, seeds: list[bytes] | None = None) -> dict[str, Any]:
        """Before a campaign: raise TargetError when the target cannot do its work at all (e.g. it
        fails on every seed of ``seeds``, by default its own); otherwise a JSON-able summary. Most
        kinds have nothing to check."""
        return {}

    def reproduce(self, data: bytes) -> Outcome:
        """The outcome of executing ``data`` again, as a finding would be (``symcc-ulfm replay``)."""
        return self.measure(data).outcome

    def reproduce_report(self, data: bytes) -> tuple[Outcome, str]:
        """:meth:`reproduce` and what a person triaging it reads: the traceback of a Python
        exception, a binary's stderr (a sanitizer report), a dead child's stack; "" when none."""
        return self.reproduce(data), ""

    def renew(self) -> None:  # noqa: B027 - optional hook: only kinds that keep a process have one to renew
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
        """How long one :meth:`Executor.run` may take in all; for a :meth:`Fuzzer.fuzz`, beyond the
        slice's own seconds."""
        return 60.0

    def close(self) -> None:  # noqa: B027 - optional hook, most kinds hold nothing
        """Release resources (temporary directories, subprocesses)."""


class Executor(Target):
    """An analysis kind: one lease analyzes one input of the corpus."""

    @abc.abstractmethod
    def seeds(self) -> list[bytes]:
        """Initial inputs of the campaign (published into the corpus at generation 0)."""

    @abc.abstractmethod
    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        """Expand one input into candidate children (bounded in time by the executor's options).

        ``hint`` is what an earlier run returned for this input in ``RunResult.hints``, if any;
        an executor must treat it as untrusted input and validate it. A hybrid executor
        (``concolic``) executes mutants of its input inside ``run``; ``mutate`` False asks it not
        to (the sandbox reruns a run without them when a mutant ended the process).
        """

    def learn(self, tried: list[int]) -> None:  # noqa: B027 - optional hook: only kinds that keep a branch record
        """Ids of the campaign's record of tried branches (``core.master.branches``) this process
        has not been handed yet, as the master merged them; handed before a run in edge order
        (``policy.concolic_order``), even when there are none. A kind that keeps such a record
        (``concolic``; ``symcc`` with a map file of its own) prunes by it from the first call on:
        its runs do not try what is in it, and each run reports in :attr:`RunResult.tried` the ids
        it added (what it tried, and for ``concolic`` the directions its path took). Others ignore it."""


class Fuzzer(Target):
    """A fuzzer kind: one lease is a time slice (``core.slices``), not an input; the fuzzer runs
    on across slices and returns what it kept during each."""

    # Its processes go on fuzzing between its slices (afl-fuzz): an analysis worker lent to it
    # (core.policy ``idle``) closes it before it analyzes again (runtime.rank_state.pause_lent).
    keeps_running_between_slices: ClassVar[bool] = False
    # Each instance of the campaign runs settings of its own, by its position among them
    # (core.afl_diversity): the runtime gives it its own option ``position``, [index, count].
    varies_by_position: ClassVar[bool] = False

    @abc.abstractmethod
    def fuzz(self, descriptor: dict[str, Any]) -> RunResult:
        """Fuzz for one slice: its ``seconds`` more; what it kept meanwhile (queue entries,
        crashes, hangs) as candidates and findings. ``descriptor`` is the lease's
        (``core.slices``); a fuzzer refuses anything else (TargetError)."""

    @abc.abstractmethod
    def offer(self, inputs: list[bytes]) -> None:
        """Inputs the other workers found, for the fuzzer to import (AFL++'s sync, a mutation pool)."""
