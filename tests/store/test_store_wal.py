"""The work WAL: transitions, fences, canonical manifests, replay, and torn/edited records."""

from __future__ import annotations

import json
import os
import stat

import pytest
from helpers.store import EXECUTOR, input_hash, make_lease, open_env, sha, stage_manifest

from symcc_ulfm.core.canonical import canonical_json, sha256_hex
from symcc_ulfm.errors import CorpusIntegrityError, FenceError, IntegrityError, StaleGeneration, WalCorruption
from symcc_ulfm.store.record import WAL_FORMAT, canonical_manifest, manifest_objects, parse_record, work_hash
from symcc_ulfm.store.staging import staged_name
from symcc_ulfm.store.wal import RECORD_LOCKS, AlreadyDone, NeedsReplay

COMMITTER = {"generation": 0, "master": 0}


@pytest.fixture
def env(tmp_path):
    return open_env(tmp_path / "state", lock_timeout_s=5.0)


def leased(env, i=0, gen=0, master=0, worker=1, token=None):
    lease = make_lease(gen, master, worker, token)
    env.wal.lease(input_hash(i), EXECUTOR, lease)
    return work_hash(input_hash(i), EXECUTOR), lease


def committing(env, payloads, i=0, gen=0, master=0, worker=1, token=None):
    work, lease = leased(env, i, gen, master, worker, token)
    manifest = stage_manifest(env, lease, payloads)
    env.wal.begin_commit(work, lease, manifest)
    return work, lease, manifest


def staged_left(env, worker) -> list[str]:
    return os.listdir(env.root / "staging" / f"worker-{worker}")


def record_bytes(env, work) -> bytes:
    return env.wal.path(work).read_bytes()


def rewrite(env, work, mutate, fix_checksum=False):
    """Edit the record's current state (its last line)."""
    path = env.wal.path(work)
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[-1])
    mutate(record)
    if fix_checksum:
        body = {k: v for k, v in record.items() if k != "checksum"}
        record["checksum"] = sha256_hex(canonical_json(body))
    path.write_bytes(b"".join(lines[:-1]) + canonical_json(record) + b"\n")


# -- leasing -----------------------------------------------------------------------------------


def test_work_hash_is_the_identity():
    assert work_hash(input_hash(0), EXECUTOR) == work_hash(input_hash(0), EXECUTOR)
    assert work_hash(input_hash(0), EXECUTOR) != work_hash(input_hash(0), sha(b"other executor"))
    assert work_hash(input_hash(0), EXECUTOR) != work_hash(input_hash(1), EXECUTOR)


def test_new_lease(env):
    work, lease = leased(env)
    record = env.wal.read(work)
    assert record["state"] == "leased" and record["lease"] == lease
    assert record["manifest"] is None and record["done"] is None and record["history"] == []
    assert record["input_hash"] == input_hash(0) and record["executor_sha256"] == EXECUTOR
    assert env.wal.work_hashes() == [work]
    assert [r["work_hash"] for r in env.wal.records()] == [work]
    assert stat.S_IMODE(os.stat(env.wal.path(work)).st_mode) == env.state.modes.snapshot
    assert env.wal.read(work_hash(input_hash(9), EXECUTOR)) is None


def test_record_mode_under_hostile_umask(env):
    old = os.umask(0o077)
    try:
        env.wal.mode = 0o640
        work, _ = leased(env)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(env.wal.path(work)).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(env.wal.locks_dir / RECORD_LOCKS).st_mode) == 0o640
    assert os.listdir(env.wal.locks_dir) == [RECORD_LOCKS]  # one lock file for every record


def test_same_master_may_re_lease_in_its_generation(env):
    work, first = leased(env, worker=1, token="0.0.1")
    second = make_lease(0, 0, 2, token="0.0.2")
    record = env.wal.lease(input_hash(0), EXECUTOR, second)
    assert record["lease"] == second
    assert record["history"] == [{"state": "leased", **first}]
    assert env.wal.read(work) == record


def test_other_master_same_generation_is_fenced(env):
    leased(env, master=0)
    with pytest.raises(FenceError) as info:
        env.wal.lease(input_hash(0), EXECUTOR, make_lease(0, 4, 5))
    assert type(info.value) is FenceError


