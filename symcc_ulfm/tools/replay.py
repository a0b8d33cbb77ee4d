"""Findings of a finished campaign and their replay (``symcc-ulfm findings`` / ``replay``).

A replay executes a finding's input again with the campaign's own executor, contained like
every execution (:mod:`.executors.sandbox`), and says whether the same ``(kind, signature)``
came back. An input quarantined because it killed worker ranks (``core.master.poison``) escaped the
sandbox's parent once already; it is listed but not executed again in this process.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from ..core.master import poison
from ..core.modes import FileModes
from ..core.policy import Policy
from ..errors import ConfigError
from ..executors import create
from ..store.corpus import Corpus
from ..store.findings import UniqueFinding, read_findings, select, state_of
from ..store.paths import StateDir
from ..store.reads import read_bytes

REPLAY_FORMAT = "symcc-ulfm-replay/1"


def list_findings(path: str | Path, modes: FileModes) -> dict:
    """The unique findings of a state, and the WAL records that could not be read (``damaged``:
    their findings are not among them)."""
    state = state_of(path, modes)
    started = _started_at(state)
    rows, damaged = [], []
    for found in read_findings(state, damaged):
        row = found.to_json(started)
        row["replay"] = shlex.join(["symcc-ulfm", "replay", str(state.root), found.id])
        rows.append(row)
    return {"state_dir": str(state.root), "unique": len(rows), "hits": sum(r["hits"] for r in rows), "findings": rows,
            "damaged": damaged}


def replay(path: str | Path, key: str, modes: FileModes) -> dict:
    state = state_of(path, modes)
    found = select(read_findings(state), key)
    if found is None:
        raise ConfigError("finding", f"{key!r} names no single finding of {state.root}; `symcc-ulfm findings "
                                     f"{state.root}` lists them (an id, at least 4 of its characters, or an input SHA-256)")
    return replay_all(state, [found])[0]


def replay_all(state: StateDir, found: list[UniqueFinding] | None = None) -> list[dict]:
    """Replay each finding (default: every unique finding of ``state``) once, with one executor."""
    found = read_findings(state) if found is None else found
    policy = Policy.from_json(json.loads(read_bytes(state.policy)))
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    results = []
    executor = None
    try:
        for item in found:
            row = {"format": REPLAY_FORMAT, "id": item.id, "kind": item.kind, "signature": item.signature,
                   "input_sha256": item.first_input}
            if item.signature == poison.SIGNATURE:
                row.update(reproduced=None, observed=None,
                           note="not replayed: this input killed worker ranks from inside the sandbox")
            else:
                executor = executor or create(policy.executor, policy.target, policy.executor_options,
                                              isolation=policy.isolation)
                observed = executor.reproduce(corpus.read(item.first_input))
                row.update(observed=observed.to_json(),
                           reproduced=(observed.kind, observed.signature) == (item.kind, item.signature))
            results.append(row)
    finally:
        if executor is not None:
            executor.close()
    return results


def _started_at(state: StateDir) -> float | None:
    try:
        snapshot = json.loads(read_bytes(state.membership / "generation-0-snapshot.json"))
        return float(snapshot["started_at"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
