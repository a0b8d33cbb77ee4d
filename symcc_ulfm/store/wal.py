"""The shared work WAL: one record per work identity, ``leased -> committing -> done``.

A record is a file of lines, one per state (the format is :mod:`.record`). The first line
creates the file (create-only); every transition appends a line under the record's exclusive
lock, so a record costs one inode however many states it passes. A torn last line (a crash in
the middle of an append) is a transition that never became durable and is ignored; any other
damage, an edited or reordered line, fails its checks and the record is never trusted. Lease
tokens are fenced by generation: a record leased in an older generation is *lapsed* and may be
re-leased; a manifest can only be written with the exact current lease.

:meth:`WorkWAL.replay_commit_once` runs "re-read manifest -> verify/publish every object ->
mark done" inside the record lock. Any exception leaves the record ``committing`` so a later
master retries, and two masters never both consume the same staging objects.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.canonical import is_sha256_hex
from ..core.limits import MAX_RECORD_BYTES
from ..errors import FenceError, StaleGeneration, StoreError, UnsafeFile, WalCorruption
from .appends import append_line
from .atomic import write_new
from .corpus import Corpus
from .crashpoints import crash_point
from .durability import Barrier
from .locks import LockFile, exclusive
from .paths import RECORD_SUFFIX, record_works
from .reads import read_bytes
from .record import (
    WAL_FORMAT,
    canonical_manifest,
    check_lease,
    check_manifest,
    encode_record,
    manifest_objects,
    parse_record_file,
    work_hash,
)
from .staging import StagedReader, parse_staged

RECORD_LOCKS = "records.lock"
CACHED_RECORDS = 4096


class AlreadyDone(FenceError):
    """The work was committed already; nothing to lease."""


class NeedsReplay(FenceError):
    """The record is ``committing``: replay it before leasing again."""


class WorkWAL:
    """The records of one state directory.

    Records read or written here are values: callers never change them, every transition is a
    new dict. Records not yet done are remembered with the file bytes they were read from or
    written as; a read returns the remembered record when the file still holds exactly those
    bytes, and parses and checks the file otherwise, so an edited record is caught as before
    while a master does not parse its own records again at every transition.
    """

    def __init__(self, root: Path, state_root: Path, corpus: Corpus, mode: int, lock_timeout_s: float = 30.0):
        self.root = Path(root)
        self.records_dir = self.root / "records"
        self.locks_dir = self.root / "locks"
        self.state_root = Path(state_root)
        self.corpus = corpus
        self.mode = mode
        self.lock_timeout_s = lock_timeout_s
        self.staged = StagedReader(self.state_root)
        self._records = str(self.records_dir)
        self._known: dict[str, tuple[bytes, dict]] = {}  # work -> (file bytes, the record they hold)

    # -- reading -------------------------------------------------------------------------

    def path(self, work: str) -> Path:
        return Path(self._file(work))

    def _file(self, work: str) -> str:
        if not is_sha256_hex(work):
            raise WalCorruption(f"{work!r} is not a work hash")
        return f"{self._records}/{work}{RECORD_SUFFIX}"

    def read(self, work: str) -> dict | None:
        try:
            data = read_bytes(self._file(work), limit=MAX_RECORD_BYTES)
        except FileNotFoundError:
            self._known.pop(work, None)
            return None
        except UnsafeFile as exc:  # a FIFO, a link or a giant where a record belongs: never trusted
            raise WalCorruption(f"WAL record {work}: {exc}") from None
        known = self._known.get(work)
        if known is not None and known[0] == data:
            return known[1]
        record = parse_record_file(data, expected_work=work)
        self._remember(work, data, record)
        return record

    def _remember(self, work: str, data: bytes, record: dict) -> None:
        self._known.pop(work, None)
        if record["state"] == "done":
            return  # nothing more is written to it
        if len(self._known) >= CACHED_RECORDS:
            del self._known[next(iter(self._known))]
        self._known[work] = (data, record)

    def work_hashes(self) -> list[str]:
        try:
            return record_works(self.records_dir)
        except OSError as exc:
            raise StoreError(f"cannot list {self.records_dir}: {exc.strerror or exc}") from exc

    def records(self) -> Iterator[dict]:
        """Every record; a corrupted one raises WalCorruption (see :meth:`scan` to keep going)."""
        for work in self.work_hashes():
            record = self.read(work)
            if record is not None:
                yield record

    def scan(self) -> Iterator[tuple[str, dict | None, WalCorruption | None]]:
        """Every record or the reason it cannot be trusted; a corrupted record is reported, never repaired."""
        for work in self.work_hashes():
            try:
                record = self.read(work)
            except WalCorruption as exc:
                yield work, None, exc
                continue
            if record is not None:
                yield work, record, None

    # -- transitions (each a batch of one, durable on its own) ---------------------------

    def batch(self, barrier: Barrier | None = None, locks: LockFile | None = None) -> GroupCommit:
        """Transitions of many records made durable together by ``barrier`` (see GroupCommit);
        ``locks``: an open lock file the caller's batches share, one batch at a time."""
        return GroupCommit(self, barrier, locks)

    def lease(self, input_hash: str, executor_sha256: str, lease: dict[str, Any]) -> dict:
        """Lease the work for ``(input_hash, executor)``; raises AlreadyDone/NeedsReplay/FenceError."""
        with self.batch() as group:
            return group.lease(input_hash, executor_sha256, lease)

    def begin_commit(self, work: str, lease: dict[str, Any], manifest: dict[str, Any]) -> dict:
        """Write the canonical manifest under the exact current lease: ``leased -> committing``."""
        with self.batch() as group:
            return group.begin(work, lease, manifest)

    def replay_commit_once(self, work: str, committer: dict[str, Any]) -> dict:
        """Publish every object of the manifest and mark done, once, under the record lock.

        ``committer`` ({generation, master}) is who replayed it; returns the done record (a
        record that is already done is returned unchanged).
        """
        with self.batch() as group:
            claimed = group.publish(work)
            return group.finish(work, claimed, committer)

    def discard_staging(self, record: dict) -> None:
        """Remove the staged files a done record consumed, and those of the candidates it dropped
        (staged under its lease by its worker)."""
        leases: dict[tuple[int, str], list[str]] = {}
        for obj in manifest_objects(record):
            worker, lease, name = parse_staged(obj["staging"])
            leases.setdefault((worker, lease), []).append(name)
        manifest = record["manifest"]
        if manifest is not None and manifest["dropped"]:
            leases.setdefault((record["lease"]["worker"], record["lease"]["token"]), []).extend(manifest["dropped"])
        for (worker, lease), names in leases.items():
            self.staged.remove_lease(worker, lease, names)

    # -- helpers -------------------------------------------------------------------------

    def _require(self, work: str) -> dict:
        record = self.read(work)
        if record is None:
            raise FenceError(f"no WAL record for work {work}")
        return record

    def record_lock(self, work: str, locks: LockFile | None = None):
        """The record's exclusive lock: one byte, named by the work hash, of the shared lock file
        (through ``locks``, a batch's open lock file, or a lock file opened for this lock)."""
        self._file(work)
        if locks is None:
            return exclusive(self.locks_dir / RECORD_LOCKS, self.mode, self.lock_timeout_s, int(work[:15], 16))
        return locks.hold(self.lock_timeout_s, int(work[:15], 16))

    def lock_file(self) -> LockFile:
        return LockFile(self.locks_dir / RECORD_LOCKS, self.mode)

    def _write(self, record: dict, barrier: Barrier | None, new: bool = False) -> None:
        """Create the record file with its first state (``new``) or append the next state."""
        line = encode_record(record)
        work = record["work_hash"]
        path = self._file(work)
        previous = self._known.pop(work, None)
        if not new:
            whole = len(previous[0]) if previous is not None and previous[0].endswith(b"\n") else None
            append_line(path, line, barrier, whole)
        elif not write_new(path, line, self.mode, barrier):
            raise StoreError(f"WAL record {path} appeared while its lock was held")
        if new or previous is not None:
            self._remember(work, line if new else previous[0] + line, record)


