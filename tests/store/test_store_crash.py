"""SIGKILL at every durable step boundary, then replay: the state equals an uncrashed run's.

Each crash test runs a scenario in a child interpreter with ``SYMCC_ULFM_CRASH_AT=<point>#<n>``
(see ``store/crashpoints.py``), checks that the child died by SIGKILL exactly there, then finishes
the work in this process the way a master of the next generation would and compares every
durable fact with a run that never crashed.
"""

from __future__ import annotations

import signal

import pytest
from helpers.store import (
    EXECUTOR,
    commit_state,
    input_hash,
    membership_state,
    open_env,
    recover_commit_scenario,
    recover_membership_scenario,
    run_child,
    run_commit_scenario,
    run_membership_scenario,
    sha,
)

from symcc_ulfm.store.crashpoints import CRASH_POINTS, crash_point
from symcc_ulfm.store.record import work_hash

# How many times each point is reached by the scenarios in helpers.store (3 works sharing
# objects; two membership recoveries). test_hit_counts checks these numbers.
COMMIT_HITS = {
    "wal.leased": 3,
    "wal.committing": 3,
    "commit.claimed": 4,  # alpha, beta (work 0); gamma, delta (work 1); work 2's delta is claimed already
    "commit.published": 4,
    "commit.objects": 3,
    "wal.done": 3,
    "commit.staging-removed": 3,
}
MEMBERSHIP_HITS = {
    "membership.prepared": 2,
    "membership.layout": 2,
    "membership.snapshot": 2,
    "membership.receipt": 2,
}
COMMIT_CASES = [f"{p}#{n}" for p, hits in COMMIT_HITS.items() for n in range(1, hits + 1)]
MEMBERSHIP_CASES = [f"{p}#{n}" for p, hits in MEMBERSHIP_HITS.items() for n in range(1, hits + 1)]

W0, W1, W2 = (work_hash(input_hash(i), EXECUTOR) for i in range(3))


def test_every_crash_point_is_covered():
    """Adding a crash point without a crash test here fails."""
    covered = set(COMMIT_HITS) | set(MEMBERSHIP_HITS)
    assert covered == set(CRASH_POINTS)
    assert len(CRASH_POINTS) == len(set(CRASH_POINTS))


def test_hit_counts(tmp_path, monkeypatch):
    from collections import Counter

    from symcc_ulfm.store import corpus, snapshots, wal

    hits = Counter()
    for module in (corpus, snapshots, wal):
        monkeypatch.setattr(module, "crash_point", lambda name: hits.update([name]))
    run_commit_scenario(tmp_path / "a")
    run_membership_scenario(tmp_path / "b")
    assert dict(hits) == COMMIT_HITS | MEMBERSHIP_HITS


@pytest.fixture(scope="module")
def reference_commit(tmp_path_factory):
    env = run_commit_scenario(tmp_path_factory.mktemp("reference-commit") / "state")
    return commit_state(env)


@pytest.fixture(scope="module")
def reference_membership(tmp_path_factory):
    env = run_membership_scenario(tmp_path_factory.mktemp("reference-membership") / "state")
    return membership_state(env)


def test_reference_commit_state(reference_commit):
    state = reference_commit
    assert sorted(state["objects"]) == sorted(sha(x) for x in (b"alpha", b"beta", b"gamma", b"delta"))
    assert state["claims"] == {
        sha(b"alpha"): W0, sha(b"beta"): W0, sha(b"gamma"): W1, sha(b"delta"): W1
    }
    assert {w: r["state"] for w, r in state["records"].items()} == {W0: "done", W1: "done", W2: "done"}
    assert state["records"][W2]["claimed"] == []
    assert state["staging"] == [] and state["temp_files"] == []


def test_uncrashed_child_matches_in_process_run(tmp_path, reference_commit):
    out = run_child("commit", tmp_path / "state", None)
    assert out.returncode == 0, out.stderr
    assert commit_state(open_env(tmp_path / "state")) == reference_commit


@pytest.mark.parametrize("point", ["commit.claimed#5", "wal.leased#4", "membership.receipt#3", "no.such.point"])
def test_point_counts_beyond_the_hits_never_fire(tmp_path, point):
    scenario = "membership" if point.startswith("membership") else "commit"
    out = run_child(scenario, tmp_path / "state", point)
    assert out.returncode == 0, out.stderr


def test_crash_point_is_inert_without_the_variable(monkeypatch):
    monkeypatch.delenv("SYMCC_ULFM_CRASH_AT", raising=False)
    for name in CRASH_POINTS:
        crash_point(name)
    monkeypatch.setenv("SYMCC_ULFM_CRASH_AT", "some.other.point")
    for name in CRASH_POINTS:
        crash_point(name)


def _crash(scenario, root, point):
    out = run_child(scenario, root, point)
    assert out.returncode == -signal.SIGKILL, (out.returncode, out.stderr)
    return out


