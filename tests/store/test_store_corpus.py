"""The content-addressed corpus, claims, and worker staging."""

from __future__ import annotations

import json
import os
import stat

import pytest
from helpers.store import open_env, sha

from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.errors import CorpusIntegrityError, IntegrityError, StoreError
from symcc_ulfm.store.corpus import SEED_OWNER, Corpus
from symcc_ulfm.store.staging import StagedReader, parse_staged, read_staged, staged_name

W1 = "a" * 64
W2 = "b" * 64


@pytest.fixture
def env(tmp_path):
    return open_env(tmp_path / "state")


# -- corpus ------------------------------------------------------------------------------------


def test_put_has_read(env):
    c = env.corpus
    name, created = c.put(b"hello")
    assert name == sha(b"hello") and created is True
    assert c.has(name) and c.read(name) == b"hello"
    assert c.put(b"hello") == (name, False)  # byte-identical republish is fine
    assert list(c.names()) == [name]
    assert stat.S_IMODE(os.stat(c.path(name)).st_mode) == 0o644
    empty, _ = c.put(b"")
    assert c.read(empty) == b"" and c.verify() == []


def test_corpus_file_mode_is_the_contract_mode(tmp_path):
    old = os.umask(0o077)
    try:
        env = open_env(tmp_path / "s", FileModes(snapshot=0o640, corpus=0o660))
        name, _ = env.corpus.put(b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(env.corpus.path(name)).st_mode) == 0o660


@pytest.mark.parametrize("bad", ["x", "A" * 64, "../" + "a" * 61, "a" * 65, None])
def test_object_names_must_be_sha256(env, bad):
    with pytest.raises(CorpusIntegrityError):
        env.corpus.path(bad)
    with pytest.raises(CorpusIntegrityError):
        env.corpus.has(bad)


def test_conflicting_content_is_an_integrity_error_and_never_overwrites(env):
    c = env.corpus
    name = sha(b"genuine")
    (c.objects / name).write_bytes(b"impostor")  # someone planted other bytes under the name
    with pytest.raises(CorpusIntegrityError, match="refusing to overwrite"):
        c.put(b"genuine")
    assert (c.objects / name).read_bytes() == b"impostor"
    with pytest.raises(CorpusIntegrityError) as info:
        c.read(name)
    assert info.value.exit_code == 4


def test_conflict_when_losing_a_create_race(env, monkeypatch):
    # the name appears between the exists() check and the link: still compared, never replaced
    c = env.corpus
    name = sha(b"genuine")
    real_exists = type(c.objects).exists
    calls = []

    def exists(self):
        if self.name == name and not calls:
            calls.append(1)
            (c.objects / name).write_bytes(b"impostor")
            return False
        return real_exists(self)

    monkeypatch.setattr(type(c.objects), "exists", exists)
    with pytest.raises(CorpusIntegrityError):
        c.put(b"genuine")
    monkeypatch.undo()
    assert (c.objects / name).read_bytes() == b"impostor"


def test_tampered_object_detected_by_read_and_verify(env):
    c = env.corpus
    a, _ = c.put(b"aaaa")
    b, _ = c.put(b"bbbb")
    with open(c.objects / a, "r+b") as f:
        f.write(b"x")
    with pytest.raises(CorpusIntegrityError, match=a):
        c.read(a)
    assert c.read(b) == b"bbbb"
    problems = c.verify()
    assert len(problems) == 1 and a in problems[0]
    (c.objects / "not-a-sha").write_bytes(b"")
    (c.objects / ".tmp-in-flight").write_bytes(b"")  # temp files are not objects
    problems = c.verify()
    assert len(problems) == 2 and any("not-a-sha" in p for p in problems)


def test_symlinked_object_is_refused(env, tmp_path):
    c = env.corpus
    (tmp_path / "outside").write_bytes(b"data")
    (c.objects / sha(b"data")).symlink_to(tmp_path / "outside")
    with pytest.raises(StoreError, match="symbolic link"):
        c.read(sha(b"data"))
    with pytest.raises(StoreError):
        c.put(b"data")


def _record(path, work: str, names: list[str]):
    """What a claim links to: a committing WAL record whose manifest lists the objects."""
    path.write_text(json.dumps({"work_hash": work, "manifest": {"objects": [{"sha256": n} for n in names]}}) + "\n")
    path.chmod(0o600)
    return path


def test_claims_first_owner_wins_and_persist(env, tmp_path):
    c = env.corpus
    name, _ = c.put(b"obj")
    first = _record(c.root / "w1.json", W1, [name])
    second = _record(c.root / "w2.json", W2, [name])
    assert c.claim_owner(name) is None
    assert c.claim_new(name, first) and not c.claim_new(name, second)
    assert c.claim_owner(name) == W1
    reopened = Corpus(c.root, c.object_mode, c.claim_mode)
    assert not reopened.claim_new(name, second) and reopened.claim_owner(name) == W1
    assert os.path.samefile(c.claims / name, first)  # a link to the record: no new inode, no copy
    assert stat.S_IMODE(os.stat(c.claims / name).st_mode) == 0o600