def test_older_generation_cannot_take_a_newer_lease(env):
    leased(env, gen=2, master=4)
    with pytest.raises(StaleGeneration):
        env.wal.lease(input_hash(0), EXECUTOR, make_lease(1, 4, 5))


def test_lapsed_lease_is_re_leased_by_a_newer_generation(env):
    work, old = leased(env, gen=0, master=0, worker=2)
    new = make_lease(1, 6, 7)
    record = env.wal.lease(input_hash(0), EXECUTOR, new)
    assert record["lease"] == new and record["history"] == [{"state": "leased", **old}]
    # the old lease can no longer commit
    manifest = stage_manifest(env, old, [b"late"])
    with pytest.raises(StaleGeneration):
        env.wal.begin_commit(work, old, manifest)
    assert env.wal.read(work)["state"] == "leased"


@pytest.mark.parametrize(
    "lease",
    [
        None,
        {},
        {"generation": 0, "master": 0, "worker": 1, "shard": "s"},
        {"generation": 0, "master": 0, "worker": 1, "shard": "s", "token": "t", "extra": 1},
        {"generation": -1, "master": 0, "worker": 1, "shard": "s", "token": "t"},
        {"generation": 0, "master": "0", "worker": 1, "shard": "s", "token": "t"},
        {"generation": 0, "master": 0, "worker": True, "shard": "s", "token": "t"},
    ],
)
def test_malformed_lease_is_refused(env, lease):
    with pytest.raises(FenceError):
        env.wal.lease(input_hash(0), EXECUTOR, lease)
    assert env.wal.work_hashes() == []


# -- begin_commit ------------------------------------------------------------------------------


def test_begin_commit_writes_canonical_manifest(env):
    work, lease = leased(env)
    manifest = stage_manifest(env, lease, [b"b", b"a", b"c"])
    record = env.wal.begin_commit(work, lease, manifest | {"stats": {"seconds": 1.0}})
    assert record["state"] == "committing"
    shas = [o["sha256"] for o in manifest_objects(record)]
    assert shas == sorted(shas) and set(shas) == {sha(b"a"), sha(b"b"), sha(b"c")}
    assert record["manifest"]["generated"] == 3 and record["manifest"]["stats"] == {"seconds": 1.0}
    assert env.wal.read(work) == record


@pytest.mark.parametrize("generated", [2, 4, 9 * 10**17])
def test_generated_is_the_number_of_staged_objects_not_the_workers_word(env, generated):
    """WAL format 5: 'generated' counts the distinct objects the master staged and checked."""
    work, lease = leased(env)
    manifest = stage_manifest(env, lease, [b"b", b"a", b"c"], generated=generated)
    with pytest.raises(FenceError, match="number of its objects"):
        env.wal.begin_commit(work, lease, manifest)
    assert env.wal.read(work)["state"] == "leased"


def test_canonical_manifest_is_order_independent_and_dedupes(tmp_path):
    payloads = [b"one", b"two", b"three", b"four"]
    outputs = []
    for n, order in enumerate([payloads, list(reversed(payloads)), payloads[2:] + payloads[:2] + [b"one"]]):
        env = open_env(tmp_path / f"s{n}")
        work, lease = leased(env)
        manifest = stage_manifest(env, lease, order, generated=len(set(order)))
        env.wal.begin_commit(work, lease, manifest)
        outputs.append(record_bytes(env, work))
    assert outputs[0] == outputs[1] == outputs[2]
    m = {"objects": [{"sha256": "b" * 64}, {"sha256": "a" * 64}, {"sha256": "b" * 64}], "dropped": [], "kind": "test", "slice": None, "generated": 3, "findings": []}
    assert [o["sha256"] for o in canonical_manifest(m)["objects"]] == ["a" * 64, "b" * 64]


