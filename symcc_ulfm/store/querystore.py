"""Per-master, per-generation QueryStore (SQLite): the shard and lease fences of one master.

Lives at ``query-store/master-<m>/generation-<g>/store.sqlite`` so masters and generations
never share a schema or a file. It issues lease tokens (which embed the generation) and
accepts a result only for a token it issued, in its own generation and shard, to the worker
it was issued to, exactly once.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from ..errors import FenceError, StaleGeneration, StoreError
from .dirs import ensure_dir

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    token TEXT UNIQUE NOT NULL,
    work_hash TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    worker INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('leased', 'accepted', 'released'))
);
"""


def shard_of(master: int, generation: int) -> str:
    return f"g{generation}-m{master}"


class QueryStore:
    def __init__(self, root: Path, master: int, generation: int, file_mode: int, dir_mode: int,
                 deferred: bool = False):
        """``deferred``: the caller makes writes durable with a ``Barrier`` (syncfs) instead of
        SQLite's own fsync per transaction."""
        self.master = master
        self.generation = generation
        self.shard = shard_of(master, generation)
        self.directory = ensure_dir(Path(root) / f"master-{master}" / f"generation-{generation}", dir_mode)
        self.path = self.directory / "store.sqlite"
        try:
            if not self.path.exists():
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, file_mode))
                os.chmod(self.path, file_mode)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=10.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=OFF" if deferred else "PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._check_meta()
        except sqlite3.Error as exc:
            raise StoreError(f"QueryStore {self.path}: {exc}") from exc

    def _check_meta(self) -> None:
        expected = {"master": str(self.master), "generation": str(self.generation), "shard": self.shard}
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if not rows:
                self._db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(expected.items()))
            elif rows != expected:
                raise StoreError(f"QueryStore {self.path} belongs to {rows}, not {expected}")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction around many calls (a master's round): committed at the end, rolled
        back when an exception leaves it. Calls outside one are each a transaction of their own."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"QueryStore {self.path}: {exc}") from exc
        try:
            yield
        except BaseException:
            self._db.rollback()
            raise
        try:
            self._db.commit()
        except sqlite3.Error as exc:
            raise StoreError(f"QueryStore {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _step(self) -> Iterator[None]:
        """A transaction of its own, unless the call runs inside :meth:`transaction`."""
        if self._db.in_transaction:
            yield
            return
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            yield

    def issue(self, work_hash: str, input_hash: str, worker: int) -> str:
        """Persist a new lease for ``worker`` and return its token (``<g>.<m>.<seq>``)."""
        try:
            with self._step():
                seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM leases").fetchone()[0]
                token = f"{self.generation}.{self.master}.{seq}"
                self._db.execute(
                    "INSERT INTO leases (seq, token, work_hash, input_hash, worker, state) VALUES (?, ?, ?, ?, ?, 'leased')",
                    (seq, token, work_hash, input_hash, worker),
                )
            return token
        except sqlite3.Error as exc:
            raise StoreError(f"QueryStore {self.path}: {exc}") from exc

    def accept(self, generation: int, shard: str, token: str, work_hash: str, worker: int) -> None:
        """Accept a result once; anything not matching an outstanding lease of this store is rejected."""
        if generation != self.generation:
            raise StaleGeneration(f"result of generation {generation} offered to the store of generation {self.generation}")
        if shard != self.shard:
            raise FenceError(f"result for shard {shard!r} offered to shard {self.shard!r}")
        try:
            with self._step():
                row = self._db.execute(
                    "SELECT work_hash, worker, state FROM leases WHERE token = ?", (token,)
                ).fetchone()
                if row is None:
                    raise FenceError(f"lease {token!r} was never issued by {self.shard}")
                if row[2] != "leased":
                    raise FenceError(f"lease {token!r} is {row[2]}, not outstanding")
                if row[0] != work_hash or row[1] != worker:
                    raise FenceError(f"lease {token!r} was issued for other work or another worker")
                self._db.execute("UPDATE leases SET state = 'accepted' WHERE token = ?", (token,))
        except sqlite3.Error as exc:
            raise StoreError(f"QueryStore {self.path}: {exc}") from exc

    def release(self, token: str) -> None:
        """Give up an outstanding lease (its worker failed or the result was rejected)."""
        try:
            with self._step():
                self._db.execute("UPDATE leases SET state = 'released' WHERE token = ? AND state = 'leased'", (token,))
        except sqlite3.Error as exc:
            raise StoreError(f"QueryStore {self.path}: {exc}") from exc

    def counts(self) -> dict[str, int]:
        rows = self._db.execute("SELECT state, COUNT(*) FROM leases GROUP BY state").fetchall()
        return {state: n for state, n in rows}

    def close(self) -> None:
        self._db.close()
