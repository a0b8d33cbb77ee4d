"""struct, int.from_bytes/to_bytes, BytesIO/StringIO/memoryview, lookups, the input's length and
input-to-state: each against Python, and the idiom targets of issue 16 end to end."""

from __future__ import annotations

import io
import plistlib
import struct
from pathlib import Path

import pytest
from helpers.concolic import plain, run
from hypothesis import given, settings
from hypothesis import strategies as st

from symcc_ulfm.executors.concolic import ConcolicExecutor
from symcc_ulfm.executors.concolic.expressions import expr as E
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.hybrid import input_to_state
from symcc_ulfm.executors.concolic.models import builtinslib, containers, iolib, structlib
from symcc_ulfm.executors.concolic.models.builtinslib import BytesShim, IntShim, StrShim
from symcc_ulfm.executors.concolic.tracing.shadow import symbolic_twin
from symcc_ulfm.executors.concolic.values import opaque
from symcc_ulfm.executors.concolic.values.seq import length_of
from symcc_ulfm.executors.concolic.values.symbolic import SymInt
from symcc_ulfm.executors.concolic.values.symbytes import SymBytes
from symcc_ulfm.tools.explore import explore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "idioms.py"


def outcome(fn):
    try:
        return fn()
    except Exception as exc:
        return type(exc)


FORMATS = ["<HH", ">I", "<i", "!q", "@hI", "=bB?", "<2sH", "<xcHx", ">Q", "<e", "<4sxi", "3B"]


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), data=st.binary(max_size=20), offset=st.integers(-4, 6))
def test_struct_matches_python(fmt, data, offset):
    for name, concrete_call, symbolic_call in (
            ("unpack", lambda d: struct.unpack(fmt, d), lambda d: structlib.unpack(fmt, d)),
            ("unpack_from", lambda d: struct.unpack_from(fmt, d, offset),
             lambda d: structlib.unpack_from(fmt, d, offset)),
            ("iter_unpack", lambda d: list(struct.iter_unpack(fmt, d)), lambda d: list(structlib.iter_unpack(fmt, d))),
            ("Struct", lambda d: struct.Struct(fmt).unpack_from(d), lambda d: structlib.Struct(fmt).unpack_from(d))):
        result, _ = run(lambda call=symbolic_call: call(SymBytes.from_input(data)))
        assert repr(plain(result)) == repr(outcome(lambda call=concrete_call: call(data))), name  # NaN-safe


def test_struct_fields_are_expressions_over_their_bytes():
    (version, count), path = run(lambda: structlib.unpack("<HH", SymBytes.from_input(b"\x03\x00\x07\x00")))
    assert version.node.vars == {0, 1} and count.node.vars == {2, 3}
    assert E.evaluate(count.node, b"\x00\x00\x34\x12") == 0x1234
    assert path.pins == 0


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=9), order=st.sampled_from(["big", "little"]), signed=st.booleans())
def test_int_from_bytes_and_to_bytes_match_python(data, order, signed):
    value, path = run(lambda: IntShim.from_bytes(SymBytes.from_input(data), order, signed=signed))
    assert plain(value) == int.from_bytes(data, order, signed=signed)
    back, _ = run(lambda: IntShim.from_bytes(SymBytes.from_input(data), order, signed=signed).to_bytes(
        max(1, len(data)), order, signed=signed) if data else b"")
    assert plain(back) == (int.from_bytes(data, order, signed=signed).to_bytes(len(data), order, signed=signed)
                           if data else b"")


LINES = st.lists(st.sampled_from([b"ab", b"\n", b"\r\n", b"c", b"", b"\r"]), max_size=6).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(data=LINES, sizes=st.lists(st.integers(-1, 5), min_size=1, max_size=6), pos=st.integers(0, 8))
def test_bytesio_reads_match_python(data, sizes, pos):
    def reads(stream):
        out = [stream.read(sizes[0]), stream.tell()]
        for size in sizes[1:]:
            out += [stream.readline(size), stream.tell()]
        stream.seek(pos)
        out += [stream.read(), stream.getvalue(), stream.seek(0), list(stream)]
        return out
    result, _ = run(lambda: reads(iolib.SymBytesIO(SymBytes.from_input(data))))
    assert plain(result) == reads(io.BytesIO(data))


@settings(max_examples=200, deadline=None)
@given(data=LINES, newline=st.sampled_from(["\n", ""]), cut=st.integers(0, 6))
def test_stringio_line_buffer_matches_python(data, newline, cut):
    text = data.decode("ascii")

    def use(stream, chunk):
        stream.write(chunk[:cut])
        stream.write(chunk[cut:])
        stream.seek(0)
        lines = stream.readlines()
        stream.seek(0)
        stream.truncate()
        stream.write("x")
        return [lines, stream.getvalue(), stream.tell()]
    result, _ = run(lambda: use(iolib.SymStringIO("", newline), SymBytes.from_input(data).decode("ascii")))
    assert plain(result) == use(io.StringIO("", newline), text)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=1, max_size=8), a=st.integers(0, 8), b=st.integers(0, 8), i=st.integers(-8, 8))
