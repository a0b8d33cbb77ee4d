"""compare/listing: first-seen times of a system's files, and the inputs a cell keeps (real files)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from symcc_ulfm.compare.listing import MAX_INPUT_BYTES, Input, Sampler, keep_inputs, list_files


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wait_listed(sampler: Sampler, path: Path, timeout: float = 10.0) -> None:
    until = time.monotonic() + timeout
    while path not in sampler.first_seen and time.monotonic() < until:
        time.sleep(0.01)
    assert path in sampler.first_seen, f"{path} was never listed"


def test_planted_files_are_listed_in_the_order_they_appeared(tmp_path):
    corpus = tmp_path / "afl"
    queue = corpus / "main" / "queue"
    crashes = corpus / "main" / "crashes"
    queue.mkdir(parents=True)
    crashes.mkdir()
    (queue / "id:000000").write_bytes(b"a")
    (queue / ".state").mkdir()
    (queue / ".state" / "hidden").write_bytes(b"x")
    (crashes / "README.txt").write_text("afl's note")
    started = time.monotonic()
    sampler = Sampler([(corpus, "*/queue")], [(corpus, "*/crashes")], started, 0.05)
    sampler.start()
    _wait_listed(sampler, queue / "id:000000")
    planted_at = time.monotonic() - started
    (queue / "id:000001").write_bytes(b"b")
    _wait_listed(sampler, queue / "id:000001")
    crash_at = time.monotonic() - started
    (crashes / "id:000000,sig:11").write_bytes(b"boom")
    sampler.stop()
    assert not sampler.is_alive()
    seen = sampler.first_seen
    assert set(seen) == {queue / "id:000000", queue / "id:000001", crashes / "id:000000,sig:11"}
    assert seen[queue / "id:000000"][0] <= seen[queue / "id:000001"][0] <= seen[crashes / "id:000000,sig:11"][0]
    assert seen[queue / "id:000001"][0] >= planted_at
    assert seen[crashes / "id:000000,sig:11"] [0] >= crash_at  # listed by stop()'s last listing at the latest
    assert [role for _, role in (seen[p] for p in sorted(seen))] == ["finding", "corpus", "corpus"]


def test_a_symlink_is_neither_followed_nor_copied(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_bytes(b"private")
    corpus = tmp_path / "state" / "corpus" / "objects"
    corpus.mkdir(parents=True)
    (corpus / "real").write_bytes(b"mine")
    (corpus / "link-file").symlink_to(secret / "key")
    (corpus / "link-dir").symlink_to(secret)
    afl = tmp_path / "afl"
    afl.mkdir()
    (afl / "evil").symlink_to(secret)  # a symlinked instance directory in "*/queue"
    (secret / "queue").mkdir()
    (secret / "queue" / "id:0").write_bytes(b"private too")
    sampler = Sampler([(corpus.parent, "objects"), (afl, "*/queue")], [], time.monotonic(), 60)
    sampler.stop()
    assert set(sampler.first_seen) == {corpus / "real"}
    cell = tmp_path / "cell"
    inputs = keep_inputs({**sampler.first_seen, corpus / "link-file": (0.5, "corpus")}, [], cell)
    assert [i.sha256 for i in inputs] == [_sha(b"mine")]
    assert sorted(os.listdir(cell / "inputs")) == [_sha(b"mine")]
    listing = json.loads((cell / "listing.json").read_text())
    assert listing["skipped"]["not_regular"] == 1  # the link named directly is refused when opened


def test_an_oversized_file_is_skipped_and_counted(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "big").write_bytes(b"x" * (MAX_INPUT_BYTES + 1))
    (corpus / "small").write_bytes(b"y")
    (corpus / "gone").write_bytes(b"z")
    sampler = Sampler([(corpus, "*")], [], time.monotonic(), 60)
    sampler.stop()
    (corpus / "gone").unlink()
    cell = tmp_path / "cell"
    inputs = keep_inputs(sampler.first_seen, [], cell)
    assert [i.sha256 for i in inputs] == [_sha(b"y")]
    listing = json.loads((cell / "listing.json").read_text())
    assert listing["format"] == "symcc-ulfm-compare-listing/1"
    assert listing["skipped"] == {"oversized": 1, "not_regular": 0, "vanished": 1, "unreadable": 0}
    assert listing["listed"] == 3 and listing["capped"] is False
    assert [f["path"] for f in listing["files"]] == [str(corpus / "small")]


def test_keep_inputs_dedups_by_content_keeping_the_earliest_and_seeds_at_zero(tmp_path):
    cell = tmp_path / "cell"
    work = cell / "work"
    work.mkdir(parents=True)
    files = {"a1": b"same", "a2": b"same", "seedcopy": b"seed", "c": b"crash", "c2": b"crash"}
    for name, data in files.items():
        (work / name).write_bytes(data)
    first_seen = {work / "a2": (3.0, "corpus"), work / "a1": (1.5, "corpus"), work / "seedcopy": (0.7, "corpus"),
                  work / "c": (9.0, "finding"), work / "c2": (4.0, "corpus")}
    inputs = keep_inputs(first_seen, [b"seed", b"other seed"], cell)
    assert inputs == sorted([Input(_sha(b"seed"), 0.0, "seed"), Input(_sha(b"other seed"), 0.0, "seed"),
                             Input(_sha(b"same"), 1.5, "corpus"), Input(_sha(b"crash"), 4.0, "corpus")],
                            key=lambda i: (i.first_s, i.sha256))
    for item in inputs:
        assert _sha((cell / "inputs" / item.sha256).read_bytes()) == item.sha256
    listing = json.loads((cell / "listing.json").read_text())
    assert [f["path"] for f in listing["files"]] == ["work/seedcopy", "work/a1", "work/a2", "work/c2", "work/c"]
    assert [f["first_s"] for f in listing["files"]] == [0.7, 1.5, 3.0, 4.0, 9.0]
    assert listing["seeds"] == [_sha(b"seed"), _sha(b"other seed")]
    assert [Input(**entry) for entry in listing["inputs"]] == inputs


def test_glob_components_match_below_real_directories_only(tmp_path):
    (tmp_path / "a" / "queue").mkdir(parents=True)
    (tmp_path / "a" / "queue" / "x").write_bytes(b"1")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "queue").write_bytes(b"a file named like the directory")
    (tmp_path / ".hidden" / "queue").mkdir(parents=True)
    (tmp_path / ".hidden" / "queue" / "y").write_bytes(b"2")
    os.mkfifo(tmp_path / "a" / "queue" / "fifo")
    assert sorted(list_files([(tmp_path, "*/queue")])) == [str(tmp_path / "a" / "queue" / "x"),
                                                          str(tmp_path / "b" / "queue")]
    assert list_files([(tmp_path / "missing", "*")]) == []


def test_a_name_that_is_not_utf8_is_kept_and_written_escaped(tmp_path):
    corpus = tmp_path / "cell" / "corpus"
    corpus.mkdir(parents=True)
    with open(os.path.join(os.fsencode(corpus), b"bad-\xff"), "wb") as out:
        out.write(b"data")
    sampler = Sampler([(corpus, "*")], [], time.monotonic(), 60)
    sampler.stop()
    inputs = keep_inputs(sampler.first_seen, [], tmp_path / "cell")
    assert [i.sha256 for i in inputs] == [_sha(b"data")]
    listing = json.loads((tmp_path / "cell" / "listing.json").read_text(encoding="utf-8"))
    assert [f["path"] for f in listing["files"]] == ["corpus/bad-\\xff"]