# What the state looks like right after the first hit of each point: proves the kill landed
# exactly at that boundary (not earlier, not later).
def _check_commit_boundary(point, env):
    records = {r["work_hash"]: r["state"] for r in env.wal.records()}
    objects = set(env.corpus.names())
    claims = sorted(p.name for p in env.corpus.claims.iterdir())
    staged = sorted(p.relative_to(env.root).as_posix() for p in env.state.staging.rglob("*") if p.is_file())
    if point == "wal.leased#1":
        assert records == {W0: "leased"} and staged == [] and objects == set()
    elif point == "wal.committing#1":
        assert records == {W0: "committing"} and len(staged) == 2 and objects == set() and claims == []
    elif point == "commit.claimed#1":
        assert records == {W0: "committing"} and len(claims) == 1 and objects == set()
    elif point == "commit.published#1":
        assert records == {W0: "committing"} and len(claims) == 1 and objects == set(claims)
    elif point == "commit.objects#1":
        assert records == {W0: "committing"} and objects == {sha(b"alpha"), sha(b"beta")}
    elif point == "wal.done#1":
        assert records == {W0: "done"} and len(staged) == 2
    elif point == "commit.staging-removed#1":
        assert records == {W0: "done"} and staged == []


@pytest.mark.parametrize("point", COMMIT_CASES)
def test_commit_crash_then_replay(tmp_path, reference_commit, point):
    root = tmp_path / "state"
    _crash("commit", root, point)
    env = open_env(root)
    _check_commit_boundary(point, env)
    assert env.corpus.verify() == []  # whatever is published is genuine, even mid-crash
    recover_commit_scenario(root)
    assert commit_state(open_env(root)) == reference_commit
    # a second replay changes nothing
    recover_commit_scenario(root)
    assert commit_state(open_env(root)) == reference_commit


SECOND_CRASHES = ["commit.claimed#1", "commit.published#1", "wal.done#1"]


@pytest.mark.parametrize("second", SECOND_CRASHES)
@pytest.mark.parametrize("first", ["wal.committing#1", "commit.claimed#2", "commit.objects#2", "wal.leased#3"])
def test_crash_during_recovery_then_replay(tmp_path, reference_commit, first, second):
    root = tmp_path / "state"
    _crash("commit", root, first)
    out = run_child("recover-commit", root, second)
    assert out.returncode in (0, -signal.SIGKILL), out.stderr
    recover_commit_scenario(root)
    assert commit_state(open_env(root)) == reference_commit


def test_reference_membership_state(reference_membership):
    names = sorted(reference_membership)
    assert names == sorted(
        ["generation-0-layout.json", "generation-0-snapshot.json", "prepare-1.json", "prepare-2.json"]
        + [f"generation-{g}-{k}.json" for g in (1, 2) for k in ("layout", "snapshot")]
        + ["receipt-1.json", "receipt-2.json"]
    )


def _check_membership_boundary(point, env):
    files = set(membership_state(env))
    if point == "membership.prepared#1":
        assert "prepare-1.json" in files and "generation-1-layout.json" not in files
    elif point == "membership.layout#1":
        assert "generation-1-layout.json" in files and "generation-1-snapshot.json" not in files
    elif point == "membership.snapshot#1":
        assert "generation-1-snapshot.json" in files and "receipt-1.json" not in files
        assert env.snapshots.current().generation == 0  # not authoritative without its receipt
    elif point == "membership.receipt#1":
        assert "receipt-1.json" in files and "prepare-2.json" not in files
        assert env.snapshots.current().generation == 1
    elif point == "membership.receipt#2":
        assert env.snapshots.current().generation == 2


@pytest.mark.parametrize("point", MEMBERSHIP_CASES)
def test_membership_crash_then_recover(tmp_path, reference_membership, point):
    root = tmp_path / "state"
    _crash("membership", root, point)
    env = open_env(root)
    _check_membership_boundary(point, env)
    env.snapshots.current()  # a crashed commit never leaves a state current() refuses
    recover_membership_scenario(root)
    env = open_env(root)
    assert membership_state(env) == reference_membership
    current = env.snapshots.current()
    assert current.generation == 2 and current.active == (0, 1, 4, 5, 6, 7, 8, 9)
    assert [r.missing for r in env.snapshots.receipts()] == [(2,), (3,)]
    assert [r.promoted for r in env.snapshots.receipts()] == [(8,), (9,)]


@pytest.mark.parametrize("second", ["membership.layout#1", "membership.receipt#1"])
@pytest.mark.parametrize("first", ["membership.prepared#1", "membership.snapshot#1", "membership.layout#2"])
def test_membership_crash_during_recovery(tmp_path, reference_membership, first, second):
    root = tmp_path / "state"
    _crash("membership", root, first)
    out = run_child("recover-membership", root, second)
    assert out.returncode in (0, -signal.SIGKILL), out.stderr
    recover_membership_scenario(root)
    assert membership_state(open_env(root)) == reference_membership
