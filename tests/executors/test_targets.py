"""Built-in targets and target resolution."""

from __future__ import annotations

import plistlib
import time
import zlib

import pytest

from symcc_ulfm.errors import TargetError
from symcc_ulfm.executors import create
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.tracing.shadow import symbolic_twin
from symcc_ulfm.executors.concolic.values.symbytes import SymBytes
from symcc_ulfm.targets import DEFAULT_TARGET, bundle, list_targets, names, resolve_target
from symcc_ulfm.targets.pnglike import SIGNATURE, chunk, crc32


def bundle_of(version: int, sections: list[tuple[int, bytes]], check: bool = False) -> bytes:
    body = bundle.MAGIC + bytes([version]) + b"".join(bundle._section(k, p) for k, p in sections)
    return body + bundle._section(bundle.S_CHECK, zlib.adler32(body).to_bytes(4, "big")) if check else body


# One hand-made input per target that reaches its deepest branch (checks the markers).
DEEP_INPUTS = {
    "magic32": b"M32!" + (0xDEADBEEF ^ 0x01020304).to_bytes(4, "little") + (0x01020304).to_bytes(4, "little"),
    "tlv": b"TLV\x01\x02" + bytes([2, 2, 0, 1, 0x10, 4, 2, 2, 0x13, 0x37]),
    "varint": bytes([1, 3, 0xBD, 0xDC, 0x7C]),
    "tokenizer": b"((5348/(3+1)))",
    "pnglike": SIGNATURE + chunk(b"IHDR", bytes([0, 0, 0, 1, 0, 0, 0, 1, 16, 6, 0, 0, 0]))
    + chunk(b"tEXt", b"Debug\x00x") + chunk(b"IEND", b""),
    "bundle": bundle_of(2, [(bundle.S_META, plistlib.dumps({"name": "p", "debug": True})),
                            (bundle.S_CONFIG, b'[package]\nname = "p"\n')], check=True),
}


# One hand-made input per documented bug (each target's BUGS), and the finding it must give.
BUG_INPUTS = {
    "magic32": [(b"M32!" + (0xDEADBEEF).to_bytes(4, "little") + bytes(4) + (16).to_bytes(4, "little"),
                 "crash", "SIGSEGV at magic32.py:parse:")],
    "tlv": [(b"TLV\x01\x02" + bytes([1, 1]) + b"a" + bytes([0x20, 1, 1]), "exception", "IndexError at tlv.py:parse:")],
    "varint": [(bytes([1, 1, 100]), "exception", "IndexError at varint.py:parse:")],
    "tokenizer": [(b"(7%(3-3))", "exception", "ZeroDivisionError at tokenizer.py:Parser.term:"),
                  (b"(" * 500 + b"1" + b")" * 500, "exception", "RecursionError at tokenizer.py:")],
    "bundle": [(bundle_of(1, [(bundle.S_META, plistlib.dumps({"name": "p", "build": 0}))]), "exception",
                "ZeroDivisionError at bundle.py:parse:"),
               (bundle_of(2, [(bundle.S_REF, b"\x00")]), "exception", "IndexError at bundle.py:parse:"),
               (bundle_of(1, [(bundle.S_META, plistlib.dumps({"name": "p"})),
                              (bundle.S_CONFIG, b'[package]\nname = "p"\n[limits]\nshards = 0\n')]), "exception",
                "ZeroDivisionError at bundle.py:parse:")],
    "pnglike": [(SIGNATURE + chunk(b"IHDR", bytes([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]))
                 + chunk(b"tEXt", b"Dump\x00\x7f\xff\xff\xff") + chunk(b"IEND", b""), "oom", "MemoryError at pnglike.py:")],
}


def test_registry_lists_every_target_with_seeds_expectations_and_bugs():
    listed = list_targets()
    assert [t["name"] for t in listed] == names() == ["tlv", "pnglike", "tokenizer", "varint", "magic32", "bundle"]
    for item in listed:
        assert item["description"] and item["seed_lengths"] and all(n > 0 for n in item["seed_lengths"])
        assert item["entry"].startswith("symcc_ulfm.targets.")
        assert item["bugs"] and len(item["bugs"]) == len(BUG_INPUTS[item["name"]])
    assert DEFAULT_TARGET == "tlv"


@pytest.fixture(scope="module")
def contained():
    executors = {name: create("concolic", name, {"memory_mb": 1024}) for name in names()}
    yield executors
    for executor in executors.values():
        executor.close()


@pytest.mark.parametrize("name", names())
def test_deep_marker_is_not_returned_on_seeds_and_is_on_a_known_input(name, contained):
    info, executor = resolve_target(name), contained[name]
    assert info.builtin and info.deep
    assert all(executor.measure(seed).returned != info.deep for seed in info.seeds)
    assert executor.measure(DEEP_INPUTS[name]).returned == info.deep
    assert executor.measure(b"").returned != info.deep


@pytest.mark.parametrize("name", names())
def test_every_documented_bug_is_a_finding_of_its_kind(name, contained):
    """Run contained: the magic32 bug kills the process that executes it."""
    executor = contained[name]
    for data, kind, signature in BUG_INPUTS[name]:
        outcome = executor.measure(data).outcome
        assert (outcome.kind, outcome.signature[:len(signature)]) == (kind, signature), outcome
    for data in (*resolve_target(name).seeds, DEEP_INPUTS[name]):
        assert executor.measure(data).outcome.kind == "ok", "seeds and the deep input are not findings"


@pytest.mark.parametrize("name", names())
def test_symbolic_twin_computes_the_concrete_result(name):
    info = resolve_target(name)
    twin = symbolic_twin(info.function)
    for data in (*info.seeds, DEEP_INPUTS[name]):
        P.start(time.monotonic() + 30, 100_000)
        try:
            result = twin(SymBytes.from_input(data))
        finally:
            recorded = P.stop()
        assert result == info.function(data)
        assert recorded.branches > 0


def test_pnglike_seed_has_valid_crcs():
    seed = resolve_target("pnglike").seeds[0]
    assert crc32(b"IEND") == 0xAE426082
    assert resolve_target("pnglike").function(seed) == "image with 1 text chunks"


def test_module_and_file_forms(tmp_path):
    info = resolve_target("symcc_ulfm.targets.magic32:parse")
    assert not info.builtin and info.function(b"x") == "short"
    assert info.source_path.endswith("magic32.py")
    path = tmp_path / "mine.py"
    path.write_text("class P:\n    @staticmethod\n    def go(data):\n        return len(data)\n")
    info = resolve_target(f"{path}:P.go")
    assert info.function(b"abc") == 3 and info.spec == f"{path}:P.go"
    assert len(info.source_sha256) == 64


@pytest.mark.parametrize("spec", ["nope", "nope:f", "symcc_ulfm.targets.tlv:missing", "/no/such/file.py:f",
                                  "symcc_ulfm.targets.tlv:MAGIC", ":f", "x:"])
def test_unresolvable_targets_raise_target_error_naming_the_forms(spec):
    with pytest.raises(TargetError) as caught:
        resolve_target(spec)
    message = str(caught.value)
    assert caught.value.field == "target" and caught.value.exit_code == 2
    assert repr(spec) in message and "module:function" in message and "file.py:function" in message
