"""Coverage of concrete runs, target failures as outcomes, and the executor contract."""

from __future__ import annotations

import textwrap
import time

import pytest

from symcc_ulfm.core.coverage import edge_of
from symcc_ulfm.errors import PolicyError, TargetError
from symcc_ulfm.executors import create
from symcc_ulfm.executors.concolic import ENGINE_VERSION, ConcolicExecutor

LOOPS = textwrap.dedent("""
    import sys

    def loop(data):
        total = 0
        for _ in range(data[0]):
            total += 1
        return total

    def boom(data):
        if data[0] == 1:
            raise KeyError("planted")
        if data[0] == 2:
            return 1 // 0
        if data[0] == 3:
            sys.exit(4)
        return "fine"

    def spin(data):
        while True:
            pass

    def deep(data, level=0):
        return deep(data, level + 1)
""")


@pytest.fixture()
def module(tmp_path):
    path = tmp_path / "covtarget.py"
    path.write_text(LOOPS)
    return str(path)


def test_hit_count_classes_distinguish_loop_counts(module):
    executor = ConcolicExecutor(f"{module}:loop")
    one, two, three, five, nine = (executor.measure(bytes([n])).coverage for n in (1, 2, 3, 5, 9))
    assert {edge_of(c) for c in two} == {edge_of(c) for c in three}, "same edges"
    assert len({one, two, three, five, nine}) == 5, "different hit-count classes"
    assert executor.measure(bytes([5])).coverage == executor.measure(bytes([6])).coverage == five, "4-7 is one class"
    assert executor.measure(bytes([5])).coverage == five, "deterministic"


def test_target_exceptions_are_outcomes_not_crashes(module):
    executor = ConcolicExecutor(f"{module}:boom", {"mutations": 0})  # the symbolic run's findings alone
    measured = [executor.measure(bytes([n])) for n in range(5)]
    covers = [m.coverage for m in measured]
    assert len(set(covers[:4])) == 4, "each failure is its own outcome"
    assert covers[0] == covers[4]
    assert [m.outcome.kind for m in measured] == ["ok", "exception", "exception", "exception", "ok"]
    assert measured[1].outcome.signature == "KeyError at covtarget.py:boom:12"
    assert measured[2].outcome.detail == "ZeroDivisionError: integer division or modulo by zero"
    assert measured[3].outcome.signature.startswith("SystemExit at covtarget.py:boom:")
    for n in range(4):
        result = executor.run(bytes([n]))
        assert result.notes["outcome"] == ["return", "exception:KeyError", "exception:ZeroDivisionError",
                                           "exception:SystemExit"][n]
        # the symbolic run's failure is reported only as the concrete run confirms it
        assert [(f.outcome, f.data) for f in result.findings] == ([] if n == 0 else [(measured[n].outcome, bytes([n]))])


def test_expected_exceptions_are_not_findings(module):
    executor = ConcolicExecutor(f"{module}:boom", {"expected_exceptions": "LookupError, ArithmeticError"})
    assert [executor.measure(bytes([n])).outcome.kind for n in range(4)] == ["ok", "ok", "ok", "exception"]
    assert executor.measure(bytes([1])).outcome.detail == "expected KeyError"
    dotted = ConcolicExecutor(f"{module}:boom", {"expected_exceptions": ["builtins.KeyError"]})
    assert [dotted.measure(bytes([n])).outcome.kind for n in range(3)] == ["ok", "ok", "exception"]


@pytest.mark.parametrize("value", ["not a name!", ["ok", 3], "nosuchmodule.Error", "builtins.len", 7])
def test_bad_expected_exceptions_are_policy_errors(module, value):
    with pytest.raises(PolicyError, match="expected_exceptions"):
        ConcolicExecutor(f"{module}:boom", {"expected_exceptions": value})


def test_exec_timeout_bounds_a_runaway_target(module):
    # no hybrid phase: the run is three executions (symbolic, confirmed, and measure's), each bounded
    executor = ConcolicExecutor(f"{module}:spin", {"exec_timeout_s": 0.3, "mutations": 0})
    start = time.monotonic()
    outcome = executor.measure(b"x").outcome
    result = executor.run(b"x")
    assert time.monotonic() - start < 3
    assert (outcome.kind, outcome.signature) == ("hang", "hang in covtarget.py:spin")
    assert result.notes["outcome"] == "timeout" and result.findings[0].outcome.kind == "hang"


def test_recursion_is_bounded_and_reported(module):
    executor = ConcolicExecutor(f"{module}:deep", {"max_frames": 50})
    assert executor.run(b"x").notes["outcome"] == "exception:RecursionError"
    measured = executor.measure(b"x")
    assert measured.coverage and measured.outcome.signature == "RecursionError at covtarget.py:deep:24"


def test_identity_names_engine_target_digest_and_options():
    executor = create("concolic", None, {"site_budget": 5})
    identity = executor.identity()
    assert identity["executor"] == "concolic" and identity["engine_version"] == ENGINE_VERSION
    assert identity["target"] == "tlv", "tlv is the documented default target"
    assert len(identity["target_sha256"]) == 64
    assert identity["options"]["site_budget"] == 5
    assert ConcolicExecutor("tlv").identity() != identity
    assert ConcolicExecutor("magic32").identity()["target_sha256"] != identity["target_sha256"]


def test_seeds_shipped_custom_and_default(module):
    assert ConcolicExecutor("tlv").seeds()[0].startswith(b"TLV\x01")
    assert ConcolicExecutor(f"{module}:loop").seeds() == [bytes(16)]
    assert ConcolicExecutor(f"{module}:loop", {"seeds": ["0a0b"]}).seeds() == [b"\n\x0b"]


@pytest.mark.parametrize("options", [{"nope": 1}, {"site_budget": 0}, {"query_timeout_ms": "x"},
                                     {"seeds": "00"}, {"seeds": ["zz"]}])
def test_bad_options_are_policy_errors(options):
    with pytest.raises(PolicyError):
        ConcolicExecutor("tlv", options)


def test_unknown_target_is_a_target_error():
    with pytest.raises(TargetError) as caught:
        ConcolicExecutor("no_such_target")
    assert caught.value.exit_code == 2
