"""Endpoint coverage: replay the final public corpus through the executor's coverage.

Counted once at the end, independently of what the masters judged during the campaign, and
written to ``endpoint.json`` in the state directory (the oracle reports its ``edges``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .core.canonical import canonical_json, digest
from .core.modes import FileModes
from .core.policy import Policy
from .executors import create
from .executors.base import edge_of
from .store.atomic import read_bytes, write_replace
from .store.corpus import Corpus

ENDPOINT_FORMAT = "symcc-ulfm-endpoint/1"


def measure_endpoint(state_dir: Path, modes: FileModes) -> dict:
    state_dir = Path(state_dir)
    policy = Policy.from_json(json.loads(read_bytes(state_dir / "policy.json")))
    executor = create(policy.executor, policy.target, policy.executor_options)
    corpus = Corpus(state_dir / "corpus", modes.corpus, modes.snapshot)
    started = time.perf_counter()
    coverage: set[int] = set()
    objects = 0
    try:
        for name in corpus.names():
            coverage |= executor.coverage(corpus.read(name))
            objects += 1
    finally:
        executor.close()
    result = {
        "format": ENDPOINT_FORMAT,
        "edges": len({edge_of(c) for c in coverage}),
        "coverage_ids": len(coverage),
        "objects": objects,
        "executor_sha256": digest(executor.identity()),
        "seconds": round(time.perf_counter() - started, 6),
    }
    write_replace(state_dir / "endpoint.json", canonical_json(result), modes.snapshot)
    return result
