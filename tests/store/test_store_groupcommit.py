"""Group commit: deferred writes made durable by one barrier give exactly the single-record outcome."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.errors import FenceError, StoreError
from symcc_ulfm.store.atomic import write_new, write_replace
from symcc_ulfm.store.corpus import Corpus
from symcc_ulfm.store.durability import Barrier
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.querystore import QueryStore
from symcc_ulfm.store.record import work_hash
from symcc_ulfm.store.staging import WorkerStaging
from symcc_ulfm.store.wal import WorkWAL

EXECUTOR = "e" * 64
MODES = FileModes()


def open_store(root: Path):
    state = StateDir(root, MODES).create()
    corpus = Corpus(state.corpus, MODES.corpus, MODES.snapshot)
    return state, corpus, WorkWAL(state.wal, state.root, corpus, MODES.snapshot)


def commit_all(root: Path, batch: bool) -> dict[str, bytes]:
    """Lease, stage, commit and finish 12 works (sharing some objects) either batched or one by one."""
    state, corpus, wal = open_store(root)
    barrier = Barrier(state.root) if batch else None
    qs = QueryStore(state.query_store, 0, 0, MODES.snapshot, MODES.snapshot_dir, deferred=batch)
    staging = WorkerStaging(state.root, 1, MODES.corpus, MODES.snapshot_dir, barrier)
    inputs = [hashlib.sha256(b"input %d" % i).hexdigest() for i in range(12)]
    leases = {}
    with wal.batch(barrier) as group:
        for i, inp in enumerate(inputs):
            work = work_hash(inp, EXECUTOR)
            token = f"0.0.{i + 1}"
            leases[work] = {"generation": 0, "master": 0, "shard": qs.shard, "token": token, "worker": 1}
            group.lease(inp, EXECUTOR, leases[work])
        group.sync()
        for i, work in enumerate(leases):
            objects = []
            for k in range(3):
                data = b"child %d" % ((i + k) % 7)  # objects shared between works
                sha, rel = staging.stage(leases[work]["token"], data)
                objects.append({"sha256": sha, "length": len(data), "staging": rel, "novel": False,
                                "coverage": [k], "hint": None})
            group.begin(work, leases[work], {"objects": objects, "dropped": [], "kind": "test", "slice": None, "generated": 3, "findings": [], "generation": 0, "master": 0})
        group.sync()
        claimed = {work: group.publish(work) for work in leases}
        group.sync()
        for work in leases:
            group.finish(work, claimed[work], {"generation": 0, "master": 0})
    if barrier is not None:
        barrier.sync()
    files = {}
    for path in sorted(state.root.rglob("*")):
        rel = path.relative_to(state.root).as_posix()
        if path.is_file() and not rel.startswith(("wal/locks", "query-store")):
            files[rel] = path.read_bytes()
    return files


def test_batched_and_single_commits_leave_identical_state(tmp_path):
    single = commit_all(tmp_path / "single", batch=False)
    batched = commit_all(tmp_path / "batched", batch=True)
    assert single == batched
    done = [json.loads(v.splitlines()[-1]) for k, v in batched.items() if k.startswith("wal/records/")]
    assert len(done) == 12 and all(r["state"] == "done" for r in done)
    claimed = [c for r in done for c in r["done"]["claimed"]]
    assert len(claimed) == len(set(claimed)) == 7  # each of the 7 distinct objects counted once
    assert not any(k.startswith("staging/worker-1/0.") for k in batched)  # consumed staging removed


def test_deferred_writes_count_on_the_barrier(tmp_path):
    barrier = Barrier(tmp_path)
    assert not barrier.dirty
    write_replace(tmp_path / "a", b"1", 0o600, barrier)
    assert write_new(tmp_path / "b", b"2", 0o640, barrier)
    assert barrier.dirty and barrier.syncs == 0
    barrier.sync()
    barrier.sync()  # nothing new: no second syncfs
    assert barrier.syncs == 1 and not barrier.dirty
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o600 and (tmp_path / "b").stat().st_mode & 0o777 == 0o640


def test_a_batch_holds_each_record_lock_until_it_ends(tmp_path):
    state, corpus, wal = open_store(tmp_path)
    inp = hashlib.sha256(b"x").hexdigest()
    lease = {"generation": 0, "master": 0, "shard": "g0-m0", "token": "0.0.1", "worker": 1}
    other = WorkWAL(state.wal, state.root, corpus, MODES.snapshot, lock_timeout_s=0.2)
    with wal.batch(Barrier(state.root)) as group:
        group.lease(inp, EXECUTOR, lease)
        with pytest.raises(StoreError, match="still held"):
            other.lease(inp, EXECUTOR, {**lease, "token": "0.0.2"})
    assert other.lease(inp, EXECUTOR, {**lease, "token": "0.0.2"})["lease"]["token"] == "0.0.2"


def test_finish_without_publish_is_refused(tmp_path):
    state, corpus, wal = open_store(tmp_path)
    with wal.batch() as group, pytest.raises(KeyError):
        group.finish("0" * 64, [], {"generation": 0, "master": 0})
    with wal.batch() as group, pytest.raises(FenceError):
        group.publish(work_hash("1" * 64, EXECUTOR))
