"""``simulate``: a seeded, deterministic candidate generator with a tunable cost.

For protocol, recovery and control-plane work where the symbolic engine is not the point.
Children of an input are SHA-256 derivations drawn from a finite space (``space``), so
duplicates happen as they do in real campaigns; coverage is drawn from a finite edge universe
(``edges``), so novelty saturates. ``cost_s`` per run is spent sleeping (``cost_mode=sleep``,
the default: many ranks on few cores) or computing (``cost_mode=cpu``). With ``findings=N``,
one input in ``N`` (by its hash) is reported as an ``exception`` finding of one of three
signatures, so that the finding path (RESULT, manifest, deduplication) runs without a target.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from ..core.coverage import coverage_id
from ..errors import PolicyError
from .base import Executor, Finding, Measurement, RunResult
from .outcome import Outcome

VERSION = 1
_DEFAULTS = {"cost_s": 0.05, "cost_mode": "sleep", "children": 5, "space": 50_000, "edges": 2048, "seeds": 4,
             "findings": 0}


def drawn_coverage(digest: bytes, edges: int) -> frozenset[int]:
    """Three coverage ids drawn from a digest: edges of a universe of ``edges``, hit counts 1-6."""
    return frozenset(coverage_id(int.from_bytes(digest[4 * k: 4 * k + 4], "big") % edges, 1 + digest[12 + k] % 6)
                     for k in range(3))


class SimulateExecutor(Executor):
    name = "simulate"
    target_kind = "simulated"

    def __init__(self, target: str | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        unknown = sorted(set(options) - set(_DEFAULTS) - {"seed"})
        if unknown:
            raise PolicyError(f"executor_options.{unknown[0]}", f"unknown simulate option; known: {', '.join(sorted(_DEFAULTS))}")
        self.options = {**_DEFAULTS, **options}
        self.seed = options.get("seed", 0)
        self.target = target or "simulate"
        o = self.options
        if not (type(o["cost_s"]) in (int, float) and 0 <= o["cost_s"] <= 60):
            raise PolicyError("executor_options.cost_s", f"{o['cost_s']!r}: expected seconds in 0..60")
        if o["cost_mode"] not in ("sleep", "cpu"):
            raise PolicyError("executor_options.cost_mode", f"{o['cost_mode']!r}: expected sleep or cpu")
        for key in ("children", "space", "edges", "seeds"):
            if type(o[key]) is not int or not 1 <= o[key] <= 10**9:
                raise PolicyError(f"executor_options.{key}", f"{o[key]!r}: expected a positive integer")
        if type(o["findings"]) is not int or not 0 <= o["findings"] <= 10**9:
            raise PolicyError("executor_options.findings", f"{o['findings']!r}: expected 0 (none) or a positive integer")

    @property
    def execution_limit_s(self) -> float:
        return self.options["cost_s"] + 0.25

    @property
    def run_limit_s(self) -> float:
        return self.options["cost_s"] + 0.25

    def _h(self, *parts: object) -> bytes:
        return hashlib.sha256(repr((self.seed, self.target) + parts).encode()).digest()

    def identity(self) -> dict[str, Any]:
        return {"executor": self.name, "version": VERSION, "target": self.target, "seed": self.seed, "options": self.options}

    def seeds(self) -> list[bytes]:
        return [self._h("seed", j)[:16] for j in range(self.options["seeds"])]

    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        started = time.perf_counter()
        self._spend(self.options["cost_s"])
        children = []
        for i in range(self.options["children"]):
            slot = int.from_bytes(self._h("child", data, i)[:8], "big") % self.options["space"]
            children.append(self._h("input", slot)[: 8 + slot % 25])
        findings = []
        draw = int.from_bytes(self._h("finding", data)[:8], "big")
        if self.options["findings"] and draw % self.options["findings"] == 0:
            outcome = Outcome("exception", f"simulated exception {draw % 3}", "a finding drawn by the simulate executor")
            findings.append(Finding(outcome, data))
        return RunResult(candidates=children, executions=1, seconds=time.perf_counter() - started, findings=findings,
                         notes={"map_size": self.options["edges"]})  # its coverage map: the edge universe

    def measure(self, data: bytes) -> Measurement:
        return Measurement(drawn_coverage(self._h("coverage", data), self.options["edges"]))

    def _spend(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self.options["cost_mode"] == "sleep":
            time.sleep(seconds)
            return
        # CPU time of this thread, not wall time: with more ranks than cores a "10 ms" input
        # still costs 10 ms of CPU, as a real executor would
        end = time.thread_time() + seconds
        block = b"x" * 4096
        while time.thread_time() < end:
            block = hashlib.sha256(block).digest() * 128
