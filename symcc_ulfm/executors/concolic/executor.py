"""The ``concolic`` executor: our own concolic engine for Python targets, on z3.

``run(data)`` executes the target once with a symbolic input (:mod:`.values.symbytes`), then expands
the recorded path with a generational search (:mod:`.search`). Children produced by optimistic
solving are re-executed and repaired when they leave the predicted path at an earlier branch
(the typical case: a checksum over bytes the child changed), see :func:`.search.repair_query`.
Every child's search state (its SAGE bound and predicted path signature) is returned as its
hint; when the child is run later with that hint, wherever that happens, the bound applies and
its actual path is compared with the prediction: ``notes["diverged"]`` reports the outcome.

After the symbolic part, a *hybrid* phase (:mod:`.hybrid.havoc`; options ``mutate_share``,
``mutations``, ``mutate_seed``, ``mutate_clock``) runs concretely, through the same path as
``measure``, first the input-to-state children of the run's text comparisons
(:func:`.expressions.path.text_compare`: the constant in place of the text it was compared with)
and of its callee arguments (:func:`.expressions.path.callee`: the words of an uninstrumented
module in place of the text its code was given), then those of its regex matches
(:func:`.hybrid.input_to_state.regex_pairs`) and prefixes of the input
(:func:`.hybrid.havoc.truncations`), then havoc mutants of the input and of its children, with the
words the symbolic run saw compared as a dictionary and the words of the target's own modules
(:mod:`.hybrid.module_words`) as a second one, and adds those that reach an edge new to this
process (``measure`` adds what it sees too) to the candidates. Findings among the mutants are
reported once per signature.

``measure(data)`` is a separate concrete run of the original (unshimmed) target under
:class:`.tracing.tracer.Tracer`: coverage and outcome (:mod:`.tracing.run_outcome`). Findings are
only ever taken from concrete runs: when the symbolic run of an input ends abnormally, the input
is measured concretely and a finding is reported only if the concrete run confirms one (a shim's
limit is not a bug of the target).
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any

from ...core.coverage import branch_coverage, edge_of
from ...targets import DEFAULT_TARGET, TargetInfo, rejections, resolve_target
from ..base import Executor, Finding, Measurement, RunResult, Target
from ..dictionary import tokens_of
from ..outcome import Outcome
from .engine_options import import_modules, parse_options
from .expressions import path as P
from .expressions.expr import MAX_LENGTH as E_MAX_LENGTH
from .expressions.z3conv import SAT, Converter, solve
from .hybrid import havoc, input_to_state
from .hybrid.module_words import module_words
from .search import Child, GenerationalSearch, QueryCache, child_from_hint, hint_of, repair_query, signature
from .tracing.run_outcome import Expected, classify
from .tracing.shadow import symbolic_twin
from .tracing.tracer import Tracer, execute
from .values.symbytes import SymBytes

ENGINE_VERSION = "1.1"
DEFAULT_SEED = bytes(16)
_MAX_SPLICE_PARTNERS = 32
_MIN_MUTATE_S = 0.01  # a fast symbolic run still gives its mutants this long
_MIN_MUTANTS = 16  # and at least this many, however loaded the machine, ...
_MIN_MUTANTS_S = 0.25  # ... unless they take longer than this (a slow or hanging target; within the run's deadline)
_MAX_MUTANT_LENGTH = 4096  # or twice the input, whichever is longer (at most the length the solver may choose)
_REPAIR_ROUNDS = 4
_MAX_TEXT_CHILDREN = 64  # text-comparison input-to-state children measured first in the hybrid phase
_MAX_REGEX_CHILDREN = 64  # regex input-to-state children measured next


class PythonTarget(Target):
    """What the engine's kinds (the ``concolic`` executor, the ``havoc`` fuzzer) share about a
    Python target: the target and its modules, the tracer's concrete runs (``measure``), the
    outcome classification, the limits and the dictionary; the options are
    :class:`ConcolicExecutor`'s. ``target=None`` means :data:`DEFAULT_TARGET` (``tlv``)."""

    target_kind = "python"
    hosted = True
    uses_dictionary = True

    def __init__(self, target: str | None = None, options: Mapping[str, Any] | None = None):
        self.options = parse_options(dict(options or {}))
        self.info: TargetInfo = resolve_target(target if target is not None else DEFAULT_TARGET)
        modules = self.info.modules if self.options["modules"] is None else self.options["modules"]
        imported = import_modules(modules)
        self._files = frozenset(self.info.files) | {m.__file__ for m in imported if getattr(m, "__file__", None)}
        own = sys.modules.get(getattr(self.info.function, "__module__", None) or "")
        self._constant_modules = ([own] if own is not None else []) + imported
        self._constants: list[bytes] | None = None  # the modules' words (.hybrid.module_words), on first use
        self._source_sha256 = self.info.source_sha256
        expected = self.options["expected_exceptions"]
        self._expected = Expected(self._default_expected() if expected is None else tuple(expected))
        self._covered: set[int] = set()  # edges measured in this process (the hybrid's filter)
        self._reported: set[tuple[str, str]] = set()  # finding signatures the hybrid phase reported
        self._dictionary = tokens_of(self.options["dictionary"])  # the user's words, always among them

    @property
    def traced_files(self) -> frozenset[str]:
        """The files whose code is the target's own: the target's and its modules' (coverage, signatures)."""
        return self._files

    @property
    def expected(self) -> Expected:
        """The exceptions the target raises by design (an ``ok`` outcome, no finding)."""
        return self._expected

    def _default_expected(self) -> tuple[str, ...]:
        """A built-in target's documented rejections; for ``module:function`` of the standard library,
        the registry's (``targets.rejections``) unless ``stdlib_rejections`` is off."""
        if self.info.builtin or not self.options["stdlib_rejections"]:
            return self.info.expected
        module, _, function = self.info.spec.rpartition(":")
        return rejections.expected_for(module, function)

    @property
    def execution_limit_s(self) -> float:
        return self.options["exec_timeout_s"]

    @property
    def run_limit_s(self) -> float:
        return self.options["run_timeout_s"]

    @property
    def memory_limit_mb(self) -> int:
        return self.options["memory_mb"]

    def identity(self) -> dict[str, Any]:
        return {
            "executor": self.name,
            "engine_version": ENGINE_VERSION,
            "target": self.info.spec,
            "target_sha256": self._source_sha256,
            "options": dict(self.options),
        }

    def target_seeds(self) -> list[bytes]:
        """The option ``seeds``, else the target's own, else :data:`DEFAULT_SEED`."""
        if self.options["seeds"] is not None:
            return [bytes.fromhex(s) for s in self.options["seeds"]]
        return list(self.info.seeds) or [DEFAULT_SEED]

    def measure(self, data: bytes) -> Measurement:
        measured = self._measure(data)
        self._covered.update(edge_of(c) for c in measured.coverage)
        return measured

    def _measure(self, data: bytes) -> Measurement:
        return self._concrete(data)[0]

    def _concrete(self, data: bytes):
        """One traced concrete run: its measurement and how the call ended."""
        data = bytes(data)
        tracer = Tracer(self._files, time.monotonic() + self.options["exec_timeout_s"], collect=True)
        self.on_execution(data)
        ended = execute(self.info.function, data, tracer, self.options["max_frames"])
        self.on_execution(None)
        returned = ended.value if isinstance(ended.value, str) and len(ended.value) <= 256 else None
        return Measurement(tracer.finish(ended), classify(ended, self._files, self._expected), returned), ended

    def reproduce_report(self, data: bytes) -> tuple[Outcome, str]:
        """The outcome and, for an exception, its traceback (the engine's own frames left out)."""
        measured, ended = self._concrete(data)
        if ended.exc is None:
            return measured.outcome, ""
        lines = traceback.format_exception(type(ended.exc), ended.exc, ended.exc.__traceback__)
        own = (os.path.dirname(__file__),)
        kept = [line for line in lines if not line.lstrip().startswith(tuple(f'File "{d}' for d in own))]
        return measured.outcome, "".join(kept)


