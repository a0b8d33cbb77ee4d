"""User dictionaries in AFL's -x format (``executors.dictionary``): parsing, bad lines named by
FILE:LINE (exit 2 on the command line), and the tokens reaching the concolic engine's hybrid
phase, the havoc fuzzer (contained) and afl-fuzz's -x."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from helpers.symcc import AFL_MISSING, afl_available, afl_twin

from symcc_ulfm.core.slices import descriptor
from symcc_ulfm.errors import ConfigError
from symcc_ulfm.executors import create, options_for
from symcc_ulfm.executors.concolic import ConcolicExecutor
from symcc_ulfm.executors.dictionary import afl_text, parse, read_dictionary
from symcc_ulfm.executors.fuzzers.afl import AflFuzzer
from symcc_ulfm.tools.explore import explore

GOOD = b'''# a comment, then blank lines

kw_magic="PLUGH\\x2dXY"
header_png@2 = "\\x89PNG"
"bare value"
quote="say \\"hi\\" \\\\ done"
kw_magic_again="PLUGH-XY"
'''
# a branch behind a checksum of 8 bytes: no solver and no random havoc edit reaches it, a token does
GATED = textwrap.dedent('''
    import zlib

    KEY = 199210450  # zlib.crc32 of the token (its bytes are not in this module for the engine to find)

    def parse(data: bytes) -> str:
        for i in range(min(len(data), 64) - 7):
            if zlib.crc32(data[i:i + 8]) == KEY:
                return "deep"
        return "shallow"
''')


def test_afl_format_lines_comments_levels_and_escapes(tmp_path):
    assert parse(GOOD, "d.dict") == [b"PLUGH-XY", b"\x89PNG", b"bare value", b'say "hi" \\ done']
    assert parse(afl_text(tuple(parse(GOOD, "d"))), "again") == parse(GOOD, "d")  # written back as AFL reads it
    path = tmp_path / "d.dict"
    path.write_bytes(GOOD)
    read = read_dictionary(path)
    assert read.tokens[0] == b"PLUGH-XY" and len(read.sha256) == 64
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    (tokens / "a").write_bytes(b"\x00\x01")
    (tokens / "b").write_bytes(b"IHDR")
    (tokens / ".hidden").write_bytes(b"no")
    assert read_dictionary(tokens).tokens == (b"\x00\x01", b"IHDR")  # a directory: one token per file


@pytest.mark.parametrize("line, why", [
    (b'name=value', "neither"),
    (b'name="unterminated', "neither"),
    (b'x="\\q"', "bad escape"),
    (b'x="\\x4"', "bad escape"),
    (b'x="tab\there"', "character 0x09"),
    (b'x=""', "a token of 0 bytes"),
    (b'x="caf\xc3\xa9"', "not ASCII"),
    (b'x="a"b"', "unescaped"),
])
def test_a_bad_line_is_named_by_file_and_line(line, why):
    with pytest.raises(ConfigError, match=rf"d\.dict:3: .*{why}"):
        parse(b'# ok\nok="fine"\n' + line + b"\n", "d.dict")


def test_links_and_empty_dictionaries_are_refused(tmp_path):
    (tmp_path / "real").write_bytes(b'a="b"\n')
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(ConfigError, match="symbolic link"):
        read_dictionary(tmp_path / "link")
    (tmp_path / "empty").write_bytes(b"# nothing\n")
    with pytest.raises(ConfigError, match="no token"):
        read_dictionary(tmp_path / "empty")


def test_the_command_line_exits_2_naming_file_and_line(tmp_path):
    bad = tmp_path / "bad.dict"
    bad.write_bytes(b'good="1"\nbad=1\n')
    for command in (["launch", "--state-dir", str(tmp_path / "state")], ["explore", "--out", str(tmp_path / "x")]):
        done = subprocess.run([sys.executable, "-m", "symcc_ulfm", *command, "--target", "tlv", "--dictionary",
                               str(bad)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and f"{bad}:2:" in done.stderr, done.stderr
    assert not (tmp_path / "state").exists() and not (tmp_path / "x").exists()
    good = tmp_path / "good.dict"
    good.write_bytes(b'a="1"\n')
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "launch", "--executor", "simulate", "--dictionary",
                           str(good), "--state-dir", str(tmp_path / "state")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "no worker kind of this campaign (simulate) uses a dictionary" in done.stderr


def test_only_the_kinds_that_take_a_dictionary_are_given_it(tmp_path):
    option = {"dictionary": {"sha256": "0" * 64, "tokens": ["41"]}}
    assert "dictionary" in options_for("concolic", option) and "dictionary" in options_for("havoc", option)
    assert "dictionary" in options_for("afl", option)
    assert "dictionary" not in options_for("symcc", option) and "dictionary" not in options_for("simulate", option)


def _gated(tmp_path) -> str:
    path = tmp_path / "gated.py"
    path.write_text(GATED)
    return f"{path}:parse"


def _option(tmp_path) -> dict:
    path = tmp_path / "words.dict"
    path.write_bytes(b'magic="PLUGH-XY"\n')
    return read_dictionary(path).option()


def test_the_concolic_engine_reaches_a_checksummed_branch_only_with_the_dictionary(tmp_path):
    target = _gated(tmp_path)
    option = _option(tmp_path)
    counted = {"mutations": 2000, "mutate_clock": False}  # the same mutants on any machine
    found = explore(ConcolicExecutor(target, {**counted, "dictionary": option}), None, tmp_path / "with",
                    [b"hello world"], runs=20, stop_returned="deep")
    assert found["stopped"] == "returned", found  # in the first run
    alone = explore(ConcolicExecutor(target, counted), None, tmp_path / "without", [b"hello world"], runs=20,
                    stop_returned="deep")
    assert alone["stopped"] == "queue", alone  # the search ended without it (2 runs)
    identity = ConcolicExecutor(target, {"dictionary": option}).identity()
    assert identity["options"]["dictionary"]["sha256"] == option["sha256"]  # the identity names it


def test_the_havoc_fuzzer_inserts_dictionary_tokens(tmp_path):
    target = _gated(tmp_path)
    counted = {"mutations": 200, "mutate_clock": False}
    fuzzer = create("havoc", target, {"dictionary": _option(tmp_path), **counted}, isolation="none")
    try:
        fuzzer.offer([b"hello world"])
        result = fuzzer.fuzz(descriptor("havoc", 0, 0, 1, 1, 1.0))  # 200 mutants (the 2nd has the token)
        assert result.notes["mutations"] == 200 and not result.notes["mutations_cut"], result.notes
        assert any(fuzzer.measure(c).returned == "deep" for c in result.candidates)
    finally:
        fuzzer.close()


def test_afl_fuzz_is_given_the_dictionary_as_x(tmp_path):
    if not afl_available():
        pytest.skip(AFL_MISSING)
    twin = afl_twin(tmp_path)
    option = _option(tmp_path)
    fuzzer = AflFuzzer(options={"afl_binary": str(twin), "dictionary": option})
    fuzzer.scratch_dir = tmp_path
    try:
        fuzzer.fuzz(descriptor("afl", 0, 0, 1, 1, 1.0))
        assert parse((fuzzer.root / "dictionary.txt").read_bytes(), "written") == [b"PLUGH-XY"]
        log = (fuzzer.root / "afl-fuzz.log").read_text(errors="replace")
        assert f"Loading extra dictionary from '{fuzzer.root / 'dictionary.txt'}'" in log, log[-2000:]
        assert "Loaded a total of 1 extras" in log, log[-2000:]  # afl-fuzz's own count of what it read
        assert fuzzer.identity()["dictionary_sha256"] == option["sha256"]
    finally:
        fuzzer.close()
