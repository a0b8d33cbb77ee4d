"""The symbolic input behaves like the bytes it holds; the shims keep ``int.from_bytes`` symbolic."""

from __future__ import annotations

import zlib

from helpers.concolic import plain, with_recorder
from hypothesis import given, settings
from hypothesis import strategies as st

from symcc_ulfm.executors.concolic.expressions import expr as E
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.models.builtinslib import BytesShim, IntShim
from symcc_ulfm.executors.concolic.tracing.shadow import symbolic_twin
from symcc_ulfm.executors.concolic.values.symbolic import SymInt
from symcc_ulfm.executors.concolic.values.symbytes import SymBytes

small = st.binary(min_size=0, max_size=12)
needle = st.binary(min_size=0, max_size=3)


@settings(max_examples=200, deadline=None)
@given(data=small, sub=needle, start=st.integers(-14, 14), stop=st.integers(-14, 14))
def test_bytes_protocol_matches_real_bytes(data, sub, start, stop):
    def check(_path):
        sym = SymBytes.from_input(data)
        assert len(sym) == len(data)
        assert plain(list(sym)) == list(data)
        assert plain(sym[start:stop]) == data[start:stop]
        assert plain(sym[::-1]) == data[::-1]
        assert bool(sym == data) and not bool(sym != data)
        assert bool(sym[start:stop] == sub) == (data[start:stop] == sub)
        assert bool(sub in sym) == (sub in data)
        assert sym.find(sub) == data.find(sub)
        assert sym.rfind(sub) == data.rfind(sub)
        assert sym.find(sub, start, stop) == data.find(sub, start, stop)
        assert bool(sym.startswith(sub)) == data.startswith(sub)
        assert bool(sym.endswith((sub, b"\x00"))) == data.endswith((sub, b"\x00"))
        if sub:
            assert plain(sym.split(sub)) == data.split(sub)
        assert plain(sym + sub) == data + sub and plain(sub + sym) == sub + data
        assert plain(sym * 2) == data * 2
        assert sym.hex() == data.hex() and sym.decode("latin-1") == data.decode("latin-1")
        assert hash(sym) == hash(data)
        for order in ("big", "little"):
            for signed in (False, True):
                assert plain(IntShim.from_bytes(sym, order, signed=signed)) == int.from_bytes(data, order,
                                                                                             signed=signed)
    with_recorder(check)


def test_from_bytes_stays_symbolic_and_to_bytes_round_trips():
    def check(path):
        sym = SymBytes.from_input(b"\xef\xbe\xad\xde")
        key = IntShim.from_bytes(sym, "little")
        assert isinstance(key, SymInt) and key.node.val == 0xDEADBEEF
        assert key.node.vars == frozenset(range(4))
        back = key.to_bytes(4, "little")
        assert plain(back) == b"\xef\xbe\xad\xde"
        assert path.pins == 0
    with_recorder(check)


def test_shims_answer_isinstance_like_the_real_types():
    def check(_path):
        sym = SymBytes.from_input(b"ab")
        assert isinstance(sym, BytesShim) and isinstance(sym[0], IntShim) and isinstance(3, IntShim)
        assert not isinstance("x", IntShim)
        assert BytesShim(sym) is sym and IntShim(sym[0]) is sym[0]
        assert plain(BytesShim([sym[1], 0x41])) == b"bA"
        assert IntShim("12") == 12 and BytesShim.fromhex("00ff") == b"\x00\xff"
    with_recorder(check)


def test_unmodelled_methods_and_c_functions_pin_every_byte(tmp_path):
    source = tmp_path / "cuser.py"
    source.write_text("import zlib\n\ndef target(data):\n    return zlib.crc32(data)\n")
    namespace: dict = {"__name__": "cuser", "__file__": str(source)}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    twin = symbolic_twin(namespace["target"])

    def check(path):
        assert twin(SymBytes.from_input(b"xyz")) == zlib.crc32(b"xyz")
        assert path.pins == 4, "three bytes and the length (C code sees both)"
    with_recorder(check)

    def check_method(path):
        assert SymBytes.from_input(b"ab").title() == b"Ab"
        assert path.pins == 3, "two bytes and the length"
        fixed = [node for kind, node, _ in path.entries if kind == P.PIN]
        assert all(E.evaluate(node, b"ab") for node in fixed)
    with_recorder(check_method)


def test_from_elements_range_check_is_a_branch():
    def check(path):
        sym = SymBytes.from_input(b"\x10")
        out = SymBytes.from_elements([sym[0] + 1])
        assert plain(out) == b"\x11"
        assert path.branches >= 1
    with_recorder(check)
