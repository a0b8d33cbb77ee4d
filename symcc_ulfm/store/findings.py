"""The findings of a state directory, read from the WAL's done records (the runtime's reader;
the oracle recounts them with its own parser).

A finding occurrence is a manifest entry ``(kind, signature, input)`` of a done record; a unique
finding is a ``(kind, signature)`` pair and its hits are the distinct inputs that produced it, so
an input reported by two records (the same candidate generated twice) or a re-executed lease
is never counted twice. ``first`` is the occurrence the master accepted first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.finding import TERMINAL_KINDS, finding_id
from ..errors import WalCorruption
from .corpus import Corpus
from .paths import StateDir
from .wal import WorkWAL


@dataclass
class UniqueFinding:
    kind: str
    signature: str
    detail: str
    first_time: float
    first_input: str
    generation: int
    master: int
    worker: int
    inputs: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        return finding_id(self.kind, self.signature)

    def to_json(self, started_at: float | None = None) -> dict:
        row = {"id": self.id, "kind": self.kind, "signature": self.signature, "detail": self.detail,
               "hits": len(self.inputs), "first_seen": self.first_time, "input_sha256": self.first_input,
               "generation": self.generation, "master": self.master, "worker": self.worker}
        if started_at is not None:
            row["first_seen_s"] = round(self.first_time - started_at, 3)
        return row


def read_findings(state: StateDir, damaged: list[str] | None = None) -> list[UniqueFinding]:
    """Unique findings of the campaign, in the order they were first seen.

    A WAL record that cannot be read may hold findings: it raises WalCorruption, or, given a
    ``damaged`` list, is named there (``WORK: why``) and the other records' findings returned.
    """
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    wal = WorkWAL(state.wal, state.root, corpus, state.modes.snapshot)
    unique: dict[tuple[str, str], UniqueFinding] = {}
    for work, record, problem in wal.scan():
        if problem is not None:
            if damaged is None:
                raise WalCorruption(f"WAL record {work} is damaged ({problem}); the findings it holds cannot be read")
            damaged.append(f"{work}: {problem}")
            continue
        if record["state"] != "done":
            continue
        manifest = record["manifest"]
        for item in manifest["findings"]:
            key = (item["kind"], item["signature"])
            known = unique.get(key)
            if known is None or item["time"] < known.first_time:
                inputs = known.inputs if known is not None else set()
                known = unique[key] = UniqueFinding(item["kind"], item["signature"], item["detail"], item["time"],
                                                    item["sha256"], manifest["generation"], manifest["master"],
                                                    manifest["worker"], inputs)
            known.inputs.add(item["sha256"])
    return sorted(unique.values(), key=lambda f: (f.first_time, f.kind, f.signature))


def terminal_inputs(state: StateDir) -> set[str]:
    """Inputs of ``crash``, ``hang``, ``oom`` and ``protocol`` findings (never executed again at the end; those
    of a damaged record, which the oracle fails, are not known and run bounded like any input)."""
    out: set[str] = set()
    for found in read_findings(state, damaged=[]):
        if found.kind in TERMINAL_KINDS:
            out |= found.inputs
    return out


def select(found: list[UniqueFinding], key: str) -> UniqueFinding | None:
    """A finding by its id (or an unambiguous prefix of it, at least 4 characters) or by the
    SHA-256 of one of its inputs."""
    key = key.strip().lower()
    by_id = [f for f in found if len(key) >= 4 and f.id.startswith(key)]
    if len(by_id) == 1:
        return by_id[0]
    by_input = [f for f in found if key in f.inputs]
    return by_input[0] if len(by_input) == 1 else None