def test_memoryview_reads_match_python(data, a, b, i):
    def reads(make, getitem, to_bytes):
        view = make(data)
        sub = getitem(view, slice(a, b))
        return [outcome(lambda: getitem(view, i)), outcome(lambda: getitem(sub, i)), to_bytes(sub), len(sub)]
    result, _ = run(lambda: reads(lambda d: builtinslib.view_of(SymBytes.from_input(d)), containers.getitem, BytesShim))
    builtinslib.clear_views()
    assert plain(result) == reads(memoryview, lambda v, k: v[k], bytes)


TABLE = {"get": 1, "set": 2, "del": 3, 7: "seven", b"raw": 4}


@settings(max_examples=200, deadline=None)
@given(word=st.sampled_from(["get", "set", "del", "put", "ge", ""]), number=st.integers(0, 9))
def test_lookups_match_python(word, number):
    def probe(key_text, key_int):
        return [containers.contains(key_text, TABLE), containers.contains(key_text, frozenset(TABLE)),
                containers.not_contains(key_int, (7, 8)), containers.contains(key_text, "xgetsetx"),
                outcome(lambda: containers.getitem(TABLE, key_text)), containers.call_method(TABLE, "get", key_int, -1),
                containers.call_method(",", "join", [key_text, "z"]),
                containers.call_method(frozenset("gets"), "issuperset", key_text),
                outcome(lambda: containers.contains(key_text[:1], "tes")), outcome(lambda: containers.contains(key_int, b"\x03\x05")),
                containers.contains(key_text[:1], {"g": 1, "dd": 2})]
    data = word.encode() + bytes([number])

    def symbolic():
        sym = SymBytes.from_input(data)
        return probe(sym[:len(word)].decode("ascii"), sym[len(word)])
    result, path = run(symbolic)
    assert plain(result) == probe(word, number)
    assert path.pins == 0, "modelled lookups never hash (pin) the key"


def test_lookups_raise_like_python_on_mixed_types():
    result, _ = run(lambda: containers.contains(SymBytes.from_input(b"g").decode("ascii"), b"g"))
    assert result is TypeError


def test_dict_lookup_offers_another_key_to_the_search():
    result, path = run(lambda: containers.getitem(TABLE, SymBytes.from_input(b"get").decode("ascii")))
    assert result == 1
    _ascii, found, which = [node for kind, node, _ in path.entries if kind == P.BRANCH]
    assert found.val and which.val
    assert E.evaluate(found, b"del") and not E.evaluate(which, b"del"), "another key: found, not the same one"
    assert not E.evaluate(found, b"xyz")


def test_length_is_symbolic_and_reading_past_the_end_is_a_branch():
    def read():
        data = SymBytes.from_input(b"abcd")
        tail = data[2:]
        return length_of(data), length_of(tail), outcome(lambda: data[6]), length_of(data[1:3])
    (whole, tail, error, inside), path = run(read)
    assert isinstance(whole, SymInt) and whole.node.vars == {E.LENGTH} and plain(tail) == 2
    assert error is IndexError and inside == 2
    past = [node for kind, node, _ in path.entries if kind == P.BRANCH]
    assert len(past) == 1 and not past[0].val and E.evaluate(past[0], b"abcdefg")


def test_shims_answer_isinstance_and_route_symbolic_values():
    def check():
        data = SymBytes.from_input(b"12 ab")
        text = StrShim(data, "ascii")
        return [isinstance(text, StrShim), isinstance(data, BytesShim), plain(IntShim(text[:2])),
                isinstance(IntShim(text[:2]), SymInt), plain(BytesShim.fromhex(text[3:])), StrShim(text) is text]
    result, _ = run(check)
    assert result == [True, True, 12, True, b"\xab", True]


def test_opaque_values_record_comparisons_and_stay_opaque_through_arithmetic():
    def compare():
        crc = opaque.opaque(0x1234ABCD) & 0xFFFFFFFF
        head = opaque.opaque(b"\x7fELX")
        return crc == 7, head.startswith(b"\x7fELF"), isinstance(crc, opaque.OpaqueInt)
    result, path = run(compare)
    assert result == (False, False, True)
    assert [(a, b) for _, a, b in path.compares] == [(0x1234ABCD, 7), (b"\x7fELX", b"\x7fELF")]


