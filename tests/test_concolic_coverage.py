"""Coverage of concrete runs, target failures as outcomes, and the executor contract."""

from __future__ import annotations

import textwrap
import time

import pytest

from symcc_ulfm.errors import PolicyError, TargetError
from symcc_ulfm.executors import create
from symcc_ulfm.executors.base import edge_of
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
    one, two, three, five, nine = (executor.coverage(bytes([n])) for n in (1, 2, 3, 5, 9))
    assert {edge_of(c) for c in two} == {edge_of(c) for c in three}, "same edges"
    assert len({one, two, three, five, nine}) == 5, "different hit-count classes"
    assert executor.coverage(bytes([5])) == executor.coverage(bytes([6])) == five, "4-7 is one class"
    assert executor.coverage(bytes([5])) == five, "deterministic"


def test_target_exceptions_are_outcomes_not_crashes(module):
    executor = ConcolicExecutor(f"{module}:boom")
    covers = [executor.coverage(bytes([n])) for n in range(5)]
    assert len(set(covers[:4])) == 4, "each failure is its own outcome"
    assert covers[0] == covers[4]
    for n in range(4):
        result = executor.run(bytes([n]))
        assert result.notes["outcome"] == ["return", "exception:KeyError", "exception:ZeroDivisionError",
                                           "exception:SystemExit"][n]


def test_exec_timeout_bounds_a_runaway_target(module):
    executor = ConcolicExecutor(f"{module}:spin", {"exec_timeout_s": 0.3})
    start = time.monotonic()
    executor.coverage(b"x")
    result = executor.run(b"x")
    assert time.monotonic() - start < 3
    assert result.notes["outcome"] == "timeout"


def test_recursion_is_bounded_and_reported(module):
    executor = ConcolicExecutor(f"{module}:deep", {"max_frames": 50})
    assert executor.run(b"x").notes["outcome"] == "exception:RecursionError"
    assert executor.coverage(b"x")


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
