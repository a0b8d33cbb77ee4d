"""``havoc``: the concolic engine's mutation phase as a standalone fuzzer of a Python target.

The same target, modules, tracer, classification and limits as the ``concolic`` executor (both
are a :class:`~..concolic.executor.PythonTarget`), without the symbolic run: each slice (``core.slices``) runs AFL-style havoc mutants
(:class:`~..concolic.hybrid.havoc.Mutator`, with the user's ``--dictionary`` as its words and the
target modules' own words as its constants)
of a pool, measures each concretely and keeps those that reach an edge this fuzzer had not
seen, until the slice's seconds are spent (with the option ``mutate_clock`` off: until it has
measured ``mutations`` mutants, whatever the slice's seconds, within ``run_timeout_s``;
``notes["mutations_cut"]`` says whether that cut it). The pool is what the other workers found
(:meth:`offer`) and what this fuzzer kept; the newest entries are drawn from more often, as a
fuzzer's queue favours recent finds. Findings are reported once per signature, like the hybrid
phase's. It runs contained (the sandbox hosts it like the concolic executor): a mutant that kills
the process is the finding, and the new process gets the pool offered again.

Why this and not atheris as the default Python fuzzer: see ``docs/notes.md`` (hybrid campaigns).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Mapping
from typing import Any

from ...core.slices import is_descriptor
from ...errors import TargetError
from ..base import Finding, Fuzzer, RunResult
from ..concolic.executor import PythonTarget
from ..concolic.hybrid import havoc
from ..concolic.hybrid.module_words import module_words

VERSION = 1
MAX_LENGTH = 4096  # of a mutant
RECENT = 64  # the pool's newest entries, drawn from half of the time
CHUNK_S = 0.5  # mutants of one drawn base: this long (timed slices) ...
CHUNK = 64  # ... or this many (counted slices)


class HavocFuzzer(PythonTarget, Fuzzer):
    name = "havoc"

    def __init__(self, target: str | None = None, options: Mapping[str, Any] | None = None):
        super().__init__(target, options)
        self._pool: dict[bytes, None] = {}
        self._rng = random.Random(int.from_bytes(hashlib.sha256(
            self.options["mutate_seed"].to_bytes(8, "big") + b"havoc").digest(), "big"))

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "executor": self.name, "fuzzer_version": VERSION}

    def offer(self, inputs: list[bytes]) -> None:
        for data in inputs:
            if data not in self._pool:
                self._pool[data] = None
                self.measure(data)  # its edges are not new any more

    def fuzz(self, descriptor: dict[str, Any]) -> RunResult:
        if not is_descriptor(descriptor):
            raise TargetError("worker_kinds", "the havoc kind runs slices: its work must carry a slice descriptor")
        started = time.monotonic()
        clocked = self.options["mutate_clock"]
        until = started + (float(descriptor["seconds"]) if clocked else self.options["run_timeout_s"])
        count = self.options["mutations"]
        if self._constants is None:
            self._constants = module_words(self._constant_modules)
        if not self._pool:  # nothing offered yet: the target's own seeds
            self.offer(self.target_seeds())
        mutator = havoc.Mutator(self._rng, self._dictionary, MAX_LENGTH, self._constants)
        kept: list[bytes] = []
        findings = []
        executions = 0
        cut = False
        while (time.monotonic() < until) if clocked else (executions < count):
            pool = list(self._pool)
            recent = pool[-RECENT:]
            bases = recent if self._rng.random() < 0.5 else pool
            if clocked:
                bound = {"until": min(until, time.monotonic() + CHUNK_S), "limit": 4096}
            else:
                limit = min(CHUNK, count - executions)
                bound = {"until": until, "limit": limit, "at_least": limit, "deadline": until}
            result = havoc.hybrid(self._measure, mutator, [self._rng.choice(bases)], pool[-havoc.MAX_WORDS:],
                                  self._covered, self._reported, **bound)
            executions += result.executions
            for mutant in result.kept:
                self._pool[mutant] = None
            kept += result.kept
            findings += [(outcome, mutant) for outcome, mutant in result.findings]
            if not clocked and (result.cut or not result.executions):  # the deadline, or a pool run dry
                cut = result.cut
                break
        notes = {"pool": len(self._pool), "kept": len(kept), "mutations": executions}
        if not clocked:
            notes["mutations_cut"] = cut
        return RunResult(candidates=kept, executions=executions, seconds=time.monotonic() - started,
                         notes=notes, findings=[Finding(outcome, mutant) for outcome, mutant in findings])

    @property
    def run_limit_s(self) -> float:
        """Beyond the slice's own seconds: one last measurement (and a counted slice's ``run_timeout_s``)."""
        counted = 0.0 if self.options["mutate_clock"] else self.options["run_timeout_s"]
        return self.options["exec_timeout_s"] + 1.0 + counted
