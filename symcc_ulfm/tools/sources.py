"""Where triage reads findings from: a campaign's state directory, a run directory (its
``state/``) or an ``explore --out`` directory (``store.paths.ExploreDir``), behind one
:class:`Source`: its unique findings, their inputs, the executor that produced them, and where
triage may write (``triage/``; nowhere in a sealed run directory, whose seal covers every file).

A state is opened by ``store.state_files.open_state``: its policy, deadline and membership files
are read by their owners first, and a damaged one is refused by name (exit 2) before a
finding is listed, exported or executed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..core.finding import finding_id
from ..core.modes import FileModes
from ..errors import ConfigError, CorpusIntegrityError
from ..evidence.rundir import enclosing_run
from ..store.corpus import Corpus
from ..store.findings import read_findings
from ..store.paths import ExploreDir
from ..store.reads import read_bytes
from ..store.state_files import StateFiles, open_state
from ..store.triage import TriageStore
from .explore import EXPLORE_FORMAT

MAX_FINDINGS_BYTES = 64 << 20


@dataclass(frozen=True)
class Run:
    """How a source's inputs were executed: what ``executors.create`` needs to do it again."""

    executor: str
    target: str | None
    options: dict
    isolation: str


@dataclass
class Found:
    """A unique finding, whatever its source."""

    kind: str
    signature: str
    detail: str
    input_sha256: str
    inputs: set[str] = field(default_factory=set)
    row: dict = field(default_factory=dict)  # the source's own listing of it

    @property
    def id(self) -> str:
        return finding_id(self.kind, self.signature)

    @property
    def hits(self) -> int:
        return self.row.get("hits", len(self.inputs))


class Source:
    kind: str  # "state" or "explore"
    root: Path
    run: Run
    sealed: Path | None = None  # the sealed run directory enclosing it: never written
    started_at: float | None = None  # when the campaign started (a state's generation 0), for relative times

    def findings(self, damaged: list[str] | None = None) -> list[Found]:
        raise NotImplementedError

    def read_input(self, sha256: str) -> bytes:
        raise NotImplementedError

    def triage(self) -> TriageStore:
        raise NotImplementedError

    def select(self, key: str) -> Found:
        """A finding by its id (or 4+ of its first characters) or by the SHA-256 of one of its inputs."""
        found = self.findings()
        key = key.strip().lower()
        by_id = [f for f in found if len(key) >= 4 and f.id.startswith(key)]
        by_input = [f for f in found if key == f.input_sha256 or key in f.inputs]
        chosen = by_id if len(by_id) == 1 else by_input
        if len(chosen) != 1:
            raise ConfigError("finding", f"{key!r} names no single finding of {self.root}; `symcc-ulfm findings "
                                         f"{self.root}` lists them (an id, at least 4 of its characters, or an input "
                                         "SHA-256)")
        return chosen[0]


class StateSource(Source):
    kind = "state"

    def __init__(self, files: StateFiles):
        state, policy = files.state, files.policy
        self.state = state
        self.root = state.root
        self.run = Run(policy.executor, policy.target, dict(policy.executor_options), policy.isolation)
        self.started_at = files.membership.started_at if files.membership is not None else None
        enclosing = enclosing_run(state.root)
        self.sealed = enclosing.root if enclosing is not None and enclosing.sums.exists() else None
        self.corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)

    def findings(self, damaged: list[str] | None = None) -> list[Found]:
        return [Found(f.kind, f.signature, f.detail, f.first_input, set(f.inputs), {"unique": f})
                for f in read_findings(self.state, damaged)]

    def read_input(self, sha256: str) -> bytes:
        return self.corpus.read(sha256)

    def triage(self) -> TriageStore:
        return TriageStore(self.state.triage_objects, self.state.triage_records, self.state.modes.corpus,
                           self.state.modes.corpus_dir)


class ExploreSource(Source):
    kind = "explore"

    def __init__(self, out: ExploreDir):
        self.out = out
        self.root = out.root
        try:
            manifest = json.loads(read_bytes(out.manifest))
            if manifest.get("format") != EXPLORE_FORMAT:
                raise ValueError(f"format {manifest.get('format')!r}, expected {EXPLORE_FORMAT}")
            self.run = Run(str(manifest["executor"]), manifest["target"], dict(manifest["executor_options"]),
                           str(manifest["isolation"]))
            self.seeds = [str(s) for s in manifest.get("seeds", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError("DIR", f"{out.manifest} is not an explore manifest ({exc})") from None

    def findings(self, damaged: list[str] | None = None) -> list[Found]:
        if not os.path.lexists(self.out.findings):
            return []  # an exploration still running writes it at its end
        try:
            rows = json.loads(read_bytes(self.out.findings, MAX_FINDINGS_BYTES))
            return [Found(str(r["kind"]), str(r["signature"]), str(r.get("detail", "")), str(r["input_sha256"]),
                          {str(r["input_sha256"])}, dict(r)) for r in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError("DIR", f"{self.out.findings} is not explore's findings file ({exc})") from None

    def read_input(self, sha256: str) -> bytes:
        data = read_bytes(self.out.input(sha256))
        if hashlib.sha256(data).hexdigest() != sha256:
            raise CorpusIntegrityError(f"{self.out.input(sha256)}: its bytes do not have the SHA-256 its name says")
        return data

    def names(self) -> list[str]:
        """The inputs the exploration kept (seeds, retained inputs, inputs of findings), by SHA-256."""
        return sorted(n for n in os.listdir(self.root) if len(n) == 64 and all(c in "0123456789abcdef" for c in n))

    def triage(self) -> TriageStore:
        return TriageStore(self.out.triage_objects, self.out.triage_records)


def open_source(path: str | Path, modes: FileModes) -> Source:
    """The source at ``path``; a directory that is none of them is a ConfigError saying what each holds."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError("DIR", f"{path}: no such directory")
    out = ExploreDir(path)
    if os.path.lexists(out.manifest):
        return ExploreSource(out)
    if os.path.lexists(path / "policy.json") or os.path.lexists(path / "state" / "policy.json"):
        return StateSource(open_state(path, modes))
    if os.path.lexists(out.findings):
        raise ConfigError("DIR", f"{path} holds explore's findings.json but no explore.json (an explore of an "
                                 "earlier version, which did not record what it ran): explore again, or replay an "
                                 "input with --target T --input FILE")
    raise ConfigError("DIR", f"{path} is neither a state directory (policy.json), a run directory "
                             "(state/policy.json) nor an explore --out directory (explore.json)")
