"""The per-master, per-generation QueryStore (SQLite)."""

from __future__ import annotations

import os
import shutil
import stat
import threading

import pytest

from symcc_ulfm.errors import FenceError, StaleGeneration, StoreError
from symcc_ulfm.store.querystore import QueryStore, shard_of

W1, W2 = "1" * 64, "2" * 64
I1, I2 = "a" * 64, "b" * 64


@pytest.fixture
def qs(tmp_path):
    store = QueryStore(tmp_path / "query-store", 4, 2, 0o600, 0o700)
    yield store
    store.close()


def test_path_layout(tmp_path, qs):
    assert qs.directory == tmp_path / "query-store" / "master-4" / "generation-2"
    assert qs.path == qs.directory / "store.sqlite" and qs.path.is_file()
    assert qs.shard == shard_of(4, 2) == "g2-m4"


def test_tokens_embed_generation_and_master_and_are_unique(qs):
    tokens = [qs.issue(W1, I1, 5) for _ in range(3)] + [qs.issue(W2, I2, 6)]
    assert tokens == ["2.4.1", "2.4.2", "2.4.3", "2.4.4"]
    assert qs.counts() == {"leased": 4}


def test_accept_exactly_once(qs):
    token = qs.issue(W1, I1, 5)
    qs.accept(2, qs.shard, token, W1, 5)
    assert qs.counts() == {"accepted": 1}
    with pytest.raises(FenceError, match="accepted, not outstanding"):
        qs.accept(2, qs.shard, token, W1, 5)


def test_stale_generation(qs):
    token = qs.issue(W1, I1, 5)
    with pytest.raises(StaleGeneration):
        qs.accept(1, qs.shard, token, W1, 5)
    with pytest.raises(StaleGeneration):
        qs.accept(3, qs.shard, token, W1, 5)
    assert qs.counts() == {"leased": 1}


@pytest.mark.parametrize(
    "shard, token, work, worker",
    [
        ("g2-m0", None, W1, 5),  # another master's shard
        ("g1-m4", None, W1, 5),  # this master's shard of another generation
        (None, "2.4.99", W1, 5),  # never issued
        (None, "1.4.1", W1, 5),  # a token of another generation
        (None, None, W2, 5),  # other work
        (None, None, W1, 6),  # other worker
    ],
)
def test_fences(qs, shard, token, work, worker):
    issued = qs.issue(W1, I1, 5)
    with pytest.raises(FenceError) as info:
        qs.accept(2, shard or qs.shard, token or issued, work, worker)
    assert type(info.value) is FenceError
    assert qs.counts() == {"leased": 1}
    qs.accept(2, qs.shard, issued, W1, 5)  # the genuine result still goes through


def test_release(qs):
    token = qs.issue(W1, I1, 5)
    qs.release(token)
    assert qs.counts() == {"released": 1}
    with pytest.raises(FenceError, match="released"):
        qs.accept(2, qs.shard, token, W1, 5)
    accepted = qs.issue(W1, I1, 5)
    qs.accept(2, qs.shard, accepted, W1, 5)
    qs.release(accepted)  # an accepted lease is not released afterwards
    assert qs.counts() == {"released": 1, "accepted": 1}


def test_state_survives_reopen(tmp_path):
    a = QueryStore(tmp_path / "qs", 0, 1, 0o600, 0o700)
    token = a.issue(W1, I1, 2)
    a.close()
    b = QueryStore(tmp_path / "qs", 0, 1, 0o600, 0o700)
    assert b.issue(W1, I1, 3) == "1.0.2"  # sequence continues, never reuses a token
    b.accept(1, "g1-m0", token, W1, 2)
    b.close()


@pytest.mark.parametrize("other", [(5, 2), (4, 3), (5, 3)])
def test_reopen_with_another_identity_in_the_same_dir(tmp_path, other):
    a = QueryStore(tmp_path / "qs", 4, 2, 0o600, 0o700)
    a.issue(W1, I1, 5)
    a.close()
    master, generation = other
    moved = tmp_path / "qs" / f"master-{master}" / f"generation-{generation}"
    moved.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(tmp_path / "qs" / "master-4" / "generation-2", moved)
    with pytest.raises(StoreError, match="belongs to"):
        QueryStore(tmp_path / "qs", master, generation, 0o600, 0o700)


def test_separate_masters_and_generations_do_not_share(tmp_path):
    a = QueryStore(tmp_path / "qs", 0, 0, 0o600, 0o700)
    b = QueryStore(tmp_path / "qs", 4, 0, 0o600, 0o700)
    c = QueryStore(tmp_path / "qs", 0, 1, 0o600, 0o700)
    ta, tb, tc = a.issue(W1, I1, 1), b.issue(W1, I1, 5), c.issue(W1, I1, 1)
    assert len({a.path, b.path, c.path}) == 3
    assert (ta, tb, tc) == ("0.0.1", "0.4.1", "1.0.1")
    with pytest.raises(FenceError):
        a.accept(0, a.shard, tb, W1, 5)  # another master's token
    with pytest.raises(StaleGeneration):
        c.accept(0, a.shard, ta, W1, 1)
    for s in (a, b, c):
        s.close()


@pytest.mark.parametrize("file_mode, dir_mode", [(0o600, 0o700), (0o640, 0o750), (0o660, 0o770)])
def test_file_mode_honoured_under_hostile_umask(tmp_path, file_mode, dir_mode):
    old = os.umask(0o077)
    try:
        s = QueryStore(tmp_path / "qs", 1, 0, file_mode, dir_mode)
        s.issue(W1, I1, 2)
        sidecars = [p for p in s.directory.iterdir() if p.name != "store.sqlite"]
        modes = {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in s.directory.iterdir()}
        s.close()
    finally:
        os.umask(old)
    assert modes["store.sqlite"] == file_mode
    assert {p.name for p in sidecars} == {"store.sqlite-wal", "store.sqlite-shm"}
    for p in sidecars:  # -wal / -shm journal files follow the database's mode
        assert modes[p.name] == file_mode, modes
    for p in (tmp_path / "qs" / "master-1", tmp_path / "qs" / "master-1" / "generation-0"):
        assert stat.S_IMODE(os.stat(p).st_mode) == dir_mode


def test_corrupt_database_is_a_store_error(tmp_path):
    d = tmp_path / "qs" / "master-0" / "generation-0"
    d.mkdir(parents=True)
    (d / "store.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        QueryStore(tmp_path / "qs", 0, 0, 0o600, 0o700)


def test_concurrent_issue_gives_unique_tokens(tmp_path):
    QueryStore(tmp_path / "qs", 0, 0, 0o600, 0o700).close()
    tokens: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def go():
        try:
            s = QueryStore(tmp_path / "qs", 0, 0, 0o600, 0o700)  # one connection per thread
            mine = [s.issue(W1, I1, 1) for _ in range(25)]
            s.close()
            with lock:
                tokens.extend(mine)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(tokens) == len(set(tokens)) == 100
