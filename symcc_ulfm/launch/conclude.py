"""The final corpus's coverage: replay the public corpus through the executor's coverage, once, after the job.

Counted independently of what the masters judged during the campaign, and written to
``endpoint.json`` in the state directory (the counter DESIGN.md §8 calls "endpoint edges":
the oracle reports its ``edges``). The
executor is the contained one (target code never runs in ``launch``); inputs of ``crash``,
``hang`` and ``oom`` findings are not executed again, and the whole measurement has a time
budget: what it could not measure in time is counted in ``unmeasured``, never waited for.
"""

from __future__ import annotations

import json
import time

from ..core.canonical import canonical_json, digest
from ..core.policy import Policy
from ..executors import create
from ..executors.base import edge_of
from ..store.atomic import write_replace
from ..store.corpus import Corpus
from ..store.findings import terminal_inputs
from ..store.paths import StateDir
from ..store.reads import read_bytes

FINAL_COVERAGE_FORMAT = "symcc-ulfm-endpoint/2"
BATCH = 256


def measure_final_coverage(state: StateDir) -> dict:
    """Measure the corpus within the policy's ``timeouts.endpoint_s``; write and return endpoint.json."""
    policy = Policy.from_json(json.loads(read_bytes(state.policy)))
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    skipped = terminal_inputs(state)
    names = [name for name in corpus.names() if name not in skipped]
    started = time.perf_counter()
    until = time.monotonic() + policy.timeouts.endpoint_s
    coverage: set[int] = set()
    measured = failed = 0
    executor = create(policy.executor, policy.target, policy.executor_options)
    try:
        identity = executor.identity()
        for pos in range(0, len(names), BATCH):
            left = until - time.monotonic()
            if left <= 0:
                break
            batch = [corpus.read(name) for name in names[pos:pos + BATCH]]
            for result in executor.measure_many(batch, budget_s=left):
                if result is not None:
                    measured += 1
                    failed += result.outcome.is_finding
                    coverage |= result.coverage
    finally:
        executor.close()
    result = {
        "format": FINAL_COVERAGE_FORMAT,
        "edges": len({edge_of(c) for c in coverage}),
        "coverage_ids": len(coverage),
        "objects": measured,
        "unmeasured": len(names) - measured,
        "skipped_findings": len(skipped),
        "findings_on_replay": failed,
        "executor_sha256": digest(identity),
        "seconds": round(time.perf_counter() - started, 6),
    }
    write_replace(state.endpoint, canonical_json(result), state.modes.snapshot)
    return result
