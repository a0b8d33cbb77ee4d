"""Symbolic str and the codecs: every modelled operation against the concrete Python result.

Each property runs the operation on a symbolic value and on the plain value and compares; for
the symbolic results it also checks that the expressions are valid for *other* inputs (the
expression evaluated on another input equals Python's result on that input whenever the other
input follows the same recorded path), which is what makes the generated children honest.
"""

from __future__ import annotations

import pytest
from helpers.concolic import plain, run
from hypothesis import given, settings
from hypothesis import strategies as st

from symcc_ulfm.executors.concolic.expressions import expr as E
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.values.numbers_as_text import chr_of, fromhex, ord_of, to_int
from symcc_ulfm.executors.concolic.values.seq import SymSequence
from symcc_ulfm.executors.concolic.values.symbolic import SymBool, SymInt
from symcc_ulfm.executors.concolic.values.symbytes import SymBytes
from symcc_ulfm.executors.concolic.values.symstr import SymStr

ALPHABET = b" \t\r\n:;,.=-+_0123456789abcdefxABCDEFXyz\x00\x7f\x80\xc3\xa9\xff"
text_bytes = st.lists(st.sampled_from(list(ALPHABET)), max_size=12).map(bytes)


def _fixed(n: int, alphabet):
    return st.lists(st.sampled_from(list(alphabet)), min_size=n, max_size=n).map(bytes)


def pairs(alphabet=ALPHABET, size=12):
    """Two inputs of one length: the symbolic run's and another one to check its expressions on."""
    return st.integers(0, size).flatmap(lambda n: st.tuples(_fixed(n, alphabet), _fixed(n, alphabet)))


needles = st.lists(st.sampled_from([ord(c) for c in " :,=0aAx\r\n"]), max_size=3).map(lambda x: bytes(x).decode())


def outcome(fn):
    try:
        return fn()
    except Exception as exc:
        return type(exc)


def same_path_on(path, other: bytes) -> bool:
    """Whether ``other`` satisfies every branch and pin recorded on the path."""
    return all(bool(E.evaluate(node, other)) == bool(node.val) for _, node, _ in path.entries
               if all(v == E.LENGTH or v < len(other) for v in node.vars))


def check_on_other(value, path, other: bytes, expected) -> None:
    """A symbolic result evaluated on ``other`` equals Python's result there, when the path holds."""
    if not isinstance(value, (SymInt, SymBool, SymSequence)) or not same_path_on(path, other):
        return
    if isinstance(value, SymSequence):
        assert [E.evaluate(e.node, other) if isinstance(e, SymInt) else e for e in value._e] == list(
            expected if isinstance(expected, bytes) else map(ord, expected))
    else:
        assert E.evaluate(value.node, other) == expected


