"""Rendezvous ownership and the master's frontier queue (pure core)."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from symcc_ulfm.core.coverage import branch_coverage, coverage_id, is_branch_coverage
from symcc_ulfm.core.master.frontier import PRIORITY_NOVEL, PRIORITY_SEED, PRIORITY_UNIQUE, FrontierQueue
from symcc_ulfm.core.master.ownership import owner, weight


def h(i: int) -> str:
    return hashlib.sha256(f"in-{i}".encode()).hexdigest()


HASHES = [h(i) for i in range(10_000)]

# -- ownership ---------------------------------------------------------------------------------


def test_owner_is_deterministic_and_order_independent():
    masters = (0, 4, 8, 12)
    for x in HASHES[:500]:
        o = owner(x, masters)
        assert o in masters
        assert owner(x, list(reversed(masters))) == o == owner(x, masters)
        assert o == max(masters, key=lambda m: weight(m, x))


def test_owner_is_pinned():
    # a fixed point so that a change to the weight function (which would reshuffle every
    # campaign's ownership between versions) is noticed
    assert weight(0, "0" * 64) == hashlib.sha256(b"0:" + b"0" * 64).digest()


def test_owner_needs_masters():
    with pytest.raises(ValueError):
        owner(h(1), ())


def test_single_master_owns_everything():
    assert {owner(x, (6,)) for x in HASHES[:100]} == {6}


@pytest.mark.parametrize("masters", [(0, 4), (0, 4, 8), (0, 6, 12, 18, 24)])
def test_balanced_over_10k_hashes(masters):
    counts = Counter(owner(x, masters) for x in HASHES)
    expected = len(HASHES) / len(masters)
    assert set(counts) == set(masters)
    for m in masters:
        assert abs(counts[m] - expected) < 0.1 * expected, counts


def test_minimal_movement_when_a_master_disappears():
    before = (0, 4, 8, 12)
    after = (0, 4, 12)
    moved = 0
    for x in HASHES:
        a, b = owner(x, before), owner(x, after)
        if a != 8:
            assert a == b  # inputs of surviving masters never move
        else:
            moved += 1
            assert b in after
    assert 0.2 * len(HASHES) < moved < 0.3 * len(HASHES)


def test_minimal_movement_when_a_master_is_added():
    before = (0, 4)
    after = (0, 4, 9)
    for x in HASHES[:2000]:
        b = owner(x, after)
        assert b == 9 or b == owner(x, before)


# -- frontier queue --------------------------------------------------------------------------


def _owned(s: FrontierQueue, n: int) -> list[str]:
    return [x for x in HASHES if s.owns(x)][:n]


def test_priority_order_fifo_within_priority():
    s = FrontierQueue(me=0, masters=(0,))
    s.offer(h(1), PRIORITY_UNIQUE)
    s.offer(h(2), PRIORITY_NOVEL)
    s.offer(h(3), PRIORITY_SEED)
    s.offer(h(4), PRIORITY_NOVEL)
    s.offer(h(5), PRIORITY_UNIQUE)
    assert s.pending == 5
    assert [s.next_input() for _ in range(5)] == [h(3), h(2), h(4), h(1), h(5)]
    assert s.next_input() is None and s.pending == 0


def test_offer_dedupes_and_respects_ownership():
    s = FrontierQueue(me=0, masters=(0, 4))
    mine = _owned(s, 3)
    theirs = [x for x in HASHES if not s.owns(x)][:3]
    assert all(owner(x, (0, 4)) == 4 for x in theirs)
    assert all(s.offer(x, 1) for x in mine)
    assert not any(s.offer(x, 3) for x in mine)  # seen once, never queued again, even at a higher priority
    assert not any(s.offer(x, 1) for x in theirs)
    assert s.pending == 3
    s.next_input()
    assert not s.offer(mine[0], 1)  # dispatched inputs stay known


def test_forget_and_requeue():
    s = FrontierQueue(me=0, masters=(0,))
    s.forget(h(1))
    assert not s.offer(h(1), 3) and s.pending == 0
    s.offer(h(2), 1)
    x = s.next_input()
    s.requeue(x, 1)  # a lease lost: back in the queue even though known
    s.offer(h(3), 2)
    assert [s.next_input(), s.next_input()] == [h(3), h(2)]


def test_judge_dedupes_within_a_result_and_judges_novelty_within_it():
    s = FrontierQueue(me=0, masters=(0,))
    s.absorb([1, 2])
    a, b, c, d = h(10), h(11), h(12), h(13)
    judged = s.judge(
        [
            {"sha256": a, "length": 3, "coverage": [2, 1]},  # nothing new
            {"sha256": b, "length": 4, "coverage": [5, 3, 3]},  # new edges 3, 5
            {"sha256": b, "length": 4, "coverage": [9]},  # duplicate content: dropped
            {"sha256": c, "length": 5, "coverage": [3]},  # 3 was added by b in this result
            {"sha256": d, "length": 6, "coverage": [5, 7]},  # 7 is new
        ]
    )
    assert [j.sha256 for j in judged] == [a, b, c, d]
    assert [j.novel for j in judged] == [False, True, False, True]
    assert judged[1].coverage == (3, 5)
    assert judged[3].length == 6
    assert s.coverage == {1, 2}  # judging does not absorb


def test_absorb_returns_new_ids():
    s = FrontierQueue(me=0, masters=(0,))
    assert s.absorb([1, 2, 2]) == {1, 2}
    assert s.absorb([2, 3]) == {3}
    assert s.coverage == {1, 2, 3}


def test_edges_count_the_edge_ids_absorbed_once_and_no_branch_direction():
    s = FrontierQueue(me=0, masters=(0,))
    s.absorb([coverage_id(5, 1), coverage_id(5, 2), branch_coverage(9, True)])
    s.absorb([coverage_id(5, 1), coverage_id(6, 1), branch_coverage(9, True), branch_coverage(9, False)])
    assert s.edges == 3 == sum(1 for c in s.coverage if not is_branch_coverage(c))


def test_route_groups_by_owner_and_queues_own_items():
    masters = (0, 4, 8)
    s = FrontierQueue(me=4, masters=masters)
    items = [(x, i % 3 + 1) for i, x in enumerate(HASHES[:60])]
    forward = s.route(items)
    assert 4 not in forward
    for dest, batch in forward.items():
        assert dest in (0, 8)
        assert all(owner(x, masters) == dest for x, _ in batch)
    mine = [x for x, _ in items if owner(x, masters) == 4]
    assert s.pending == len(mine)
    assert sum(len(b) for b in forward.values()) + len(mine) == len(items)
    # order within a forward batch follows the input
    for batch in forward.values():
        assert [x for x, _ in batch] == [x for x, _ in items if x in {y for y, _ in batch}]