def test_begin_commit_stale_or_forged_lease(env):
    work, lease = leased(env, gen=1, master=4, worker=5, token="1.4.1")
    manifest = stage_manifest(env, lease, [b"x"])
    with pytest.raises(StaleGeneration):
        env.wal.begin_commit(work, lease | {"generation": 0}, manifest)
    for forged in (lease | {"token": "1.4.2"}, lease | {"worker": 6}, lease | {"master": 0}, lease | {"shard": "x"}):
        with pytest.raises(FenceError) as info:
            env.wal.begin_commit(work, forged, manifest)
        assert type(info.value) is FenceError
    assert env.wal.read(work)["state"] == "leased"
    env.wal.begin_commit(work, lease, manifest)


def test_begin_commit_refuses_staging_of_another_lease(env):
    work, lease = leased(env, worker=1, token="0.0.1")
    other = make_lease(0, 0, 2, token="0.0.9")
    for foreign in (other, lease | {"token": "0.0.9"}, lease | {"worker": 2}):
        manifest = stage_manifest(env, foreign, [b"not mine"])
        with pytest.raises(FenceError, match="not staged under lease"):
            env.wal.begin_commit(work, lease, manifest)
    assert env.wal.read(work)["state"] == "leased"


def test_begin_commit_in_wrong_states(env):
    with pytest.raises(FenceError, match="no WAL record"):
        env.wal.begin_commit(work_hash(input_hash(5), EXECUTOR), make_lease(0, 0, 1),
                             {"objects": [], "dropped": [], "kind": "test", "slice": None, "generated": 0, "findings": []})
    work, lease, manifest = committing(env, [b"x"])
    with pytest.raises(FenceError, match="committing, not leased"):
        env.wal.begin_commit(work, lease, manifest)
    env.wal.replay_commit_once(work, COMMITTER)
    with pytest.raises(FenceError, match="done, not leased"):
        env.wal.begin_commit(work, lease, manifest)


def _obj(data=b"x", **kw):
    o = {"sha256": sha(data), "length": len(data), "staging": staged_name(1, "0.0.1", sha(data))}
    o.update(kw)
    return o


