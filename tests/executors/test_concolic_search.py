"""Branch sites, generational search, pruning, repair and divergence notes (real z3)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from symcc_ulfm.executors.concolic import ConcolicExecutor
from symcc_ulfm.executors.concolic.expressions import expr as E
from symcc_ulfm.executors.concolic.search import MAX_VISITS, Slicer

SITE_SCRIPT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {dir!r})
    from symcc_ulfm.executors.concolic.expressions import path as P
    from symcc_ulfm.executors.concolic.values.symbytes import SymBytes
    import sitetarget
    P.start(time.monotonic() + 30, 10000)
    sitetarget.target(SymBytes.from_input(bytes([1, 200, 3])))
    print([site for kind, _, site in P.stop().entries if kind == P.BRANCH])
""")

SITE_TARGET = textwrap.dedent("""
    def target(data):
        if data[0] == 1 and data[1] > 100:
            pass
        for b in data:
            if b == 3:
                return 1
        return 0
""")

SOLVER_ONLY = {"mutations": 0}  # these tests are about the symbolic search: no hybrid mutants


def test_branch_site_ids_are_stable_across_processes(tmp_path):
    (tmp_path / "sitetarget.py").write_text(SITE_TARGET)
    script = SITE_SCRIPT.format(dir=str(tmp_path))
    outputs = []
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                              check=True, cwd=os.getcwd())
        outputs.append(done.stdout.strip())
    assert outputs[0] == outputs[1]
    sites = eval(outputs[0])  # a printed list of ints
    assert len(sites) == 5
    assert len(set(sites[:2])) == 2, "different conditions on one line get different sites"
    assert len(set(sites[2:])) == 1, "one loop condition is one site"


CRC_LOOP = textwrap.dedent("""
    def crc_bits(data):
        crc = 0xFFFFFFFF
        for byte in data:
            crc ^= byte
            for _ in range(8):
                if crc & 1:
                    crc = (crc >> 1) ^ 0xEDB88320
                else:
                    crc >>= 1
        if crc ^ 0xFFFFFFFF == 0x12345678:
            return "match"
        return "no"
""")


@pytest.fixture()
def crc_target(tmp_path):
    path = tmp_path / "crcloop.py"
    path.write_text(CRC_LOOP)
    return f"{path}:crc_bits"


def test_site_budget_bounds_a_checksum_loop(crc_target):
    data = bytes(range(32))
    # bounded by max_branches_per_run, not by the run's clock (run_timeout_s)
    loose = ConcolicExecutor(crc_target, {"mutations": 0, "site_budget": 1000, "max_branches_per_run": 1000,
                                          "max_children": 1000, "run_timeout_s": 600})
    budgeted = ConcolicExecutor(crc_target, {"mutations": 0, "site_budget": 3})
    wide = loose.run(data)
    tight = budgeted.run(data)
    assert wide.notes["branches"] == tight.notes["branches"] == 32 * 8 + 1
    # two sites (the loop test and the final comparison): at most 3 attempts each
    assert tight.notes["attempts"] <= 2 * 3
    assert tight.notes["skipped_site_budget"] > 200
    assert wide.notes["attempts"] > 200
    assert tight.solver_queries < wide.solver_queries / 10


def test_query_cache_avoids_resolving_the_same_question(crc_target):
    executor = ConcolicExecutor(crc_target, {"mutations": 0, "site_budget": 3})
    first = executor.run(bytes(8))
    second = executor.run(bytes(8))
    assert first.solver_queries > 0
    assert second.solver_queries == 0
    assert second.notes["cache_hits"] >= first.notes["attempts"] == second.notes["attempts"]
    assert sorted(first.candidates) == sorted(second.candidates)


def test_children_follow_the_predicted_path_and_divergence_is_noted():
    executor = ConcolicExecutor("magic32", SOLVER_ONLY)
    seed = executor.seeds()[0]
    first = executor.run(seed)
    assert len(first.candidates) == 2
    short, magic = first.candidates
    assert len(short) < 12, "len(data) < 12 is a branch on the input's length"
    assert magic.startswith(b"M32!") and len(magic) == len(seed)
    second = executor.run(magic, first.hints[1])
    assert second.notes["diverged"] is False
    assert executor.info.function(second.candidates[0]) == executor.info.deep
    assert "diverged" not in executor.run(magic).notes  # no hint, no prediction
    assert "diverged" not in executor.run(b"unrelated input!", {"bound": "x"}).notes  # malformed hint ignored