class GroupCommit:
    """Transitions of several records under one durability barrier (group commit).

    Each record's lock is taken when the batch first touches it and held until the batch ends,
    so that "re-read manifest -> publish -> mark done" of a record runs under one lock even
    when the caller interleaves phases of many records. With a :class:`Barrier`, writes are
    made durable only by ``sync()``; the caller orders the phases with it: manifests durable
    (sync) before objects are published, objects durable (sync) before records are marked
    done. Without one, every write is durable on its own.
    """

    def __init__(self, wal: WorkWAL, barrier: Barrier | None, locks: LockFile | None = None):
        self.wal = wal
        self.barrier = barrier
        self._locks = contextlib.ExitStack()
        self._held: set[str] = set()
        self._records: dict[str, dict] = {}
        self._lock_file = locks

    def __enter__(self) -> GroupCommit:
        return self

    def __exit__(self, *exc) -> None:
        self._locks.close()

    def sync(self) -> None:
        if self.barrier is not None:
            self.barrier.sync()

    def _lock(self, work: str) -> None:
        if work not in self._held:
            if self._lock_file is None:  # one open lock file per batch: batches exclude each other
                self._lock_file = self.wal.lock_file()
                self._locks.callback(self._lock_file.close)
            self._locks.enter_context(self.wal.record_lock(work, self._lock_file))
            self._held.add(work)

    def lease(self, input_hash: str, executor_sha256: str, lease: dict[str, Any]) -> dict:
        check_lease(lease)
        work = work_hash(input_hash, executor_sha256)
        self._lock(work)
        record = self.wal.read(work)
        new = record is None
        if new:
            record = {
                "format": WAL_FORMAT,
                "work_hash": work,
                "input_hash": input_hash,
                "executor_sha256": executor_sha256,
                "state": "leased",
                "lease": dict(lease),
                "history": [],
                "manifest": None,
                "done": None,
            }
        elif record["state"] == "done":
            raise AlreadyDone(f"work {work} is done")
        elif record["state"] == "committing":
            raise NeedsReplay(f"work {work} is committing; replay it first")
        else:
            held = record["lease"]
            if held["generation"] > lease["generation"]:
                raise StaleGeneration(f"work {work} is leased in generation {held['generation']}")
            if held["generation"] == lease["generation"] and held["master"] != lease["master"]:
                raise FenceError(f"work {work} is leased by master {held['master']} in this generation")
            record = {**record, "history": [*record["history"], {"state": "leased", **held}], "lease": dict(lease)}
        self.wal._write(record, self.barrier, new)
        crash_point("wal.leased")
        return record

    def begin(self, work: str, lease: dict[str, Any], manifest: dict[str, Any]) -> dict:
        """``leased -> committing`` under the exact current lease, after checking every staged
        object against the manifest (kept open for :meth:`publish`, see :class:`StagedReader`)."""
        check_manifest(manifest)
        self._lock(work)
        record = self.wal._require(work)
        if record["state"] != "leased":
            raise FenceError(f"work {work} is {record['state']}, not leased")
        held = record["lease"]
        if held["generation"] != lease["generation"]:
            raise StaleGeneration(f"lease of generation {lease['generation']} on a record of {held['generation']}")
        if held != dict(lease):
            raise FenceError(f"lease {lease['token']} is not the record's current lease {held['token']}")
        for obj in manifest["objects"]:
            # only this lease's own staging may be consumed (and removed) by this record
            if parse_staged(obj["staging"])[:2] != (held["worker"], held["token"]):
                raise FenceError(f"manifest object {obj['staging']} is not staged under lease {held['token']}")
        staged = self.wal.staged.verify_all([(o["staging"], o["sha256"], o["length"]) for o in manifest["objects"]])
        self.wal.staged.keep(staged)
        record = {**record, "manifest": canonical_manifest(manifest), "state": "committing"}
        self.wal._write(record, self.barrier)
        crash_point("wal.committing")
        return record

    def publish(self, work: str) -> list[str] | None:
        """Re-read the manifest, claim and publish its objects; the objects this record counts.

        An object is published from the staged file it was checked against (linked when the
        corpus can adopt it, see :meth:`Corpus.put`). Returns None when the record is already
        done.
        """
        self._lock(work)
        record = self.wal._require(work)
        self._records[work] = record
        if record["state"] == "done":
            return None
        if record["state"] != "committing":
            raise FenceError(f"work {work} is {record['state']}; nothing to replay")
        corpus = self.wal.corpus
        path = self.wal._file(work)
        claimed = []
        for obj in record["manifest"]["objects"]:
            sha256 = obj["sha256"]
            if corpus.claim_new(sha256, path, self.barrier):
                self._publish_object(obj)
            elif corpus.claim_owner(sha256) != work:
                continue
            elif not corpus.has(sha256):  # claimed by this record before a crash, not yet published
                self._publish_object(obj)
            else:
                corpus.read(sha256)
            claimed.append(sha256)
        crash_point("commit.objects")
        return claimed

    def _publish_object(self, obj: dict) -> None:
        staged = self.wal.staged.take(obj["staging"], obj["sha256"], obj["length"])
        try:
            self.wal.corpus.adopt(staged, self.barrier)
        finally:
            os.close(staged.fd)
        crash_point("commit.published")

    def finish(self, work: str, claimed: list[str] | None, committer: dict[str, Any]) -> dict:
        """Mark done (after the objects are durable) and discard the consumed staging."""
        record = self._records.pop(work)
        if claimed is None:  # already done: a crash after wal.done may have left staging behind
            self.wal.discard_staging(record)
            return record
        done = {"generation": committer["generation"], "master": committer["master"], "claimed": claimed}
        record = {**record, "state": "done", "done": done}
        self.wal._write(record, self.barrier)
        crash_point("wal.done")
        self.wal.discard_staging(record)
        crash_point("commit.staging-removed")
        return record
