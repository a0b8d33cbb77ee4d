"""The state directory layout (DESIGN.md §4), in one place.

::

    policy.json                                   canonical policy (its SHA-256 is the policy SHA)
    deadline.json                                 the deadline's extensions by resumes (store.deadline_file)
    executor.json                                 the executor identity every work hash is taken with
    membership/generation-<g>-snapshot.json       global membership snapshot of generation g
    membership/generation-<g>-layout.json         content-addressed layout (SHA in snapshot/receipt)
    membership/prepare-<g>.json                   agreed recovery plan leading to generation g
    membership/receipt-<g>.json                   durable receipt committing generation g (g >= 1)
    wal/records/<work_hash>.json                  one WAL record per work identity: a line per state
    wal/locks/records.lock                        the records' exclusive locks (a byte each)
    query-store/master-<m>/generation-<g>/        per-master, per-generation QueryStore (SQLite)
    corpus/objects/<sha256>                       public corpus, named by content
    corpus/claims/<sha256>                        who first published it: a link to that committing record, or 'seed'
    staging/worker-<w>/<lease>@<sha256>           a worker's candidates awaiting commit
    staging/worker-<w>/running-<g>                the lease worker w was executing in generation g
    scratch/worker-<w>/                           files worker w's executions write (removed when w fails)
    scratch/worker-<w>/own/, lent-<kind>/         those of its own executor, of the fuzzer it is lent to
    logs/rank-<stable>.jsonl                      structured per-rank logs
    logs/heartbeat-<stable>                       the rank's last sign of life (store.heartbeat)
    seeds/seeds-<n>.json                          the seeds each launch added, recorded before they were published
    triage/objects/<sha256>                       minimised inputs (``symcc-ulfm minimize``), named by content
    triage/records/<kind>-<finding id>.json       the last minimisation / measured replay of a finding
    endpoint.json                                 endpoint coverage re-measured over the final corpus
    outcome.json, oracle.json, job-output.txt     how the last job ended, the verdict, the job's output
    slurm.json                                    the Slurm allocation of each job that ran it (store.allocations)
    stats/fuzzer_stats, stats/plot_data           AFL++-style status, written by the host side (tools.stats_files)
    launch.lock, ranks.lock                       who runs the campaign (store.joblock)

The numbered names (a generation's membership files, a rank's log and heartbeat, a WAL record)
are spelt here only: :class:`StateDir` gives the path of each and lists those present by number
(``snapshots()``, ``rank_logs()``, ``heartbeats()``, ``works()``), so no reader slices a file name.
Every name here is opened without following a symbolic link, and ``store.trust`` refuses a
state directory where one of them is a link or of the wrong type. The oracle
(``evidence.oracle``) and the second verifier (``evidence.recompute``) spell the names they
read themselves: they import nothing of the store, so that a bug here cannot hide from them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.modes import FileModes
from .dirs import ensure_dir

# top-level entries of a state directory and the type each must have (``store.trust`` checks them)
LAYOUT_DIRS = ("membership", "wal", "wal/records", "wal/locks", "query-store", "corpus", "corpus/objects",
               "corpus/claims", "staging", "scratch", "logs", "seeds", "stats", "triage", "triage/objects",
               "triage/records")
LAYOUT_FILES = ("policy.json", "deadline.json", "executor.json", "outcome.json", "endpoint.json", "oracle.json",
                "job-output.txt", "launch.lock", "ranks.lock", "slurm.json", "stats/fuzzer_stats", "stats/plot_data")
PER_RANK_DIRS = ("staging", "scratch", "query-store")  # hold one directory per rank
TEMP_PREFIX = ".tmp-"  # store.atomic's temporary files, left by a write that died
# numbered names: ``{}`` stands for a generation (membership/) or a stable rank (logs/)
SNAPSHOT = "generation-{}-snapshot.json"
LAYOUT = "generation-{}-layout.json"
PREPARE = "prepare-{}.json"
RECEIPT = "receipt-{}.json"
RANK_LOG = "rank-{}.jsonl"
HEARTBEAT = "heartbeat-{}"
RECORD_SUFFIX = ".json"  # wal/records/<work_hash>.json


def numbered(directory: Path, name: str) -> dict[int, Path]:
    """The files of ``directory`` called ``name`` with a number for its ``{}`` (written as ``str``
    writes an int), by that number; empty when there is no such directory. Only names are read:
    nothing is opened or followed."""
    prefix, _, suffix = name.partition("{}")
    pattern = re.compile(re.escape(prefix) + "(0|[1-9][0-9]*)" + re.escape(suffix))
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return {}
    return dict(sorted((int(m[1]), Path(directory) / n) for n in names if (m := pattern.fullmatch(n))))


def record_works(records: Path) -> list[str]:
    """The work hashes of the WAL record files in ``records``, sorted: each ``<name>.json`` but
    for a dot name (a temporary file of ``store.atomic``). Raises OSError when it cannot be listed."""
    return sorted(n[: -len(RECORD_SUFFIX)] for n in os.listdir(records)
                  if n.endswith(RECORD_SUFFIX) and not n.startswith("."))


def foreign_entries(root: Path) -> list[str]:
    """The top-level names of ``root`` that no state directory holds, sorted (empty for a new,
    empty or partly created state): a launch refuses a directory that has any."""
    own = {name.split("/")[0] for name in LAYOUT_DIRS} | set(LAYOUT_FILES)
    return sorted(name for name in os.listdir(root) if name not in own and not name.startswith(TEMP_PREFIX))


@dataclass(frozen=True)
class StateDir:
    """The paths of one state directory, and the file modes its writers use (the contract's
    defaults unless given: a reader needs only the paths)."""

    root: Path
    modes: FileModes = field(default_factory=FileModes)

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    @property
    def policy(self) -> Path:
        return self.root / "policy.json"

    @property
    def deadline(self) -> Path:
        """``deadline.json``: the deadline's extensions by resumes (``store.deadline_file``)."""
        return self.root / "deadline.json"

    @property
    def executor(self) -> Path:
        return self.root / "executor.json"

    @property
    def membership(self) -> Path:
        return self.root / "membership"

    def snapshot(self, generation: int) -> Path:
        """The membership snapshot of ``generation`` (``store.snapshots`` writes and reads it)."""
        return self.membership / SNAPSHOT.format(generation)

    def layout(self, generation: int) -> Path:
        return self.membership / LAYOUT.format(generation)

    def receipt(self, generation: int) -> Path:
        return self.membership / RECEIPT.format(generation)

    def snapshots(self) -> dict[int, Path]:
        """The snapshot files present, by generation (a snapshot is committed by its receipt:
        ``store.snapshots`` decides the current generation)."""
        return numbered(self.membership, SNAPSHOT)

    @property
    def wal(self) -> Path:
        return self.root / "wal"

    @property
    def records(self) -> Path:
        return self.wal / "records"

    def record(self, work: str) -> Path:
        return self.records / f"{work}{RECORD_SUFFIX}"

    def works(self) -> list[str]:
        """The work hashes of the WAL records present, sorted (empty before the WAL exists)."""
        try:
            return record_works(self.records)
        except FileNotFoundError:
            return []

    @property
    def query_store(self) -> Path:
        return self.root / "query-store"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def staging(self) -> Path:
        return self.root / "staging"

    def worker_staging(self, worker: int) -> Path:
        return self.staging / f"worker-{worker}"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    def worker_scratch(self, worker: int) -> Path:
        return self.scratch / f"worker-{worker}"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def rank_log(self, stable: int) -> Path:
        return self.logs / RANK_LOG.format(stable)

    def rank_logs(self) -> dict[int, Path]:
        """The rank logs present, by stable rank."""
        return numbered(self.logs, RANK_LOG)

    def heartbeat(self, stable: int) -> Path:
        return self.logs / HEARTBEAT.format(stable)

    def heartbeats(self) -> dict[int, Path]:
        """The heartbeat files present, by stable rank (``store.heartbeat``)."""
        return numbered(self.logs, HEARTBEAT)

    @property
    def seeds(self) -> Path:
        return self.root / "seeds"

    @property
    def triage_objects(self) -> Path:
        return self.root / "triage" / "objects"

    @property
    def triage_records(self) -> Path:
        return self.root / "triage" / "records"

    @property
    def endpoint(self) -> Path:
        return self.root / "endpoint.json"

    @property
    def outcome(self) -> Path:
        return self.root / "outcome.json"

    @property
    def verdict(self) -> Path:
        """``oracle.json``: the oracle's verdict, stored by ``launch.conclude``."""
        return self.root / "oracle.json"

    @property
    def job_output(self) -> Path:
        return self.root / "job-output.txt"

    @property
    def allocations(self) -> Path:
        """``slurm.json``: the Slurm allocations the campaign's jobs ran in (``store.allocations``)."""
        return self.root / "slurm.json"

    @property
    def stats(self) -> Path:
        return self.root / "stats"

    @property
    def fuzzer_stats(self) -> Path:
        return self.stats / "fuzzer_stats"

    @property
    def plot_data(self) -> Path:
        return self.stats / "plot_data"

    @property
    def launch_lock(self) -> Path:
        return self.root / "launch.lock"

    @property
    def ranks_lock(self) -> Path:
        return self.root / "ranks.lock"

    def create(self) -> StateDir:
        """Create every top-level directory with the modes of the contract."""
        ensure_dir(self.root, self.modes.snapshot_dir)
        for path in (self.membership, self.records, self.wal / "locks", self.query_store, self.staging,
                     self.scratch, self.logs, self.seeds):
            ensure_dir(path, self.modes.snapshot_dir)
        for path in (self.corpus / "objects", self.corpus / "claims"):
            ensure_dir(path, self.modes.corpus_dir)
        return self


@dataclass(frozen=True)
class ExploreDir:
    """The layout of an ``explore --out`` directory (``tools.explore``)::

        explore.json              what ran: executor, target, its options, isolation, the seeds' SHA-256s
        findings.json             the unique findings with their first input and hits
        <sha256>                  seeds, retained inputs and the inputs of findings, named by content
        triage/objects/<sha256>   minimised inputs, as in a state directory
        triage/records/...        the last minimisation / measured replay of a finding
        .explore.lock             held by the exploration writing it
    """

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    @property
    def manifest(self) -> Path:
        return self.root / "explore.json"

    @property
    def findings(self) -> Path:
        return self.root / "findings.json"

    @property
    def lock(self) -> Path:
        return self.root / ".explore.lock"

    def input(self, sha256: str) -> Path:
        return self.root / sha256

    @property
    def triage_objects(self) -> Path:
        return self.root / "triage" / "objects"

    @property
    def triage_records(self) -> Path:
        return self.root / "triage" / "records"