def test_optimistic_children_are_repaired_when_an_earlier_check_breaks():
    executor = ConcolicExecutor("pnglike", SOLVER_ONLY)
    result = executor.run(executor.seeds()[0])
    assert result.notes["optimistic"] > 0
    assert result.notes["repaired"] > 0
    debug = [c for c in result.candidates if b"tEXtDebug\x00" in c]
    assert debug, "flipping the keyword compare must produce a candidate"
    assert executor.info.function(debug[0]) == "debug", "its chunk CRC must have been repaired"


def test_checksum_strategy_solves_equality_of_disjoint_sides():
    executor = ConcolicExecutor("magic32", SOLVER_ONLY)
    result = executor.run(b"M32!" + bytes(4) + b"\x11\x22\x33\x44" + bytes(4))
    assert result.notes["checksum"] == 1
    assert any(executor.info.function(c) == executor.info.deep for c in result.candidates)


def test_slicer_closes_over_shared_bytes():
    E.reset()
    b = [E.var(i, 0) for i in range(6)]
    c01 = E.make(E.LT, (b[0], b[1]))
    c12 = E.make(E.LT, (b[1], b[2]))
    c45 = E.make(E.EQ, (b[4], b[5]))
    slicer = Slicer()
    for node in (c01, c12, c45):
        slicer.add(node)
    assert set(slicer.slice({2})) == {c01, c12}
    assert set(slicer.slice({5})) == {c45}
    assert slicer.slice({3}) == []


def test_unsat_prefix_falls_back_to_optimistic_solving(tmp_path):
    path = tmp_path / "pinned.py"
    path.write_text(textwrap.dedent("""
        TABLE = list(range(256))

        def target(data):
            x = TABLE[data[0]]
            if data[0] == 7:
                return "seven"
            return x
    """))
    executor = ConcolicExecutor(f"{path}:target", SOLVER_ONLY)
    result = executor.run(b"\x01")
    assert result.notes["pins"] == 1
    assert result.notes["optimistic"] == 1
    assert result.candidates == [b"\x07"]


@pytest.mark.parametrize("name", ["tlv", "varint", "pnglike"])
def test_exactly_solved_children_never_diverge(name):
    """Soundness: a child from a SAT full-prefix query follows the predicted path when run."""
    executor = ConcolicExecutor(name, SOLVER_ONLY)
    queue, verdicts = [(s, None) for s in executor.seeds()], []
    for _ in range(80):
        if not queue:
            break
        result = executor.run(*queue.pop(0))
        if result.notes.get("predicted_by") == "exact":
            verdicts.append(result.notes["diverged"])
        queue.extend(zip(result.candidates, result.hints, strict=True))
    assert len(verdicts) >= 10
    assert not any(verdicts)


# -- the campaign's record of tried branches (edge order, core.master.branches) -----------------------


def test_without_a_record_nothing_is_reported_and_nothing_pruned():
    executor = ConcolicExecutor("tlv", SOLVER_ONLY)
    (seed,) = executor.seeds()
    result = executor.run(seed)
    assert result.tried == [] and result.notes["skipped_tried"] == 0 and result.candidates


UNHURRIED = {"mutations": 0, "run_timeout_s": 600}  # bounded by counts (max_children, max_branches_per_run)


def test_a_worker_handed_another_workers_record_tries_none_of_its_branches_again():
    first = ConcolicExecutor("tlv", UNHURRIED)
    first.learn([])  # edge order: a record, empty so far
    (seed,) = first.seeds()
    ran = first.run(seed)
    assert ran.candidates and ran.notes["attempts"] and len(set(ran.tried)) == len(ran.tried)
    other = ConcolicExecutor("tlv", UNHURRIED)  # another worker's process, handed the campaign's record
    other.learn(ran.tried)
    again = other.run(seed)
    assert not set(again.tried) & set(ran.tried)
    assert again.notes["skipped_tried"] >= ran.notes["attempts"]  # the same path: every flip tried is skipped
    assert not set(again.candidates) & set(ran.candidates)


def test_the_record_keys_a_loops_iterations_apart(crc_target):
    executor = ConcolicExecutor(crc_target, {"mutations": 0, "site_budget": 1000, "max_branches_per_run": 1000,
                                             "max_children": 1000, "run_timeout_s": 600})
    executor.learn([])
    result = executor.run(bytes(range(32)))
    # the loop's test is one site: its first MAX_VISITS - 1 iterations are branches of their own, the
    # later ones one branch, tried once
    notes = result.notes
    assert notes["branches"] == 32 * 8 + 1 and notes["attempts"] <= MAX_VISITS + 1
    assert notes["attempts"] + notes["skipped_tried"] == notes["branches"]  # each flip tried once, then skipped
    assert len(set(result.tried)) == len(result.tried) == 2 * notes["attempts"]  # and the direction taken
