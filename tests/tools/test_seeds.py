"""Seed directories: regular files only, bounded, an AFL output directory's queue/ accepted."""

from __future__ import annotations

import os

import pytest

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.tools import seeds


def test_regular_files_in_name_order_without_duplicates(tmp_path):
    (tmp_path / "b").write_bytes(b"two")
    (tmp_path / "a").write_bytes(b"one")
    (tmp_path / "c").write_bytes(b"one")  # the same content again
    (tmp_path / ".hidden").write_bytes(b"skipped")
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "a", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")  # must not block the reader
    assert seeds.read_seed_dir(tmp_path) == [b"one", b"two"]


def test_an_afl_output_directory_gives_its_queue(tmp_path):
    queue = tmp_path / "queue"
    (queue / ".state").mkdir(parents=True)
    (queue / "id:000000,orig:x").write_bytes(b"seed")
    (tmp_path / "crashes").mkdir()
    assert seeds.read_seed_dir(tmp_path) == [b"seed"]


def test_oversized_empty_missing_and_non_directories_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "MAX_SEED_BYTES", 8)
    (tmp_path / "big").write_bytes(b"x" * 9)
    with pytest.raises(ConfigError, match="more than a seed may"):
        seeds.read_seed_dir(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no regular file"):
        seeds.read_seed_dir(empty)
    with pytest.raises(ConfigError, match="not a directory"):
        seeds.read_seed_dir(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a directory"):
        seeds.read_seed_dir(tmp_path / "big")