def test_input_to_state_puts_the_other_operand_where_one_occurs():
    data = b"hdr:" + (0x1234ABCD).to_bytes(4, "little") + b":1234ABCD:305441741"
    children = input_to_state.propose(data, [(0, 0x1234ABCD, 0xCAFEF00D)], limit=20)
    assert b"hdr:" + (0xCAFEF00D).to_bytes(4, "little") + b":1234ABCD:305441741" in children
    assert data.replace(b"1234ABCD", b"CAFEF00D") in children
    assert data.replace(b"305441741", str(0xCAFEF00D).encode()) in children
    assert input_to_state.propose(data, [(0, 5, 5)], limit=20) == [], "equal operands propose nothing"


def _deep(name):
    namespace: dict = {}
    exec(compile(FIXTURE.read_text(), str(FIXTURE), "exec"), namespace)
    function = namespace[name]

    def deep(data: bytes) -> bool:
        try:
            return function(data) == "deep"
        except Exception:
            return False
    return deep


@pytest.mark.parametrize("name, seed", [
    ("binary_header", bytes(12)),
    ("text_protocol", b"get:name:12"),
    ("crc_trailer", b"hello" + b"00000000"),
    ("hidden_magic", b"00000000rest"),
])
def test_idiom_targets_reach_their_deepest_branch(name, seed, tmp_path):
    executor = ConcolicExecutor(f"{FIXTURE}:{name}", {"mutations": 64, "mutate_clock": False})
    stats = explore(executor, None, tmp_path, [seed], runs=400, stop_returned="deep")  # text_protocol: 107
    assert stats["stopped"] == "returned", stats


@pytest.mark.parametrize("name, seed, how", [
    ("crc_trailer", b"OKbody" + b"00000000", "checksum through zlib.crc32 and binascii.unhexlify"),
    ("hidden_magic", b"00000000rest", "magic behind binascii.unhexlify"),
])
def test_input_to_state_solves_what_the_solver_cannot_see(name, seed, how):
    executor = ConcolicExecutor(f"{FIXTURE}:{name}", {"mutations": 0})  # input-to-state alone
    result = executor.run(seed)
    assert result.notes["compares"] >= 1 and result.notes["i2s"] >= 1, how
    assert result.notes["sat"] == 0 or name == "crc_trailer", "nothing symbolic reaches the comparison"
    deep = _deep(name)
    assert any(deep(child) for child in result.candidates[-result.notes["i2s"]:]), how


def test_plistlib_loads_is_explored_through_its_idioms():
    # the symbolic search alone, bounded by its counts (max_branches_per_run), not the run's clock
    executor = ConcolicExecutor("plistlib:loads", {"mutations": 0, "run_timeout_s": 600})
    seed = plistlib.dumps({"a": 1, "b": [True, 2.5, b"xy"]}, fmt=plistlib.FMT_BINARY)
    result = executor.run(seed)
    assert result.notes["branches"] > 50 and len(result.candidates) > 20
    assert plistlib.loads(seed) == {"a": 1, "b": [True, 2.5, b"xy"]}, "the overlay leaves the module as it was"


def test_the_twin_computes_the_concrete_result_and_restores_the_modules():
    import urllib.parse
    original = urllib.parse.urlsplit.__wrapped__.__code__  # behind functools.lru_cache

    def target(data: bytes):
        return urllib.parse.urlsplit(data.decode("latin-1"))
    twin = symbolic_twin(target, ["urllib.parse"])
    seed = b"http://user@example.com:80/a?b#c"
    result, path = run(lambda: twin(SymBytes.from_input(seed)))
    assert plain(tuple(result)) == tuple(target(seed)) and path.branches > 10
    assert urllib.parse.urlsplit.__wrapped__.__code__ is original and "int" not in vars(urllib.parse)


def test_rendered_text_pins_its_sources_only_when_read():
    def message():
        text = SymBytes.from_input(b"1.2").decode("ascii")
        rendered = "bad %r" % text  # noqa: UP031 (the % operator is what is tested)
        unread = P._active.pins
        return rendered, unread, rendered == "bad '1.2'"
    (text, unread, same), path = run(message)
    assert text == "bad '1.2'" and isinstance(text, opaque.OpaqueStr) and same
    assert unread == 0 and path.pins == 4, "three characters and the length, once compared"


def test_a_number_that_int_rejects_gets_every_digit_in_one_child():
    """Char by char, each child would fail inside int() like its parent: the digits are asked for at once."""
    executor = ConcolicExecutor(f"{FIXTURE}:hex_escape", {"mutations": 0})
    result = executor.run(b"uzzzz")
    hexdigits = set(b"0123456789abcdefABCDEF")
    assert any(len(c) >= 5 and set(c[1:5]) <= hexdigits for c in result.candidates), result.candidates
