"""A harness directory's manifest (``harness.directory``): what ``build`` writes is what
``launch --harness`` reads, and a directory that was tampered with is refused, naming why."""

from __future__ import annotations

import json
import os

import pytest

from symcc_ulfm.errors import ConfigError, ProvenanceChanged, TargetError
from symcc_ulfm.harness import directory


def made(tmp_path, **extra):
    (tmp_path / "afl").mkdir()
    (tmp_path / "afl" / "h").write_bytes(b"\x7fELF afl build")
    (tmp_path / "seeds").mkdir()
    (tmp_path / "h.dict").write_text('a="b"\n')
    build = directory.Build("afl/h", directory.sha256_file(tmp_path / "afl" / "h"), "afl-cc++4.04c", ["-O2"])
    harness = directory.Harness(tmp_path, "h", {"afl": build}, ["@@"], "h.dict", "seeds", {"sources": ["h.c"]},
                               **extra)
    directory.write(harness)
    return harness


def test_what_is_written_is_read(tmp_path):
    harness = made(tmp_path)
    read = directory.read(tmp_path)
    assert read == harness
    assert read.path("afl") == tmp_path / "afl" / "h" and read.file(read.dictionary) == tmp_path / "h.dict"
    with pytest.raises(TargetError, match="no symcc build .*it has: afl"):
        read.path("symcc")


def test_a_rebuilt_build_is_refused(tmp_path):
    made(tmp_path)
    (tmp_path / "afl" / "h").write_bytes(b"\x7fELF another build")
    with pytest.raises(ProvenanceChanged, match="afl build's SHA-256"):
        directory.read(tmp_path)


def test_a_missing_build_and_a_missing_manifest_are_named(tmp_path):
    made(tmp_path)
    (tmp_path / "afl" / "h").unlink()
    with pytest.raises(TargetError, match="afl build afl/h is missing"):
        directory.read(tmp_path)
    with pytest.raises(ConfigError, match="no harness.json"):
        directory.read(tmp_path / "seeds")


@pytest.mark.parametrize("where", ["../outside", "/etc/passwd", "link/h"])
def test_a_path_leaving_the_directory_is_refused(tmp_path, where):
    made(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "afl")
    data = json.loads((tmp_path / "harness.json").read_text())
    data["builds"]["afl"]["path"] = where
    (tmp_path / "harness.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="inside the harness directory"):
        directory.read(tmp_path)


def test_symlinks_are_never_followed(tmp_path):
    made(tmp_path)
    real = tmp_path / "afl" / "h"
    os.rename(real, tmp_path / "real")
    real.symlink_to(tmp_path / "real")
    with pytest.raises(ConfigError, match="a symlink"):
        directory.read(tmp_path)
    (tmp_path / "harness.json").rename(tmp_path / "m.json")
    (tmp_path / "harness.json").symlink_to(tmp_path / "m.json")
    with pytest.raises(ConfigError, match="a symlink"):
        directory.read(tmp_path)


@pytest.mark.parametrize("damage", [b"{", b"[]", b'{"version": 1, "name": "h", "builds": {"gcc": {}}}',
                                    b'{"version": 1, "name": "h", "builds": {}}'])
def test_a_damaged_manifest_is_a_config_error(tmp_path, damage):
    made(tmp_path)
    (tmp_path / "harness.json").write_bytes(damage)
    with pytest.raises(ConfigError):
        directory.read(tmp_path)
