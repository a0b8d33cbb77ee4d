"""The membership snapshot store: generation 0, prepare, receipts, layouts, the verified chain."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
from helpers.store import POLICY_SHA, run_unprivileged, unprivileged_unavailable, world_traversable_tmpdir

from symcc_ulfm.core.canonical import canonical_json
from symcc_ulfm.core.membership import Prepare, commit, initial_membership, plan
from symcc_ulfm.errors import MembershipConflict, SnapshotCorruption, StoreError
from symcc_ulfm.store.reads import MODE_HINT
from symcc_ulfm.store.snapshots import SnapshotStore


@pytest.fixture
def store(tmp_path):
    (tmp_path / "membership").mkdir()
    return SnapshotStore(tmp_path / "membership", 0o600)


def gen0():
    return initial_membership(10, 2, 3, ("node-a",) * 9 + ("node-b",), POLICY_SHA, 1700000000.25)


def advance(store, current, missing):
    prepared = store.prepare(current, missing)
    nxt, receipt = commit(current, prepared)
    store.commit(nxt, receipt)
    return nxt, receipt


@pytest.fixture
def chain(store):
    """Generation 0 -> 1 (2 missing) -> 2 (3 missing): the reference schedule."""
    m0 = gen0()
    store.write_generation0(m0)
    m1, r1 = advance(store, m0, (2,))
    m2, r2 = advance(store, m1, (3,))
    return [m0, m1, m2], [r1, r2]


def edit_json(path, mutate):
    value = json.loads(path.read_bytes())
    mutate(value)
    path.write_bytes(canonical_json(value))


# -- generation 0 ------------------------------------------------------------------------------


def test_generation_zero(store):
    m0 = gen0()
    store.write_generation0(m0)
    assert store.snapshot_path(0).read_bytes() == m0.to_bytes()
    assert store.layout_path(0).read_bytes() == m0.layout.to_bytes()
    assert store.load(0) == m0 and store.current() == m0
    assert store.receipts() == []
    store.write_generation0(m0)  # every rank may try: identical bytes are fine
    for path in (store.snapshot_path(0), store.layout_path(0)):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_generation_zero_fork_fails_closed(store):
    store.write_generation0(gen0())
    other = initial_membership(10, 2, 3, ("node-a",) * 10, POLICY_SHA, 1700000000.25)
    with pytest.raises(MembershipConflict, match="state fork"):
        store.write_generation0(other)
    with pytest.raises(ValueError):
        store.write_generation0(commit(gen0(), plan(gen0(), (2,)))[0])


def test_mode_is_exact_under_hostile_umask(tmp_path):
    (tmp_path / "m").mkdir()
    store = SnapshotStore(tmp_path / "m", 0o640)
    old = os.umask(0o077)
    try:
        m0 = gen0()
        store.write_generation0(m0)
        advance(store, m0, (2,))
    finally:
        os.umask(old)
    for path in (tmp_path / "m").iterdir():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640, path.name


# -- prepare -----------------------------------------------------------------------------------


def test_prepare_is_durable_and_idempotent(store):
    m0 = gen0()
    store.write_generation0(m0)
    p = store.prepare(m0, (2,))
    assert p == Prepare(1, m0.sha256, (2,))
    assert store.read_prepare(1) == p
    before = os.stat(store.prepare_path(1))
    assert store.prepare(m0, (2,)) == p
    after = os.stat(store.prepare_path(1))
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)  # not rewritten
    assert store.read_prepare(2) is None


def test_prepare_compatibility(store):
    m0 = gen0()
    store.write_generation0(m0)
    store.prepare(m0, (2,))
    grown = store.prepare(m0, (2, 5))  # a failure during discovery adds to the plan
    assert grown.missing == (2, 5) and store.read_prepare(1) == grown
    with pytest.raises(MembershipConflict):
        store.prepare(m0, (2,))  # the plan may not shrink
    with pytest.raises(MembershipConflict):
        store.prepare(m0, (7,))  # disjoint: a fork
    assert store.read_prepare(1) == grown  # a refused plan changes nothing


def test_prepare_from_another_snapshot_conflicts(store):
    m0 = gen0()
    store.write_generation0(m0)
    store.prepare(m0, (2,))
    other0 = initial_membership(10, 2, 3, (), POLICY_SHA, 0.0)
    with pytest.raises(MembershipConflict, match="another snapshot"):
        store.prepare(other0, (2,))


@pytest.mark.parametrize(
    "content",
    [
        b"{torn",
        b"[]",
        b'{"format":"symcc-ulfm-prepare/1","generation":1}',
        b'{"format":"symcc-ulfm-prepare/1","generation":1,"previous_sha256":"x","missing":3}',
        b'{"format":"symcc-ulfm-prepare/1","generation":2,"previous_sha256":"x","missing":[2]}',
        b'{"format":"symcc-ulfm-receipt/1","generation":1,"previous_sha256":"x","missing":[2]}',
    ],
)
def test_corrupt_prepare(store, content):
    m0 = gen0()
    store.write_generation0(m0)
    store.prepare_path(1).write_bytes(content)
    with pytest.raises(SnapshotCorruption):
        store.read_prepare(1)
    with pytest.raises(SnapshotCorruption):
        store.prepare(m0, (2,))


# -- commit ------------------------------------------------------------------------------------


def test_commit_and_current_walk_the_chain(store, chain):
    (m0, m1, m2), (r1, r2) = chain
    assert store.current() == m2
    assert store.current().active == (0, 1, 4, 5, 6, 7, 8, 9)
    assert store.current().layout.masters == (0, 6)
    assert store.receipts() == [r1, r2]
    assert [r.missing for r in store.receipts()] == [(2,), (3,)]
    assert [r.promoted for r in store.receipts()] == [(8,), (9,)]
    assert store.load(1) == m1 and store.load(0) == m0
    assert store.receipt_path(2).read_bytes() == r2.to_bytes()
    assert store.layout_path(2).read_bytes() == m2.layout.to_bytes()


def test_commit_is_create_only(store, chain):
    (m0, m1, m2), (r1, r2) = chain
    store.commit(m1, r1)  # the same bytes again: an idempotent retry
    forked, forked_receipt = commit(m0, Prepare(1, m0.sha256, (3,)))
    before = {p.name: p.read_bytes() for p in store.root.iterdir()}
    with pytest.raises(MembershipConflict, match="state fork"):
        store.commit(forked, forked_receipt)
    assert {p.name: p.read_bytes() for p in store.root.iterdir()} == before
    assert store.current() == m2


def test_commit_fork_detected_at_each_file(store):
    m0 = gen0()
    store.write_generation0(m0)
    m1, r1 = commit(m0, plan(m0, (2,)))
    store.commit(m1, r1)
    # same layout and snapshot, different receipt bytes
    other = type(r1)(r1.generation, r1.previous_sha256, r1.missing, r1.promoted, r1.snapshot_sha256, "0" * 64)
    with pytest.raises(MembershipConflict, match="receipt-1.json"):
        store.commit(m1, other)
    # same layout, other snapshot
    import dataclasses

    m1b = dataclasses.replace(m1, started_at=5.0)
    with pytest.raises(MembershipConflict, match="generation-1-snapshot.json"):
        store.commit(m1b, r1)


def test_snapshot_without_receipt_is_not_authoritative(store):
    m0 = gen0()
    store.write_generation0(m0)
    m1, r1 = commit(m0, plan(m0, (2,)))
    store.commit(m1, r1)
    store.receipt_path(1).unlink()
    assert store.current() == m0


# -- tampering ---------------------------------------------------------------------------------

TAMPER = [
    ("snapshot byte flip", "generation-1-snapshot.json", lambda b: b[:10] + bytes([b[10] ^ 1]) + b[11:]),
    ("snapshot truncated", "generation-2-snapshot.json", lambda b: b[:-3]),
    ("snapshot reformatted", "generation-1-snapshot.json", lambda b: json.dumps(json.loads(b), indent=1).encode()),
    ("layout byte flip", "generation-2-layout.json", lambda b: b.replace(b'"master":0', b'"master":1')),
    ("layout gen0", "generation-0-layout.json", lambda b: b + b" "),
    ("receipt truncated", "receipt-1.json", lambda b: b[: len(b) // 2]),
    ("receipt not json", "receipt-2.json", lambda b: b"\xff\xfe"),
    ("receipt list", "receipt-2.json", lambda b: b"[]"),
]


@pytest.mark.parametrize("name, filename, damage", TAMPER, ids=[t[0] for t in TAMPER])
def test_tampered_files(store, chain, name, filename, damage):
    path = store.root / filename
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(SnapshotCorruption):
        store.current()


EDITS = [
    ("receipt missing", "receipt-1.json", lambda v: v.update(missing=[3])),
    ("receipt promoted", "receipt-1.json", lambda v: v.update(promoted=[9])),
    ("receipt promoted dropped", "receipt-2.json", lambda v: v.update(promoted=[])),
    ("receipt layout sha", "receipt-2.json", lambda v: v.update(layout_sha256="0" * 64)),
    ("receipt snapshot sha", "receipt-1.json", lambda v: v.update(snapshot_sha256="0" * 64)),
    ("receipt previous sha", "receipt-2.json", lambda v: v.update(previous_sha256="0" * 64)),
    ("receipt generation", "receipt-2.json", lambda v: v.update(generation=3)),
    ("receipt format", "receipt-1.json", lambda v: v.update(format="symcc-ulfm-prepare/1")),
    ("receipt field removed", "receipt-1.json", lambda v: v.pop("promoted")),
    ("receipt field mistyped", "receipt-1.json", lambda v: v.update(missing=2)),
    ("receipt extra field", "receipt-1.json", lambda v: v.update(note="x")),
    ("snapshot active", "generation-1-snapshot.json", lambda v: v.update(active=[0, 1, 3, 4, 5, 6, 7, 9])),
    ("snapshot spares", "generation-1-snapshot.json", lambda v: v.update(spares=[])),
    ("snapshot failed", "generation-2-snapshot.json", lambda v: v.update(failed=[3])),
    ("snapshot generation", "generation-1-snapshot.json", lambda v: v.update(generation=2)),
    ("snapshot field removed", "generation-1-snapshot.json", lambda v: v.pop("budget")),
    ("snapshot hosts type", "generation-0-snapshot.json", lambda v: v.update(hosts="node-a")),
    ("snapshot active type", "generation-0-snapshot.json", lambda v: v.update(active=8)),
    ("snapshot format", "generation-0-snapshot.json", lambda v: v.update(format="x")),
]


@pytest.mark.parametrize("name, filename, edit", EDITS, ids=[e[0] for e in EDITS])
def test_edited_json_keeping_it_valid(store, chain, name, filename, edit):
    edit_json(store.root / filename, edit)
    with pytest.raises(SnapshotCorruption):
        store.current()


def test_consistently_forged_generation_is_caught(store, chain):
    """Rewrite generation 2 wholesale (snapshot, layout, receipt all consistent with each other but
    with a different missing set that is not what the previous generation could lead to)."""
    (m0, m1, m2), _ = chain
    import dataclasses

    forged = dataclasses.replace(m2, active=(0, 1, 3, 4, 5, 6, 7, 8), spares=(9,))  # claims nobody died
    receipt = type(store.receipts()[1])(2, m1.sha256, (3,), (9,), forged.sha256, forged.layout.sha256)
    store.snapshot_path(2).write_bytes(forged.to_bytes())
    store.layout_path(2).write_bytes(forged.layout.to_bytes())
    store.receipt_path(2).write_bytes(receipt.to_bytes())
    with pytest.raises(SnapshotCorruption):
        store.current()


def test_missing_receipt_in_the_middle(store, chain):
    store.receipt_path(1).unlink()
    with pytest.raises(SnapshotCorruption, match="receipt-1.json is missing"):
        store.receipts()
    with pytest.raises(SnapshotCorruption):
        store.current()


@pytest.mark.parametrize("filename", ["generation-2-snapshot.json", "generation-1-layout.json"])
def test_receipt_without_its_snapshot_or_layout(store, chain, filename):
    (store.root / filename).unlink()
    with pytest.raises(SnapshotCorruption):
        store.current()


def test_symlinked_snapshot_is_refused(store, chain, tmp_path):
    path = store.snapshot_path(1)
    (tmp_path / "copy").write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(tmp_path / "copy")
    with pytest.raises(StoreError, match="symbolic link"):
        store.current()


def test_no_generation_zero(store):
    with pytest.raises(FileNotFoundError):
        store.current()


def test_unreadable_file_explains_the_mode_contract():
    """chmod 000 on a snapshot, read by another (non-root) user: the message points at the mode."""
    reason = unprivileged_unavailable()
    if reason:
        pytest.skip(reason)
    root = world_traversable_tmpdir()
    try:
        membership = root / "membership"
        membership.mkdir()
        membership.chmod(0o755)
        store = SnapshotStore(membership, 0o600)
        store.write_generation0(gen0())
        store.snapshot_path(0).chmod(0o000)
        code = (
            "import sys; from pathlib import Path\n"
            "from symcc_ulfm.store.snapshots import SnapshotStore\n"
            "from symcc_ulfm.errors import StoreError\n"
            "try:\n"
            "    SnapshotStore(Path(sys.argv[1]), 0o600).current()\n"
            "except StoreError as exc:\n"
            "    print('StoreError:', exc)\n"
        )
        out = run_unprivileged(code, str(membership))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("StoreError:"), out.stdout
        assert "permission denied" in out.stdout and "SYMCC_ULFM_SNAPSHOT_FILE_MODE" in out.stdout
        assert MODE_HINT in out.stdout
    finally:
        shutil.rmtree(root)
