"""After the job: the final corpus's coverage, then the oracle's verdict (:func:`conclude`).

The coverage replays the public corpus through the executor's coverage, once, counted independently of what the masters judged during the campaign, and written to
``endpoint.json`` in the state directory (the counter DESIGN.md §8 calls "endpoint edges":
the oracle reports its ``edges``). The
executor is the contained one (target code never runs in ``launch``); inputs of ``crash``,
``hang`` and ``oom`` findings are not executed again, and the measurement has a time budget,
counted from when the executor is ready (its start-up has a bound of its own): what it could not
measure in time is counted in ``unmeasured``, never waited for.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..core.canonical import canonical_json, digest
from ..core.coverage import edge_of
from ..errors import CheckFailed, StoreError, SymccUlfmError
from ..evidence.oracle.judge import judge
from ..executors import create
from ..store.atomic import write_replace
from ..store.corpus import Corpus
from ..store.findings import terminal_inputs
from ..store.joblock import ranks_gone
from ..store.paths import StateDir
from ..store.policy_file import read_policy

FINAL_COVERAGE_FORMAT = "symcc-ulfm-endpoint/2"
BATCH = 256


def measure_final_coverage(state: StateDir) -> dict:
    """Measure the corpus within the policy's ``timeouts.endpoint_s`` from when the executor is ready;
    write and return endpoint.json."""
    policy, _ = read_policy(state)
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    skipped = terminal_inputs(state)
    names = [name for name in corpus.names() if name not in skipped]
    started = time.perf_counter()
    coverage: set[int] = set()
    measured = failed = 0
    executor = create(policy.executor, policy.target, policy.executor_options, isolation=policy.isolation)
    try:
        identity = executor.identity()  # a contained executor is ready once it answers
        until = time.monotonic() + policy.timeouts.endpoint_s
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


def conclude(state: StateDir, minimum_hosts: int | None = None) -> dict:
    """After the job, once every rank is gone: re-measure the final corpus's coverage (contained,
    bounded in time), run the oracle, store its verdict. A target that fails the measurement
    costs the endpoint-edges figure, never the verdict; a verdict that cannot be stored (a full disk) is still
    returned, with ``store_error`` saying why."""
    left = ranks_gone(state.root, state.modes.snapshot, 2.0)
    if left:
        raise CheckFailed(f"ranks {left} still run on {state.root}; not judging a state that may still change")
    store_error = None
    if state.outcome.exists():
        try:
            measure_final_coverage(state)
        except SymccUlfmError as exc:  # the measurement or its file: recorded instead, if it can be
            store_error = _store(state.endpoint, {"error": f"{type(exc).__name__}: {exc}"[:2000]}, state)
    verdict = judge(state.root, minimum_hosts=minimum_hosts)
    store_error = _store(state.verdict, verdict, state) or store_error
    if store_error:
        verdict["store_error"] = store_error
        verdict["notes"].append(store_error)
    return verdict


def _store(path: Path, value: dict, state: StateDir) -> str | None:
    try:
        write_replace(path, canonical_json(value), state.modes.snapshot)
    except StoreError as exc:
        return f"{path.name} not written: {exc}"
    return None