def test_seed_claims(env):
    c = env.corpus
    name = c.publish_seed(b"seed input")
    assert c.read(name) == b"seed input" and c.claim_owner(name) == SEED_OWNER and c.is_seed(name)
    assert c.publish_seed(b"seed input") == name  # idempotent
    assert not c.claim_new(name, _record(c.root / "w1.json", W1, [name])) and c.claim_owner(name) == SEED_OWNER
    other, _ = c.put(b"other")
    assert not c.is_seed(other)


@pytest.mark.parametrize("content", [b"somebody", b"\xff\xfe", b"A" * 64, b'{"work_hash": "' + b"a" * 64 + b'"}',
                                     b'{"work_hash": "' + b"a" * 64 + b'", "manifest": {"objects": []}}',
                                     b'{"work_hash": "' + b"a" * 64 + b'", "manifest": {"objects": []}}\n',
                                     b'{"work_hash": "' + b"a" * 64 + b'", "manifest": null}\n{"work_hash": "' + b"b" * 64
                                     + b'", "manifest": null}\n'])
def test_corrupt_claim_is_detected(env, content):
    c = env.corpus
    name, _ = c.put(b"obj")
    (c.claims / name).write_bytes(content)
    assert not c.claim_new(name, _record(c.root / "w1.json", W1, [name]))  # the corrupt claim stays
    with pytest.raises(CorpusIntegrityError):
        c.claim_owner(name)


def test_names_of_missing_directory(tmp_path):
    c = Corpus(tmp_path / "nowhere", 0o644, 0o600)
    with pytest.raises(StoreError):
        list(c.names())


def test_put_adopts_an_open_file_it_owns(env):
    c = env.corpus
    path = env.root / "staged"
    path.write_bytes(b"adopted")
    os.chmod(path, 0o600)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert c.put(b"adopted", inode=fd) == (sha(b"adopted"), True)
    finally:
        os.close(fd)
    published = os.stat(c.path(sha(b"adopted")))
    assert published.st_ino == os.stat(path).st_ino and published.st_nlink == 2
    assert stat.S_IMODE(published.st_mode) == 0o644


def test_put_copies_a_file_with_another_name(env):
    """An inode with a second name elsewhere could be changed through it: copy, do not adopt."""
    c = env.corpus
    path = env.root / "staged"
    path.write_bytes(b"shared inode")
    os.link(path, env.root / "elsewhere")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert c.put(b"shared inode", inode=fd)[1] is True
    finally:
        os.close(fd)
    assert os.stat(c.path(sha(b"shared inode"))).st_ino != os.stat(path).st_ino
    assert c.read(sha(b"shared inode")) == b"shared inode"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_put_copies_a_file_of_another_user(env):
    c = env.corpus
    path = env.root / "staged"
    path.write_bytes(b"theirs")
    os.chown(path, 65534, 65534)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert c.put(b"theirs", inode=fd)[1] is True
    finally:
        os.close(fd)
    published = os.stat(c.path(sha(b"theirs")))
    assert published.st_ino != os.stat(path).st_ino and published.st_uid == 0


# -- staging -----------------------------------------------------------------------------------


def test_stage_and_read(env):
    s = env.staging(3)
    digest, rel = s.stage("0.0.1", b"candidate")
    assert rel == staged_name(3, "0.0.1", digest) == f"staging/worker-3/0.0.1@{digest}"
    assert parse_staged(rel) == (3, "0.0.1", digest)
    assert read_staged(env.root, rel, digest, 9) == b"candidate"
    assert s.stage("0.0.1", b"candidate") == (digest, rel)  # idempotent
    path = env.root / rel
    assert stat.S_IMODE(os.stat(path).st_mode) == env.state.modes.snapshot
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == env.state.modes.snapshot_dir


def test_stage_refuses_a_lease_that_is_not_a_name(env):
    for lease in ("a/b", "../b", "", "x" * 129, "L@x"):
        with pytest.raises(IntegrityError):
            env.staging(3).stage(lease, b"candidate")
    assert os.listdir(env.root / "staging" / "worker-3") == []


def test_discard_removes_only_the_named_candidates(env):
    s = env.staging(3)
    a, _ = s.stage("L", b"a")
    b, rel_b = s.stage("L", b"b")
    s.discard("L", [a, sha(b"never staged")])
    assert os.listdir(env.root / "staging" / "worker-3") == [rel_b.rsplit("/", 1)[1]]


def test_stage_over_tampered_file_raises(env):
    s = env.staging(3)
    digest, rel = s.stage("L", b"candidate")
    (env.root / rel).write_bytes(b"other")
    with pytest.raises(IntegrityError):
        s.stage("L", b"candidate")