STR_OPS = {
    "find": lambda s, n: s.find(n), "rfind": lambda s, n: s.rfind(n), "count": lambda s, n: s.count(n),
    "in": lambda s, n: n in s, "eq": lambda s, n: s == n, "ne": lambda s, n: s != n,
    "startswith": lambda s, n: s.startswith(n), "endswith": lambda s, n: s.endswith((n, "x")),
    "split": lambda s, n: s.split(n) if n else s.split(), "rsplit1": lambda s, n: s.rsplit(n or None, 1),
    "split1": lambda s, n: s.split(n or None, 1), "partition": lambda s, n: s.partition(n),
    "rpartition": lambda s, n: s.rpartition(n), "splitlines": lambda s, n: s.splitlines(),
    "splitlines_keep": lambda s, n: s.splitlines(True), "strip": lambda s, n: s.strip(),
    "strip_chars": lambda s, n: s.strip(n), "lstrip": lambda s, n: s.lstrip(n or None),
    "rstrip": lambda s, n: s.rstrip(), "lower": lambda s, n: s.lower(), "upper": lambda s, n: s.upper(),
    "isdigit": lambda s, n: s.isdigit(), "isdecimal": lambda s, n: s.isdecimal(),
    "isnumeric": lambda s, n: s.isnumeric(), "isalpha": lambda s, n: s.isalpha(),
    "isalnum": lambda s, n: s.isalnum(), "isspace": lambda s, n: s.isspace(), "isupper": lambda s, n: s.isupper(),
    "islower": lambda s, n: s.islower(), "isascii": lambda s, n: s.isascii(),
    "replace": lambda s, n: s.replace(n, "<>"), "removeprefix": lambda s, n: s.removeprefix(n),
    "removesuffix": lambda s, n: s.removesuffix(n), "index2": lambda s, n: s[2], "slice": lambda s, n: s[1:-1],
    "add": lambda s, n: n + s + n, "join": lambda s, n: s.join([n, "q", n]), "mul": lambda s, n: s * 2,
    "iter": lambda s, n: list(s), "int": lambda s, n: to_int(s) if isinstance(s, SymSequence) else int(s),
    "int16": lambda s, n: to_int(s, 16) if isinstance(s, SymSequence) else int(s, 16),
    "int2": lambda s, n: to_int(s, 2) if isinstance(s, SymSequence) else int(s, 2),
    "fromhex": lambda s, n: fromhex(s) if isinstance(s, SymStr) else bytes.fromhex(s),
    "ord0": lambda s, n: ord_of(s[:1]) if isinstance(s, SymSequence) else ord(s[:1]),
    "encode_utf8": lambda s, n: s.encode("utf-8", "surrogateescape"),
    "encode_latin1": lambda s, n: s.encode("latin-1"), "encode_ascii": lambda s, n: s.encode("ascii"),
}
CODECS = [("latin-1", "strict"), ("ascii", "strict"), ("ascii", "surrogateescape"), ("ascii", "replace"),
          ("utf-8", "strict"), ("utf-8", "surrogateescape"), ("utf-8", "replace"), ("utf-8", "ignore")]


@settings(max_examples=300, deadline=None)
@given(two=pairs(), needle=needles, codec=st.sampled_from(CODECS), op=st.sampled_from(sorted(STR_OPS)))
def test_str_operations_match_python(two, needle, codec, op):
    data, other = two
    encoding, errors = codec
    expected = outcome(lambda: STR_OPS[op](data.decode(encoding, errors), needle))
    result, path = run(lambda: STR_OPS[op](SymBytes.from_input(data).decode(encoding, errors), needle))
    assert plain(result) == expected
    there = outcome(lambda: STR_OPS[op](other.decode(encoding, errors), needle))
    check_on_other(result, path, other, there)


BYTES_OPS = {
    "find": lambda b, n: b.find(n), "rindex": lambda b, n: b.rindex(n), "count": lambda b, n: b.count(n),
    "in": lambda b, n: n in b, "split": lambda b, n: b.split(n) if n else b.split(),
    "partition": lambda b, n: b.partition(n), "strip": lambda b, n: b.strip(n or None),
    "splitlines": lambda b, n: b.splitlines(True), "lower": lambda b, n: b.lower(), "upper": lambda b, n: b.upper(),
    "isdigit": lambda b, n: b.isdigit(), "isalpha": lambda b, n: b.isalpha(), "isalnum": lambda b, n: b.isalnum(),
    "isspace": lambda b, n: b.isspace(), "isupper": lambda b, n: b.isupper(), "islower": lambda b, n: b.islower(),
    "isascii": lambda b, n: b.isascii(), "hex": lambda b, n: b.hex(), "replace": lambda b, n: b.replace(n, b"!"),
    "join": lambda b, n: n.join([b, b]), "int": lambda b, n: to_int(b) if isinstance(b, SymSequence) else int(b),
}


@settings(max_examples=300, deadline=None)
@given(two=pairs(), needle=needles, op=st.sampled_from(sorted(BYTES_OPS)))
def test_bytes_operations_match_python(two, needle, op):
    data, other = two
    raw = needle.encode("latin-1")
    expected = outcome(lambda: BYTES_OPS[op](data, raw))
    result, path = run(lambda: BYTES_OPS[op](SymBytes.from_input(data), raw))
    assert plain(result) == expected
    check_on_other(result, path, other, outcome(lambda: BYTES_OPS[op](other, raw)))


numbers = st.one_of(st.integers(-10**6, 10**6).map(str), st.integers(0, 2**40).map(lambda n: f" {n:x} "),
                    st.integers(0, 2**40).map(lambda n: f"0x{n:X}"), st.integers(0, 255).map(lambda n: f"-0b{n:b}"),
                    st.text(alphabet="0123456789 +-xab_\t", max_size=8))


