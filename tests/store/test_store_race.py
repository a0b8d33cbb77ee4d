"""Several processes replay the same committing records at once: everything happens exactly once."""

from __future__ import annotations

import multiprocessing
import random
from collections import Counter

import pytest
from helpers.store import (
    EXECUTOR,
    input_hash,
    make_lease,
    open_env,
    race_worker,
    sha,
    stage_manifest,
    tree_files,
)

from symcc_ulfm.store.record import work_hash

PROCESSES = 4
RECORDS = 50
POOL = [f"object-{i}".encode() * (1 + i % 5) for i in range(40)]


def _prepare(root, seed):
    env = open_env(root)
    rng = random.Random(seed)
    expected: dict[str, list[bytes]] = {}
    for i in range(RECORDS):
        lease = make_lease(0, i % 3, 100 + i, token=f"0.{i % 3}.{i}")
        env.wal.lease(input_hash(i), EXECUTOR, lease)
        payloads = rng.sample(POOL, rng.randint(1, 5))  # objects shared across records
        work = work_hash(input_hash(i), EXECUTOR)
        env.wal.begin_commit(work, lease, stage_manifest(env, lease, payloads))
        expected[work] = payloads
    return env, expected


@pytest.mark.parametrize("seed", [1, 2])
def test_concurrent_replay_commit_once(tmp_path, seed):
    root = tmp_path / "state"
    env, expected = _prepare(root, seed)
    works = sorted(expected)
    all_objects = {sha(p): p for payloads in expected.values() for p in payloads}
    assert len(all_objects) > 20 and sum(len(v) for v in expected.values()) > len(all_objects)  # real sharing

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=race_worker, args=(str(root), me, works, barrier, results)) for me in range(PROCESSES)]
    for p in procs:
        p.start()
    reports = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    # no process saw any error (no IntegrityError from a consumed staging file, no lock timeout)
    for r in reports:
        assert r["errors"] == [], r["errors"][0]

    # each record was marked done exactly once, by the process recorded as its committer
    done_writes = Counter(w for r in reports for w, state in r["writes"] if state == "done")
    assert done_writes == Counter({w: 1 for w in works})
    assert all(state == "done" for r in reports for _, state in r["writes"])  # nothing else was rewritten
    transitioned = Counter(w for r in reports for w in r["transitioned"])
    assert transitioned == Counter({w: 1 for w in works})
    by_whom = {w: r["me"] for r in reports for w in r["transitioned"]}
    for work in works:
        record = env.wal.read(work)
        assert record["state"] == "done" and record["done"]["master"] == by_whom[work]

    # every object published once, with the right bytes
    puts = Counter(name for r in reports for name, _ in r["puts"])
    created = Counter(name for r in reports for name, c in r["puts"] if c)
    assert puts == created == Counter({name: 1 for name in all_objects})
    objects = tree_files(root / "corpus" / "objects")
    assert objects == {name: data for name, data in all_objects.items()}
    assert env.corpus.verify() == []

    # each staging file read at most once, and only the winners' (one per object)
    reads = Counter(rel for r in reports for rel in r["reads"])
    assert max(reads.values()) == 1 and len(reads) == len(all_objects)

    # the claims partition the objects among the records
    claimed_by: dict[str, str] = {}
    for work in works:
        record = env.wal.read(work)
        names = {o["sha256"] for o in record["manifest"]["objects"]}
        assert names == {sha(p) for p in expected[work]}
        for name in record["done"]["claimed"]:
            assert name in names
            assert name not in claimed_by, "object claimed by two records"
            claimed_by[name] = work
    assert set(claimed_by) == set(all_objects)
    for name, work in claimed_by.items():
        assert env.corpus.claim_owner(name) == work

    # all staging consumed and removed
    assert tree_files(root / "staging") == {}