@pytest.mark.parametrize(
    "rel",
    [
        "../staging/worker-1/L@" + "a" * 64,
        "staging/worker-1/../L@" + "a" * 64,
        "staging/worker-1/L/" + "a" * 64,
        "staging/worker-1/L@../" + "a" * 64,
        "/staging/worker-1/L@" + "a" * 64,
        "/etc/passwd",
        "staging/worker-x/L@" + "a" * 64,
        "staging/worker-١/L@" + "a" * 64,
        "staging/worker-1/L@" + "A" * 64,
        "staging/worker-1/L/sub@" + "a" * 64,
        "staging/worker-1/L@" + "a" * 64 + "/",
        "staging/worker-1/@" + "a" * 64,
        "staging/worker-1/L\n@" + "a" * 64,
        "staging/worker-1/" + "x" * 129 + "@" + "a" * 64,
        "staging//worker-1/L@" + "a" * 64,
        "staging/worker-1/L@" + "a" * 63,
        "staging/worker-1/L@@" + "a" * 64,
        "",
        None,
    ],
)
def test_parse_staged_refuses_anything_else(env, rel):
    with pytest.raises(IntegrityError):
        parse_staged(rel)
    with pytest.raises(IntegrityError):
        read_staged(env.root, rel, "a" * 64, 1)


def test_read_staged_refuses_a_path_naming_another_object(env):
    digest, rel = env.staging(1).stage("L", b"data")
    with pytest.raises(IntegrityError, match="does not name"):
        read_staged(env.root, rel, sha(b"other"), 4)


def test_read_staged_wrong_length_and_wrong_sha(env):
    digest, rel = env.staging(1).stage("L", b"data")
    with pytest.raises(IntegrityError, match="manifest says 3"):
        read_staged(env.root, rel, digest, 3)
    with pytest.raises(IntegrityError, match="manifest says 5"):
        read_staged(env.root, rel, digest, 5)
    (env.root / rel).write_bytes(b"DATA")  # same length, other content
    with pytest.raises(IntegrityError, match="SHA-256"):
        read_staged(env.root, rel, digest, 4)


def test_read_staged_missing(env):
    rel = staged_name(1, "L", sha(b"never"))
    with pytest.raises(IntegrityError, match="missing"):
        read_staged(env.root, rel, sha(b"never"), 5)


def test_read_staged_refuses_symlinked_file(env, tmp_path):
    (tmp_path / "outside").write_bytes(b"data")
    rel = staged_name(1, "L", sha(b"data"))
    (env.root / rel).parent.mkdir(parents=True)
    (env.root / rel).symlink_to(tmp_path / "outside")
    with pytest.raises(IntegrityError, match="symbolic link"):
        read_staged(env.root, rel, sha(b"data"), 4)


@pytest.mark.parametrize("level", ["staging", "worker"])
def test_read_staged_refuses_symlinked_directory_on_the_way(env, tmp_path, level):
    elsewhere = tmp_path / "elsewhere"
    rel = staged_name(1, "L", sha(b"data"))
    (elsewhere / rel).parent.mkdir(parents=True)
    (elsewhere / rel).write_bytes(b"data")
    if level == "staging":
        os.rmdir(env.root / "staging")
        (env.root / "staging").symlink_to(elsewhere / "staging")
    else:
        (env.root / "staging" / "worker-1").symlink_to(elsewhere / "staging" / "worker-1")
    assert (env.root / rel).read_bytes() == b"data"  # reachable through the link ...
    with pytest.raises(IntegrityError, match="symbolic link"):
        read_staged(env.root, rel, sha(b"data"), 4)  # ... but refused


def test_read_staged_refuses_a_file_where_a_directory_belongs(env):
    (env.root / "staging" / "worker-1").write_bytes(b"")
    with pytest.raises(IntegrityError):
        read_staged(env.root, staged_name(1, "L", sha(b"x")), sha(b"x"), 1)


def test_remove_lease(env, tmp_path):
    s = env.staging(2)
    x, _ = s.stage("L", b"x")
    y, rel_y = s.stage("M", b"y")
    reader = StagedReader(env.root)
    reader.remove_lease(2, "L", [x])
    assert os.listdir(env.root / "staging" / "worker-2") == [rel_y.rsplit("/", 1)[1]]  # another lease's object stays
    reader.remove_lease(2, "L", [x])  # idempotent
    reader.remove_lease(7, "L", [x])  # a worker that never staged anything
    with pytest.raises(IntegrityError):
        reader.remove_lease(2, "../L", [x])


def test_remove_lease_refuses_a_symlinked_worker_directory(env, tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / f"L@{sha(b'x')}").write_bytes(b"keep")
    (env.root / "staging" / "worker-2").symlink_to(outside)
    with pytest.raises(IntegrityError, match="symbolic link"):
        StagedReader(env.root).remove_lease(2, "L", [sha(b"x")])
    assert (outside / f"L@{sha(b'x')}").read_bytes() == b"keep"
