"""Symbolic ints behave like ints; z3 and the Python evaluator agree with Python semantics."""

from __future__ import annotations

import contextlib
import time

import pytest
import z3
from helpers.concolic import plain
from hypothesis import given, settings
from hypothesis import strategies as st

from symcc_ulfm.executors.concolic.expressions import expr as E
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.expressions.z3conv import Converter
from symcc_ulfm.executors.concolic.values.symbolic import SymBool, SymInt
from symcc_ulfm.executors.concolic.values.symbytes import SymBytes

N_INPUT = 4

# (name, arity, needs a constant parameter, function on two values and the parameter)
OPS = [
    ("add", 2, False, lambda a, b, k: a + b),
    ("sub", 2, False, lambda a, b, k: a - b),
    ("rsub", 2, False, lambda a, b, k: k - a),
    ("mul", 2, False, lambda a, b, k: a * b),
    ("mulk", 1, True, lambda a, b, k: a * k),
    ("and", 2, False, lambda a, b, k: a & b),
    ("or", 2, False, lambda a, b, k: a | b),
    ("xor", 2, False, lambda a, b, k: a ^ b),
    ("xork", 1, True, lambda a, b, k: a ^ k),
    ("andk", 1, True, lambda a, b, k: a & k),
    ("shl", 1, True, lambda a, b, k: a << (k % 9)),
    ("shr", 1, True, lambda a, b, k: a >> (k % 9)),
    ("floordiv", 1, True, lambda a, b, k: a // (k or 3)),
    ("mod", 1, True, lambda a, b, k: a % (k or 3)),
    ("floordivneg", 1, True, lambda a, b, k: a // -(abs(k) or 5)),
    ("modneg", 1, True, lambda a, b, k: a % -(abs(k) or 5)),
    ("neg", 1, False, lambda a, b, k: -a),
    ("invert", 1, False, lambda a, b, k: ~a),
    ("abs", 1, False, lambda a, b, k: abs(a)),
    ("lt", 2, False, lambda a, b, k: (a < b) * 1),
    ("ge", 2, False, lambda a, b, k: (a >= b) + 0),
    ("eqk", 1, True, lambda a, b, k: (a == k) * 5),
    ("ne", 2, False, lambda a, b, k: (a != b) + a),
]

step = st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 15), st.integers(0, 15), st.integers(-300, 300))
program = st.lists(step, min_size=1, max_size=8)
inputs = st.binary(min_size=N_INPUT, max_size=N_INPUT)


def run_program(prog, regs):
    regs = list(regs)
    for op_index, i, j, k in prog:
        _, _, _, fn = OPS[op_index]
        a, b = regs[i % len(regs)], regs[j % len(regs)]
        regs.append(fn(a, b, k))
    return regs


@contextlib.contextmanager
def recorder():
    path = P.start(time.monotonic() + 60, 1_000_000)
    try:
        yield path
    finally:
        P.stop()


@pytest.fixture()
def recording():
    with recorder() as path:
        yield path


def symbolic_registers(data: bytes):
    return list(SymBytes.from_input(data))


def z3_value(conv: Converter, node: E.Node, data: bytes) -> int:
    term = conv(node)
    subst = [(conv.byte(i), z3.BitVecVal(data[i], 8)) for i in range(len(data))]
    value = z3.simplify(z3.substitute(term, *subst))
    if z3.is_bool(value):
        return z3.is_true(value)
    return value.as_signed_long()


@settings(max_examples=300, deadline=None)
@given(prog=program, data=inputs)
def test_symbolic_ints_compute_what_plain_ints_compute(prog, data):
    with recorder() as recording:
        symbolic = run_program(prog, symbolic_registers(data))
        concrete = run_program(prog, list(data))
        assert [plain(v) for v in symbolic] == concrete
        assert recording.branches == 0, "arithmetic must not ask for truth values"


@settings(max_examples=300, deadline=None)
@given(prog=program, data=inputs, other=inputs)
def test_expressions_agree_with_python_on_other_inputs(prog, data, other):
    """The graph built on ``data`` is valid for *every* input: evaluator and z3 both agree."""
    with recorder() as recording:
        symbolic = run_program(prog, symbolic_registers(data))
        if recording.pins:
            return  # a result grew past MAX_WIDTH and was concretised: no longer input-independent
        check_on(symbolic, run_program(prog, list(other)), other)


def check_on(symbolic, expected, other):
    conv = Converter()
    for value, want in zip(symbolic, expected, strict=True):
        if not isinstance(value, (SymInt, SymBool)):
            assert value == want
            continue
        assert E.evaluate(value.node, other) == want
        assert z3_value(conv, value.node, other) == want


def test_wide_results_concretise_with_a_pin(recording):
    x = SymBytes.from_input(b"\x07")[0]
    value = x
    for _ in range(40):
        value = value * 255 + x
    assert isinstance(value, int) and not isinstance(value, SymInt)
    assert recording.pins >= 1
    assert all(kind == P.PIN for kind, _, _ in recording.entries)


def test_index_hash_int_and_format_pin_the_value(recording):
    data = SymBytes.from_input(bytes([2, 9, 200]))
    table = [10, 20, 30]
    assert table[data[0]] == 30
    assert hash(data[1]) == hash(9)
    assert int(data[2]) == 200
    assert f"{data[1]:02x}" == "09"
    pins = [node for kind, node, _ in recording.entries if kind == P.PIN]
    assert len(pins) == 4
    for node in pins:
        assert node.op == E.EQ and node.args[1].op == E.CONST
        assert E.evaluate(node, bytes([2, 9, 200])) is True
        assert E.evaluate(node, bytes([3, 8, 100])) is False


def test_truth_tests_record_branches_with_direction(recording):
    data = SymBytes.from_input(b"AZ")
    assert data[0] == 0x41
    if data[1] < 0x30:
        pytest.fail("concrete value is 0x5A")
    assert not data[0] == data[1]
    taken = [(node.val, repr(node)) for kind, node, _ in recording.entries if kind == P.BRANCH]
    assert [t for t, _ in taken] == [True, False, False]


def test_division_by_symbolic_zero_raises_like_python(recording):
    data = SymBytes.from_input(b"\x00\x05")
    with pytest.raises(ZeroDivisionError):
        _ = data[1] // data[0]
    with pytest.raises(ZeroDivisionError):
        _ = 7 % data[0]
    assert recording.pins == 2


def test_float_and_truediv_concretise(recording):
    data = SymBytes.from_input(b"\x03")
    assert data[0] / 2 == 1.5
    assert data[0] == 3.0
    assert float(data[0]) == 3.0


def test_bool_arithmetic_follows_python(recording):
    data = SymBytes.from_input(b"\x01\x02")
    flag = data[0] < data[1]
    assert isinstance(flag, SymBool)
    assert plain(flag + 1) == 2
    assert plain(flag * 7) == 7
    assert plain(~(data[0] == 1)) == -2
    assert sum(x == 2 for x in data).node.val == 1
    assert recording.branches == 0