@settings(max_examples=200, deadline=None)
@given(text=numbers, base=st.sampled_from([2, 8, 10, 16, 36]))
def test_int_parsing_matches_python(text, base):
    data = text.encode("ascii")
    result, path = run(lambda: to_int(SymBytes.from_input(data).decode("ascii"), base))
    assert plain(result) == outcome(lambda: int(text, base))
    if isinstance(result, SymInt):
        assert path.pins == 0 or "_" in text


@settings(max_examples=100, deadline=None)
@given(two=pairs(range(256), 10))
def test_hex_and_fromhex_round_trip(two):
    data, other = two
    hexed, path = run(lambda: SymBytes.from_input(data).hex())
    assert plain(hexed) == data.hex()
    check_on_other(hexed, path, other, other.hex())
    back, _ = run(lambda: fromhex(SymBytes.from_input(data.hex().encode()).decode("ascii")))
    assert plain(back) == data


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="0123456789abcdefABCDEF gq\n", max_size=10))
def test_fromhex_matches_python_on_any_text(text):
    result, _ = run(lambda: fromhex(SymBytes.from_input(text.encode()).decode("ascii")))
    assert plain(result) == outcome(lambda: bytes.fromhex(text))


@settings(max_examples=100, deadline=None)
@given(code=st.integers(0, 255))
def test_chr_and_ord_keep_the_expression(code):
    def both():
        value = SymBytes.from_input(bytes([code]))[0]
        char = chr_of(value)
        return char, ord_of(char), outcome(lambda: chr_of(value - 300))
    (char, back, error), path = run(both)
    assert plain(char) == chr(code) and isinstance(back, SymInt) and back.node.val == code
    assert error is ValueError, "the range check fails like chr(-300 + code)"
    assert path.branches == 0, "the static intervals decide both range checks"


def test_decode_keeps_ascii_symbolic_and_pins_the_rest():
    def decode():
        return SymBytes.from_input("a\u00e9b".encode()).decode("utf-8")
    text, path = run(decode)
    assert plain(text) == "a\u00e9b"
    assert isinstance(text._e[0], SymInt) and isinstance(text._e[2], SymInt)
    assert text._e[1] == 0xE9
    assert path.pins == 2 and path.branches == 1, "two bytes of the e-acute pinned, one ASCII branch"


def test_strict_ascii_failure_records_the_all_ascii_branch():
    _, path = run(lambda: SymBytes.from_input(b"ab\xff").decode("ascii"))
    branches = [node for kind, node, _ in path.entries if kind == P.BRANCH]
    assert len(branches) == 1 and not branches[0].val
    assert E.evaluate(branches[0], b"abc") is True


def test_unmodelled_str_method_pins_and_is_opaque():
    from symcc_ulfm.executors.concolic.values.opaque import OpaqueStr
    result, path = run(lambda: SymBytes.from_input(b"ab c").decode("ascii").title())
    assert result == "Ab C" and isinstance(result, OpaqueStr)
    assert path.pins == 5, "four characters and the length"


@pytest.mark.parametrize("op", ["lower", "isdigit", "split"])
def test_symbolic_str_is_a_real_str(op):
    text, _ = run(lambda: SymBytes.from_input(b"Ab 1").decode("latin-1"))
    assert isinstance(text, str) and str.__len__(text) == 4
    assert getattr(str, op)(text) == getattr("Ab 1", op)()


@pytest.mark.parametrize("text", [b"  : :", b"a  b  ", b"  a  b", b" x ", b"   ", b"a b c  d "])
@pytest.mark.parametrize("maxsplit", [0, 1, 2])
def test_whitespace_split_with_maxsplit_keeps_the_rest_as_python_does(text, maxsplit):
    """The unsplit rest keeps its outer whitespace: ``"a  b  ".split(None, 1) == ["a", "b  "]``."""
    for method in ("split", "rsplit"):
        expected = getattr(text.decode("latin-1"), method)(None, maxsplit)
        result, _ = run(lambda m=method: getattr(SymBytes.from_input(text).decode("latin-1"), m)(None, maxsplit))
        assert plain(result) == expected, method