class ConcolicExecutor(PythonTarget, Executor):
    """Concolic execution of a Python target; ``target=None`` means :data:`DEFAULT_TARGET` (``tlv``).

    Options (all optional): ``query_timeout_ms`` (per solver query), ``max_branches_per_run``
    (negation attempts per run), ``site_budget`` (attempts per branch site per run),
    ``exec_timeout_s`` (per target execution), ``max_children`` (candidates per run),
    ``run_timeout_s`` (whole ``run``), ``max_repairs`` (re-executions spent repairing divergent
    children per run), ``max_frames`` (recursion bound), ``max_path`` (recorded constraints per
    run), ``memory_mb`` (address-space limit of the process the target runs in, see
    :mod:`..sandbox`), ``seeds`` (hex strings; for targets without shipped seeds the default seed
    is 16 zero bytes), ``expected_exceptions`` (see :mod:`.tracing.run_outcome`; default: the built-in
    target's documented rejections; for a ``module:function`` of the standard library those of
    :mod:`symcc_ulfm.targets.rejections` unless ``stdlib_rejections`` is false; none for other
    targets: every uncaught exception is a finding) and ``modules`` (names of the modules whose code the target runs, such as a
    parser's own modules: they are traced for coverage and instrumented for the symbolic run;
    default: the built-in target's ``MODULES``, for a user's target those of
    :mod:`symcc_ulfm.targets.traced`); the hybrid phase: ``mutate_share`` (share of a
    run's time spent on concrete mutants, in [0, 1): 0.5 gives it as long as the symbolic part
    took; 0 disables it), ``mutations`` (most mutants per run; 0 disables it), ``mutate_seed``
    (mixed with the input's SHA-256 into the mutator's random generator) and ``mutate_clock``
    (default true; false: each run measures exactly ``mutations`` mutants, fewer only when their
    pool runs dry, whatever the machine's load, with no share of time and bounded only by
    ``run_timeout_s``; ``notes["mutations_cut"]`` says whether a clock ended the phase before
    ``mutations``).
    """

    name = "concolic"

    def __init__(self, target: str | None = None, options: Mapping[str, Any] | None = None):
        super().__init__(target, options)
        modules = self.info.modules if self.options["modules"] is None else self.options["modules"]
        self._twin = symbolic_twin(self.info.function, modules)
        self._module_words: dict[str, list[bytes]] = {}  # words of uninstrumented callees' modules
        self._search = GenerationalSearch(
            query_timeout_ms=self.options["query_timeout_ms"],
            max_branches=self.options["max_branches_per_run"],
            site_budget=self.options["site_budget"],
            max_children=self.options["max_children"],
            cache=QueryCache(),
        )
        self._words: dict[bytes, None] = {}  # dictionary words seen by symbolic runs, newest first
        self._partners: dict[bytes, None] = {}  # recent inputs and kept mutants, splice partners
        self._record: set[int] | None = None  # the campaign's record of tried branches, once handed one (learn)

    def learn(self, tried: list[int]) -> None:
        """The campaign's record of tried branches (:mod:`.search`: a branch direction and the hit
        class of its occurrence); from now on the search prunes by it and adds to it."""
        if self._record is None:
            self._record = set()
        self._record.update(tried)

    def seeds(self) -> list[bytes]:
        return self.target_seeds()

    def _symbolic(self, data: bytes):
        deadline = time.monotonic() + self.options["exec_timeout_s"]
        recorded = P.start(deadline, self.options["max_path"])
        self.on_execution(data)
        try:
            outcome = execute(self._twin, SymBytes.from_input(data), Tracer(self._files, deadline, False),
                              self.options["max_frames"])
        finally:
            P.stop()
            self.on_execution(None)
        return recorded, outcome

    def _diverged(self, entries: list, child: Child) -> bool:
        sig, index = 0, -1
        for kind, node, site in entries:
            if kind != P.BRANCH:
                continue
            index += 1
            sig = signature(sig, site, bool(node.val))
            if index == child.branch:
                return sig != child.expect
        return True

    def _repair(self, parent: bytes, child: Child, budget: list[int], stats) -> bytes:
        """Re-execute an optimistic child and fix earlier branches it broke, keeping its change."""
        keep = {i: b for i, (a, b) in enumerate(zip(parent, child.data, strict=True)) if a != b}
        data = child.data
        for _ in range(_REPAIR_ROUNDS):
            if budget[0] <= 0:
                break
            budget[0] -= 1
            stats["repair_runs"] += 1
            recorded, _ = self._symbolic(data)
            found = repair_query(data, recorded.entries, child.prefix, keep)
            if found is None:
                break
            constraints, _ = found
            answer = solve(Converter(), constraints, self.options["query_timeout_ms"])
            stats["queries"] += 1
            stats["solver_seconds"] += answer.seconds
            if answer.status != SAT:
                break
            patched = bytearray(data)
            for index, value in answer.model.items():
                patched[index] = value
            data = bytes(patched)
            keep = {i: b for i, (a, b) in enumerate(zip(parent, data, strict=True)) if a != b}
            stats["repaired"] += 1
        return data

    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        start = time.perf_counter()
        data = bytes(data)
        deadline = time.monotonic() + self.options["run_timeout_s"]
        recorded, outcome = self._symbolic(data)
        notes: dict[str, Any] = {"outcome": outcome.label, "branches": recorded.branches, "pins": recorded.pins,
                                 "path_truncated": recorded.truncated}
        findings = []
        if outcome.kind != "return":  # confirmed by a concrete run, or not a finding
            confirmed = self.measure(data).outcome
            notes["confirmed"] = confirmed.kind
            if confirmed.is_finding:
                findings.append(Finding(confirmed, data))
        lineage = child_from_hint(data, hint)
        if lineage is not None and lineage.branch >= 0:  # branch -1: a mutant's lineage, no predicted path
            notes["diverged"] = self._diverged(recorded.entries, lineage)
            notes["predicted_by"] = "optimistic" if lineage.optimistic else "exact"
        bound = lineage.bound if lineage is not None else 0
        children, search = self._search.expand(data, recorded.entries, bound, deadline, self._record)
        extra = {"repair_runs": 0, "repaired": 0, "queries": 0, "solver_seconds": 0.0}
        budget = [self.options["max_repairs"]]
        candidates: list[bytes] = []
        hints: list[dict[str, Any] | None] = []
        reaches: list[list[int]] = []
        for child in children:
            if child.optimistic and budget[0] > 0 and time.monotonic() < deadline:
                child.data = self._repair(data, child, budget, extra)
            candidates.append(child.data)
            hints.append(hint_of(child))
            reaches.append([branch_coverage(*child.flipped)])
        proposals = input_to_state.propose(data, recorded.compares, self.options["max_children"])
        candidates.extend(proposals)
        hints.extend([None] * len(proposals))  # no predicted path: the child runs from bound 0
        mutants = self._hybrid(data, candidates, recorded, time.perf_counter() - start, deadline, mutate)
        candidates.extend(mutants.kept)
        # a mutant's own run negates only branches past the depth of its parent's path (the parent's
        # are this run's to negate): mutants deepen the search instead of widening it
        mutant_hint = {"bound": max(bound, recorded.branches), "branch": -1, "expect": 0, "optimistic": False}
        hints.extend([dict(mutant_hint) for _ in mutants.kept])
        findings.extend(Finding(outcome, mutant) for outcome, mutant in mutants.findings)
        notes.update(
            bound=bound, attempts=search.attempts, sat=search.sat, unsat=search.unsat, unknown=search.unknown,
            optimistic=search.optimistic, checksum=search.checksum, cache_hits=search.cache_hits,
            skipped_site_budget=search.skipped_budget, skipped_tried=search.skipped_tried,
            repair_runs=extra["repair_runs"],
            repaired=extra["repaired"], compares=len(recorded.compares), i2s=len(proposals),
            mutations=mutants.executions, mutations_cut=mutants.cut, mutants_kept=len(mutants.kept),
            mutant_findings=len(mutants.findings), mutation_seconds=round(mutants.seconds, 6),
            words=mutants.words, text_children=mutants.text_children, regex_children=mutants.regex_children,
        )
        return RunResult(
            candidates=candidates,
            hints=hints,
            executions=1 + extra["repair_runs"] + ("confirmed" in notes) + mutants.executions,
            solver_queries=search.queries + extra["queries"],
            solver_seconds=search.solver_seconds + extra["solver_seconds"],
            seconds=time.perf_counter() - start,
            notes=notes,
            findings=findings,
            reaches=reaches + [[] for _ in candidates[len(reaches):]],
            tried=search.tried,
        )

    def _callee_words(self, name: str) -> list[bytes]:
        """The words (:mod:`.hybrid.module_words`) of a module whose uninstrumented code the input reached."""
        if name not in self._module_words:
            module = sys.modules.get(name)
            self._module_words[name] = module_words([module]) if module is not None else []
        return self._module_words[name]

    def _hybrid(self, data: bytes, children: list[bytes], recorded, spent: float, deadline: float, mutate: bool):
        """The hybrid phase (module docstring): mutants of ``data`` and ``children``, bounded in time
        (``mutate_clock``) or in count (otherwise: ``mutations`` of them, within ``deadline``); none
        unless ``mutate``."""
        share, limit = self.options["mutate_share"], self.options["mutations"]
        fresh = havoc.dictionary(recorded.entries, recorded.compares, recorded.tokens, recorded.patterns)
        words = dict.fromkeys(fresh)
        words.update((w, None) for w in self._words if len(words) < havoc.MAX_WORDS)
        self._words = words
        if self._constants is None:
            self._constants = module_words(self._constant_modules)
        pairs = [(0, text, constant) for text, constant in recorded.texts]
        pairs += [(0, text, word) for module, text in recorded.callees for word in self._callee_words(module)]
        texts = input_to_state.propose(data, pairs, _MAX_TEXT_CHILDREN, directed=True)
        rewrites = input_to_state.propose(data, input_to_state.regex_pairs(recorded.matches), _MAX_REGEX_CHILDREN)
        first = [*texts, *rewrites, *havoc.truncations(data)]
        started = time.monotonic()
        if self.options["mutate_clock"]:  # a share of the symbolic part's time, with a floor of mutants
            until = min(deadline, started + max(_MIN_MUTATE_S, spent * share / (1.0 - share)))
            at_least, floor = _MIN_MUTANTS, min(deadline, started + _MIN_MUTANTS_S)
        else:  # exactly `limit` mutants, within the run's deadline
            until = floor = deadline
            at_least = limit
        result = havoc.Hybrid()
        if mutate and limit > 0 and share > 0:
            seed = hashlib.sha256(self.options["mutate_seed"].to_bytes(8, "big") + data).digest()
            mutator = havoc.Mutator(random.Random(int.from_bytes(seed, "big")),
                                    list(dict.fromkeys([*self._dictionary, *self._words])),
                                    min(E_MAX_LENGTH, max(_MAX_MUTANT_LENGTH, 2 * len(data))), self._constants)
            partners = [*children[:_MAX_SPLICE_PARTNERS], *self._partners]
            result = havoc.hybrid(self._measure, mutator, [data, *children[:16]], partners, self._covered,
                                  self._reported, until=until, limit=limit, first=first,
                                  at_least=at_least, deadline=floor)
            result.text_children, result.regex_children = len(texts), len(rewrites)
        for one in (data, *result.kept):
            self._partners.pop(one, None)
            self._partners[one] = None
        while len(self._partners) > _MAX_SPLICE_PARTNERS:
            del self._partners[next(iter(self._partners))]
        result.seconds = time.monotonic() - started
        result.words = len(self._words)
        return result