@pytest.mark.parametrize(
    "manifest",
    [
        None,
        {},
        {"objects": "x", "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": [_obj()]},
        {"objects": [_obj()], "dropped": [], "kind": "test", "slice": None, "generated": 0, "findings": []},
        {"objects": [_obj()], "dropped": [], "kind": "test", "slice": None, "generated": 1.0},
        {"objects": [_obj(sha256="X" * 64)], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": [_obj(length=-1)], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": [_obj(length=True)], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": [_obj(staging="../x")], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": [_obj(staging=staged_name(1, "0.0.1", sha(b"y")))], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": [_obj(staging=f"staging/worker-1/0.0.1/{sha(b'x')}")], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},  # format wal/2
        {"objects": [_obj(staging=None)], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
        {"objects": ["x"], "dropped": [], "kind": "test", "slice": None, "generated": 1, "findings": []},
    ],
)
def test_malformed_manifest_is_refused(env, manifest):
    work, lease = leased(env, token="0.0.1")
    with pytest.raises(FenceError):
        env.wal.begin_commit(work, lease, manifest)
    assert env.wal.read(work)["state"] == "leased"


def test_lease_of_committing_and_done(env):
    work, lease, _ = committing(env, [b"x"])
    with pytest.raises(NeedsReplay):
        env.wal.lease(input_hash(0), EXECUTOR, make_lease(1, 4, 5))
    env.wal.replay_commit_once(work, COMMITTER)
    with pytest.raises(AlreadyDone):
        env.wal.lease(input_hash(0), EXECUTOR, make_lease(1, 4, 5))
    assert issubclass(AlreadyDone, FenceError) and issubclass(NeedsReplay, FenceError)


# -- replay ------------------------------------------------------------------------------------


def test_replay_publishes_claims_and_marks_done(env):
    work, lease, manifest = committing(env, [b"alpha", b"beta"], worker=3, token="0.0.7")
    record = env.wal.replay_commit_once(work, {"generation": 0, "master": 0})
    assert record["state"] == "done"
    assert record["done"] == {"generation": 0, "master": 0, "claimed": sorted([sha(b"alpha"), sha(b"beta")])}
    assert env.wal.read(work) == record
    assert env.corpus.read(sha(b"alpha")) == b"alpha" and env.corpus.read(sha(b"beta")) == b"beta"
    assert env.corpus.claim_owner(sha(b"alpha")) == work
    assert staged_left(env, 3) == []


def test_replay_publishes_the_staged_file_itself(env):
    """The object is the staged inode (a link, no copy), with the corpus mode, and one name left."""
    work, lease, manifest = committing(env, [b"alpha"], worker=3, token="0.0.7")
    staged = os.stat(env.root / manifest["objects"][0]["staging"])
    assert stat.S_IMODE(staged.st_mode) != env.corpus.object_mode  # staged 0600, published 0644
    env.wal.replay_commit_once(work, COMMITTER)
    published = os.stat(env.corpus.path(sha(b"alpha")))
    assert (published.st_ino, published.st_nlink) == (staged.st_ino, 1)
    assert stat.S_IMODE(published.st_mode) == env.corpus.object_mode


def test_replay_re_checks_the_staged_bytes_it_publishes(env):
    """A staged file changed after the manifest was written is refused, never published."""
    work, lease, manifest = committing(env, [b"alpha"], worker=3, token="0.0.7")
    (env.root / manifest["objects"][0]["staging"]).write_bytes(b"omega")
    with pytest.raises(IntegrityError, match="SHA-256"):
        env.wal.replay_commit_once(work, COMMITTER)
    assert env.wal.read(work)["state"] == "committing" and list(env.corpus.names()) == []


def test_replay_of_done_is_a_noop(env):
    work, _, _ = committing(env, [b"x"])
    env.wal.replay_commit_once(work, COMMITTER)
    before = record_bytes(env, work)
    again = env.wal.replay_commit_once(work, {"generation": 5, "master": 9})
    assert again["done"]["master"] == 0 and record_bytes(env, work) == before


def test_replay_of_done_finishes_staging_cleanup(env):
    work, lease, manifest = committing(env, [b"x"])
    env.wal.replay_commit_once(work, COMMITTER)
    stage_manifest(env, lease, [b"x"])  # as if a crash at wal.done left the staging behind
    env.wal.replay_commit_once(work, COMMITTER)
    assert staged_left(env, 1) == []


def test_replay_of_leased_or_missing_is_refused(env):
    work, _ = leased(env)
    with pytest.raises(FenceError, match="nothing to replay"):
        env.wal.replay_commit_once(work, COMMITTER)
    with pytest.raises(FenceError, match="no WAL record"):
        env.wal.replay_commit_once(work_hash(input_hash(7), EXECUTOR), COMMITTER)


def test_shared_objects_are_claimed_by_the_first_record(env):
    a, _, _ = committing(env, [b"shared", b"only-a"], i=0, worker=1, token="0.0.1")
    b, lease_b, _ = committing(env, [b"shared", b"only-b"], i=1, worker=2, token="0.0.2")
    ra = env.wal.replay_commit_once(a, COMMITTER)
    rb = env.wal.replay_commit_once(b, COMMITTER)
    assert set(ra["done"]["claimed"]) == {sha(b"shared"), sha(b"only-a")}
    assert rb["done"]["claimed"] == [sha(b"only-b")]
    assert env.corpus.claim_owner(sha(b"shared")) == a
    assert staged_left(env, 2) == []  # b's unused staging is removed too
    assert sorted(env.corpus.names()) == sorted(sha(x) for x in (b"shared", b"only-a", b"only-b"))


def test_seed_objects_are_not_recounted(env):
    env.corpus.publish_seed(b"seed")
    work, _, _ = committing(env, [b"seed", b"new"])
    record = env.wal.replay_commit_once(work, COMMITTER)
    assert record["done"]["claimed"] == [sha(b"new")]


@pytest.mark.parametrize("damage", ["missing", "tampered", "truncated", "symlink"])
def test_bad_staging_leaves_committing_and_a_repaired_replay_succeeds(env, tmp_path, damage):
    payloads = [b"first-object", b"second-object", b"third-object"]
    work, lease, manifest = committing(env, payloads)
    objects = manifest_objects(env.wal.read(work))
    victim = objects[1]  # the middle one in canonical (sha) order
    path = env.root / victim["staging"]
    original = path.read_bytes()
    if damage == "missing":
        path.unlink()
    elif damage == "tampered":
        path.write_bytes(bytes([original[0] ^ 1]) + original[1:])
    elif damage == "truncated":
        path.write_bytes(original[:-1])
    else:
        (tmp_path / "elsewhere").write_bytes(original)
        path.unlink()
        path.symlink_to(tmp_path / "elsewhere")
    before = record_bytes(env, work)
    with pytest.raises(IntegrityError):
        env.wal.replay_commit_once(work, COMMITTER)
    assert record_bytes(env, work) == before and env.wal.read(work)["state"] == "committing"
    # nothing wrong was published: the victim is absent, everything present is genuine
    assert not env.corpus.has(victim["sha256"])
    assert env.corpus.verify() == []
    assert set(env.corpus.names()) <= {o["sha256"] for o in objects}
    # repair the staging; the next replay (possibly by another master) completes it
    path.unlink(missing_ok=True)
    path.write_bytes(original)
    record = env.wal.replay_commit_once(work, {"generation": 1, "master": 4})
    assert record["state"] == "done" and record["done"]["master"] == 4
    assert sorted(record["done"]["claimed"]) == sorted(o["sha256"] for o in objects)
    assert sorted(env.corpus.names()) == sorted(o["sha256"] for o in objects)
    assert env.corpus.verify() == []


def test_tampered_corpus_object_stops_a_replay(env):
    work, lease, manifest = committing(env, [b"aaa", b"bbb"])
    objects = manifest_objects(env.wal.read(work))
    first, second = objects
    second_path = env.root / second["staging"]
    saved = second_path.read_bytes()
    second_path.unlink()
    with pytest.raises(IntegrityError):
        env.wal.replay_commit_once(work, COMMITTER)
    assert env.corpus.has(first["sha256"])  # published before the failure
    env.corpus.path(first["sha256"]).write_bytes(b"zzz")  # now tampered
    second_path.write_bytes(saved)
    with pytest.raises(CorpusIntegrityError):
        env.wal.replay_commit_once(work, COMMITTER)
    assert env.wal.read(work)["state"] == "committing"


def test_manifest_of_no_objects(env):
    work, lease = leased(env)
    env.wal.begin_commit(work, lease, {"objects": [], "dropped": [], "kind": "test", "slice": None, "generated": 0, "findings": [], "error": "timeout"})
    record = env.wal.replay_commit_once(work, COMMITTER)
    assert record["state"] == "done" and record["done"]["claimed"] == []


def _finding(sha256, **kw):
    return {"kind": "crash", "signature": "SIGSEGV at t.py:parse:3", "detail": "SIGSEGV", "sha256": sha256,
            "time": 1.5, **kw}


def test_manifest_findings_name_the_input_or_an_object(env):
    work, lease = leased(env)
    manifest = stage_manifest(env, lease, [b"x", b"y"])
    manifest["input_hash"] = input_hash(0)
    manifest["findings"] = [_finding(sha(b"y")), _finding(input_hash(0), kind="hang", signature="hang in t.py:f")]
    env.wal.begin_commit(work, lease, manifest)
    record = env.wal.replay_commit_once(work, COMMITTER)
    assert [f["kind"] for f in record["manifest"]["findings"]] == ["crash", "hang"]


@pytest.mark.parametrize("bad", [
    None,
    [_finding(sha(b"elsewhere"))],  # neither the input nor an object of the manifest
    [_finding(sha(b"x"), kind="ok")],
    [_finding(sha(b"x"), kind="segfault")],
    [_finding(sha(b"x"), signature="")],
    [_finding(sha(b"x"), signature="s" * 401)],
    [_finding(sha(b"x"), time=float("nan"))],
    [{**_finding(sha(b"x")), "extra": 1}],
    [{k: v for k, v in _finding(sha(b"x")).items() if k != "time"}],
])
def test_manifest_with_a_bad_finding_is_refused(env, bad):
    work, lease = leased(env)
    manifest = stage_manifest(env, lease, [b"x"])
    manifest["findings"] = bad
    with pytest.raises(FenceError, match="finding"):
        env.wal.begin_commit(work, lease, manifest)
    assert env.wal.read(work)["state"] == "leased"


# -- torn, partial and edited records ----------------------------------------------------------


def _all_ops_raise(env, work, error=WalCorruption):
    with pytest.raises(error):
        env.wal.read(work)
    with pytest.raises(error):
        env.wal.lease(input_hash(0), EXECUTOR, make_lease(3, 0, 1))
    with pytest.raises(error):
        env.wal.begin_commit(work, make_lease(0, 0, 1), {"objects": [], "dropped": [], "kind": "test", "slice": None, "generated": 0, "findings": []})
    with pytest.raises(error):
        env.wal.replay_commit_once(work, COMMITTER)
    with pytest.raises(error):
        list(env.wal.records())


def _in_state(env, state, payloads=(b"x",)):
    work, _, _ = committing(env, list(payloads)) if state != "leased" else (*leased(env), None)
    if state == "done":
        env.wal.replay_commit_once(work, COMMITTER)
    return work


PREVIOUS = {"committing": "leased", "done": "committing"}


@pytest.mark.parametrize("state", ["leased", "committing", "done"])
@pytest.mark.parametrize("cut", [0, 1, 10])
def test_truncated_record(env, state, cut):
    work = _in_state(env, state)
    data = record_bytes(env, work)
    env.wal.path(work).write_bytes(data[:cut] if cut else b"")
    _all_ops_raise(env, work)


@pytest.mark.parametrize("cut", [-1, -2])
def test_torn_only_line(env, cut):
    work = _in_state(env, "leased")
    env.wal.path(work).write_bytes(record_bytes(env, work)[:cut])
    _all_ops_raise(env, work)


@pytest.mark.parametrize("state", ["committing", "done"])
@pytest.mark.parametrize("cut", [-1, -2, -300])
def test_torn_last_append_is_a_transition_that_never_happened(env, state, cut):
    """A crash in the middle of an append leaves a line without its newline: the record is
    in its previous, durable state, and the next transition drops the torn tail."""
    work = _in_state(env, state)
    env.wal.path(work).write_bytes(record_bytes(env, work)[:cut])
    assert env.wal.read(work)["state"] == PREVIOUS[state]
    if state == "done":
        assert env.wal.replay_commit_once(work, COMMITTER)["state"] == "done"
        data = record_bytes(env, work)
        assert data.endswith(b"\n") and [json.loads(line)["state"] for line in data.splitlines()] == [
            "leased", "committing", "done"]


def test_damage_to_an_earlier_line_is_corruption(env):
    work = _in_state(env, "done")
    lines = record_bytes(env, work).splitlines(keepends=True)
    env.wal.path(work).write_bytes(lines[0][:-5] + lines[0][-4:] + b"".join(lines[1:]))
    _all_ops_raise(env, work)


def test_lines_out_of_order_are_corruption(env):
    work = _in_state(env, "done")
    first, second, third = record_bytes(env, work).splitlines(keepends=True)
    env.wal.path(work).write_bytes(first + third + second)
    with pytest.raises(WalCorruption, match="goes leased -> done"):
        env.wal.read(work)


@pytest.mark.parametrize("old, newline", [("symcc-ulfm-wal/1", b""), ("symcc-ulfm-wal/2", b"\n"),
                                          ("symcc-ulfm-wal/3", b"\n")])
def test_a_record_of_an_older_format_is_named(env, old, newline):
    work = _in_state(env, "leased")
    line = record_bytes(env, work)[:-1].replace(WAL_FORMAT.encode(), old.encode())
    env.wal.path(work).write_bytes(line + newline)
    with pytest.raises(WalCorruption, match=f"format {old}: .*older symcc_ulfm"):
        env.wal.read(work)


@pytest.mark.parametrize("state", ["leased", "committing", "done"])
def test_every_flipped_byte_is_detected(env, state):
    work = _in_state(env, state, (b"x", b"y"))
    data = record_bytes(env, work)
    path = env.wal.path(work)
    indices = [*range(0, len(data), max(1, len(data) // 97)), len(data) - 1]
    for i in indices:
        for flip in (0x01, 0x20, 0x80):
            path.write_bytes(data[:i] + bytes([data[i] ^ flip]) + data[i + 1 :])
            if i == len(data) - 1 and state != "leased":  # the final newline: a torn last append
                assert env.wal.read(work)["state"] == PREVIOUS[state]
                continue
            with pytest.raises(WalCorruption):
                env.wal.read(work)
    path.write_bytes(data)
    assert env.wal.read(work)["state"] == state


EDITS = [
    ("state committing->done", lambda r: r.update(state="done")),
    ("lease token", lambda r: r["lease"].update(token="9.9.9")),
    ("lease generation", lambda r: r["lease"].update(generation=7)),
    ("manifest object dropped", lambda r: r["manifest"]["objects"].pop()),
    ("generated", lambda r: r["manifest"].update(generated=100)),
    ("input hash", lambda r: r.update(input_hash="0" * 64)),
    ("history", lambda r: r["history"].append({"state": "leased"})),
]


@pytest.mark.parametrize("name, edit", EDITS, ids=[e[0] for e in EDITS])
def test_edited_field_keeping_json_valid(env, name, edit):
    work, _, _ = committing(env, [b"x", b"y"])
    rewrite(env, work, edit)
    _all_ops_raise(env, work)


FORGED = [
    ("state without done", lambda r: r.update(state="done")),
    ("leased with manifest", lambda r: r.update(state="leased")),
    ("unknown state", lambda r: r.update(state="published")),
    ("other work hash", lambda r: r.update(input_hash="0" * 64)),
    ("missing key", lambda r: r.pop("history")),
    ("extra key", lambda r: r.update(extra=1)),
    ("format", lambda r: r.update(format="symcc-ulfm-wal/9")),
    ("lease shape", lambda r: r["lease"].pop("token")),
    ("lease type", lambda r: r["lease"].update(worker="1")),
    ("manifest shape", lambda r: r["manifest"].update(objects="x")),
    ("manifest staging", lambda r: r["manifest"]["objects"][0].update(staging="/etc/passwd")),
]


@pytest.mark.parametrize("name, edit", FORGED, ids=[f[0] for f in FORGED])
def test_inconsistent_record_with_a_valid_checksum(env, name, edit):
    work, _, _ = committing(env, [b"x", b"y"])
    rewrite(env, work, edit, fix_checksum=True)
    _all_ops_raise(env, work)


def test_record_under_another_name(env):
    a, _ = leased(env, i=0)
    b, _ = leased(env, i=1)
    env.wal.path(b).write_bytes(record_bytes(env, a))
    with pytest.raises(WalCorruption, match="holds work"):
        env.wal.read(b)
    assert env.wal.read(a)["work_hash"] == a


@pytest.mark.parametrize("data", [b"", b"\x00" * 10, b"\xff{}", b"[]", b"{}", b"null", "{\"é\":1}".encode()])
def test_parse_record_garbage(data):
    with pytest.raises(WalCorruption):
        parse_record(data, expected_work="a" * 64)


def test_corruption_is_an_integrity_error():
    assert issubclass(WalCorruption, IntegrityError) and WalCorruption.exit_code == 4


def test_bad_work_names(env):
    for bad in ("x", "A" * 64, "../" + "a" * 61):
        with pytest.raises(WalCorruption):
            env.wal.path(bad)
        with pytest.raises(WalCorruption):
            env.wal.replay_commit_once(bad, COMMITTER)


def test_listing_ignores_temp_files(env):
    work, _ = leased(env)
    (env.wal.records_dir / f".tmp-{work}.json-1-abcd").write_bytes(b"partial")
    (env.wal.records_dir / "notes.txt").write_bytes(b"")
    assert env.wal.work_hashes() == [work]


def test_lock_timeout_is_a_store_error(env):
    from symcc_ulfm.errors import StoreError

    work, lease, _ = committing(env, [b"x"])
    env.wal.lock_timeout_s = 0.1
    with env.wal.record_lock(work):
        with pytest.raises(StoreError, match="still held"):
            env.wal.replay_commit_once(work, COMMITTER)
    assert env.wal.read(work)["state"] == "committing"
