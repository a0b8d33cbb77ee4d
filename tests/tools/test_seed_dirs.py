"""Seed directories as AFL++, libFuzzer and SymCC users keep them (``executors.seed_dirs``): a real
AFL++ output directory (afl-fuzz run for a few seconds on an afl-cc build of the SymCC stand-in's
source), a libFuzzer corpus, metadata skipped, links and special files refused, names kept."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest
from helpers.symcc import AFL_MISSING, afl_available, afl_twin

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.executors import seed_dirs
from symcc_ulfm.executors.seed_dirs import read_seeds

AFL_ENV = {"AFL_SKIP_CPUFREQ": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_NO_UI": "1",
           "AFL_NO_AFFINITY": "1"}


@pytest.fixture(scope="module")
def afl_out(tmp_path_factory):
    """A real AFL++ output directory: afl-fuzz -V 3 on two seeds."""
    if not afl_available() or shutil.which("afl-fuzz") is None:
        pytest.skip(AFL_MISSING)
    base = tmp_path_factory.mktemp("afl")
    twin = afl_twin(base)
    (base / "in").mkdir()
    (base / "in" / "magic.bin").write_bytes(b"SYM\x01")
    (base / "in" / "plain.txt").write_bytes(b"hello")
    done = subprocess.run(["afl-fuzz", "-i", str(base / "in"), "-o", str(base / "out"), "-V", "3", "--", str(twin)],
                          env={**os.environ, **AFL_ENV}, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    return base / "out"


def queue_files(instance):
    return {p.name: p.read_bytes() for p in (instance / "queue").iterdir() if p.is_file()}


def test_an_afl_output_directory_gives_every_instance_queue_and_nothing_else(afl_out):
    instance = afl_out / "default"
    for meta in ("fuzzer_stats", "plot_data", "cmdline", "fuzz_bitmap"):
        assert (instance / meta).is_file(), meta  # what AFL++ 4.04c writes beside its queue
    assert (instance / "queue" / ".state").is_dir()
    expected = queue_files(instance)
    assert len(expected) >= 2
    found = read_seeds(afl_out)
    assert found.layout == "afl-output"
    assert sorted(found.seeds) == sorted(set(expected.values()))
    named = {n for names in found.names.values() for n in names}
    assert named == {f"default/queue/{name}" for name in expected}
    metadata = {(instance / m).read_bytes() for m in ("fuzzer_stats", "plot_data", "cmdline", "fuzz_bitmap")}
    assert not metadata & set(found.seeds)
    one = read_seeds(instance)  # OUT/default given itself
    assert one.layout == "afl-instance" and sorted(one.seeds) == sorted(found.seeds)
    assert {n for names in one.names.values() for n in names} == {f"queue/{name}" for name in expected}
    assert any(n.endswith(",orig:magic.bin") for names in one.names.values() for n in names)


def test_main_and_secondary_instances_are_folded_by_content(afl_out, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(afl_out / "default", out / "main", symlinks=True)
    shutil.copytree(afl_out / "default", out / "secondary1", symlinks=True)
    (out / "secondary1" / "queue" / "id:999999,sync:main,src:000000").write_bytes(b"only in secondary1")
    found = read_seeds(out)
    expected = set(queue_files(afl_out / "default").values()) | {b"only in secondary1"}
    assert sorted(found.seeds) == sorted(expected)
    magic = found.names[hashlib.sha256(b"SYM\x01").hexdigest()]
    assert [n.split("/")[0] for n in magic] == ["main", "secondary1"]  # one seed, both names


def test_crashes_are_not_seeds_unless_the_directory_is_named(tmp_path):
    instance = tmp_path / "out" / "default"
    (instance / "queue").mkdir(parents=True)
    (instance / "crashes").mkdir()
    (instance / "fuzzer_stats").write_text("start_time : 0\n")
    (instance / "queue" / "id:000000,time:0,execs:0,orig:a").write_bytes(b"input")
    (instance / "crashes" / "id:000000,sig:11,src:000000,time:1,execs:1,op:havoc,rep:2").write_bytes(b"crasher")
    (instance / "crashes" / "README.txt").write_text("Command line used to find this crash:\n")
    assert read_seeds(tmp_path / "out").seeds == [b"input"]
    assert read_seeds(instance / "crashes").seeds == [b"crasher"]  # README.txt is not an input


def test_a_libfuzzer_corpus_keeps_its_names_and_folds_duplicates(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    inputs = [b"\x00", b"GIF89a", b"{}"]
    for data in inputs:
        (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data)
    (corpus / "copy-of-gif").write_bytes(b"GIF89a")
    found = read_seeds(corpus)
    assert found.layout == "plain" and sorted(found.seeds) == sorted(inputs)
    assert found.names[hashlib.sha256(b"GIF89a").hexdigest()] == sorted(
        [hashlib.sha1(b"GIF89a").hexdigest(), "copy-of-gif"])


def test_metadata_and_dot_files_in_a_plain_directory_are_skipped(tmp_path):
    (tmp_path / "seed").write_bytes(b"one")
    for name in ("fuzzer_stats", "plot_data", "cmdline", "fuzz_bitmap", "README.txt", ".cur_input"):
        (tmp_path / name).write_bytes(b"metadata " + name.encode())
    (tmp_path / ".synced").mkdir()
    (tmp_path / "nested").mkdir()
    found = read_seeds(tmp_path)
    assert found.seeds == [b"one"] and any("not entered" in n for n in found.notes)


@pytest.mark.parametrize("special", ["link", "fifo"])
def test_a_link_or_special_file_is_refused_by_name(tmp_path, special):
    (tmp_path / "seed").write_bytes(b"one")
    (tmp_path / "secret").write_bytes(b"not a seed")
    if special == "link":
        os.symlink(tmp_path / "secret", tmp_path / "evil")
    else:
        os.mkfifo(tmp_path / "evil")  # must not block the reader
    with pytest.raises(ConfigError, match="evil is a (symbolic link|FIFO)"):
        read_seeds(tmp_path)


def test_a_linked_directory_or_queue_is_not_followed(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "seed").write_bytes(b"one")
    os.symlink(real, tmp_path / "linked")
    with pytest.raises(ConfigError, match="symbolic link"):
        read_seeds(tmp_path / "linked")
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "fuzzer_stats").write_text("")
    os.symlink(real, instance / "queue")
    with pytest.raises(ConfigError, match="queue is a symbolic link"):
        read_seeds(instance)


def test_oversized_empty_missing_and_non_directories_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(seed_dirs, "MAX_SEED_BYTES", 8)
    (tmp_path / "big").write_bytes(b"x" * 9)
    with pytest.raises(ConfigError, match="more than a seed may"):
        read_seeds(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no regular file"):
        read_seeds(empty)
    (empty / "fuzzer_stats").write_text("")
    (empty / "queue").mkdir()
    with pytest.raises(ConfigError, match="AFL\\+\\+ instance whose queue/ holds no input"):
        read_seeds(empty)
    with pytest.raises(ConfigError, match="not a directory"):
        read_seeds(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a directory"):
        read_seeds(tmp_path / "big")


def test_the_command_line_refuses_an_empty_seed_set_with_exit_2_before_writing(tmp_path):
    empty = tmp_path / "seeds"
    (empty / "queue").mkdir(parents=True)
    (empty / "fuzzer_stats").write_text("")
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "launch", "--ranks", "2", "--warm-spares", "0",
                           "--workers-per-master", "1", "--target", "tlv", "--seeds", str(empty),
                           "--state-dir", str(tmp_path / "state")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--seeds" in done.stderr and "holds no input" in done.stderr, done.stderr
    assert not (tmp_path / "state").exists()
