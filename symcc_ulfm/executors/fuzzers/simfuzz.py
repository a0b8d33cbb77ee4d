"""``simfuzz``: a seeded, deterministic stand-in for a fuzzer, for protocol and recovery work.

Each slice "keeps" ``kept`` inputs drawn from a finite space (``space``, so another worker or an
earlier slice may have found the same), spending ``cost_s`` of the slice (the rest of it is not
waited for: the point is the protocol, not the time), and reports one in ``findings`` of them (by
hash) as a crash. Coverage is drawn like ``simulate``'s, from the same edge universe, the map
size its slices report (``edges``).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from ...core.slices import is_descriptor
from ...errors import PolicyError, TargetError
from ..base import Finding, Fuzzer, Measurement, RunResult
from ..outcome import Outcome
from ..simulate import drawn_coverage

VERSION = 1
_DEFAULTS = {"cost_s": 0.0, "kept": 4, "space": 50_000, "edges": 2048, "findings": 0}


class SimulatedFuzzer(Fuzzer):
    name = "simfuzz"
    target_kind = "simulated"

    def __init__(self, target: str | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        self.seed = options.get("seed", 0)
        self.target = target or "simulate"
        self.options = {**_DEFAULTS, **{k: options[k] for k in _DEFAULTS if k in options}}
        o = self.options
        if not (type(o["cost_s"]) in (int, float) and 0 <= o["cost_s"] <= 60):
            raise PolicyError("executor_options.cost_s", f"{o['cost_s']!r}: expected seconds in 0..60")
        for key in ("kept", "space", "edges"):
            if type(o[key]) is not int or not 1 <= o[key] <= 10**9:
                raise PolicyError(f"executor_options.{key}", f"{o[key]!r}: expected a positive integer")

    def _h(self, *parts: object) -> bytes:
        return hashlib.sha256(repr((self.seed, self.target) + parts).encode()).digest()

    def identity(self) -> dict[str, Any]:
        return {"executor": self.name, "version": VERSION, "target": self.target, "seed": self.seed,
                "options": self.options}

    def offer(self, inputs: list[bytes]) -> None:
        """Its slices are drawn from the slice alone: what others found changes nothing."""

    def fuzz(self, descriptor: dict[str, Any]) -> RunResult:
        if not is_descriptor(descriptor):
            raise TargetError("simfuzz runs slices: its work must carry a slice descriptor")
        started = time.perf_counter()
        if self.options["cost_s"]:
            time.sleep(self.options["cost_s"])
        kept, findings = [], []
        for i in range(self.options["kept"]):
            draw = int.from_bytes(self._h("kept", descriptor["worker"], descriptor["generation"], descriptor["seq"],
                                          i)[:8], "big")
            child = self._h("input", draw % self.options["space"])[: 8 + draw % 25]
            kept.append(child)
            if self.options["findings"] and draw % self.options["findings"] == 0:
                findings.append(Finding(Outcome("crash", f"simulated crash {draw % 3}", "simfuzz"), child))
        return RunResult(candidates=kept, executions=len(kept), seconds=time.perf_counter() - started,
                         findings=findings, notes={"map_size": self.options["edges"]})

    def measure(self, data: bytes) -> Measurement:
        return Measurement(drawn_coverage(self._h("coverage", data), self.options["edges"]))

    @property
    def execution_limit_s(self) -> float:
        return self.options["cost_s"] + 0.25

    @property
    def run_limit_s(self) -> float:
        return self.options["cost_s"] + 0.25
