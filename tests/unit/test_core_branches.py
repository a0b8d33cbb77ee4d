"""Concolic work by edge (pure core): the campaign's record of tried branches, the analyzed edges,
the edge order of the frontier and its skips, rebuilt from done records alone."""

from __future__ import annotations

import hashlib
import random

import pytest

from symcc_ulfm.core import envelope
from symcc_ulfm.core.envelope import MAX_TRIED_IDS, Fence
from symcc_ulfm.core.master.branches import Analyzed, BranchRecord, room
from symcc_ulfm.core.master.frontier import PRIORITY_NOVEL, PRIORITY_SEED, Frontier, Judged
from symcc_ulfm.core.master.manifest import result_manifest
from symcc_ulfm.core.policy import Policy
from symcc_ulfm.core.slices import descriptor, slice_hash
from symcc_ulfm.errors import PolicyError

LIMIT = 1 << 20


def h(i) -> str:
    return hashlib.sha256(f"in-{i}".encode()).hexdigest()


# -- the record ----------------------------------------------------------------------------------


def test_merge_keeps_the_order_and_returns_only_new_ids():
    record = BranchRecord()
    assert record.merge([5, 3, 5]) == [5, 3]
    assert record.merge([3, 9]) == [9]
    assert len(record) == 3 and 9 in record and 4 not in record


def test_each_worker_is_sent_every_id_once_in_bounded_deltas():
    record = BranchRecord()
    record.merge(range(10))
    assert record.delta(1, 4) == [0, 1, 2, 3]
    assert record.delta(2, 100) == list(range(10))
    record.merge([10, 3])
    assert record.delta(1, 100) == [4, 5, 6, 7, 8, 9, 10]
    assert record.delta(2, 100) == [10]
    assert record.delta(1, 100) == []


@pytest.mark.parametrize("limit", [4096, 1 << 16, 4 << 20])
def test_a_work_with_a_full_delta_of_the_largest_ids_fits_its_limit(limit):
    fence = Fence(7, "g7-m0", "7.0.123456", "a" * 64, "b" * 64, 12345)
    ids = [2**63 - 1 - i for i in range(room(limit))]
    assert 0 < len(ids) <= MAX_TRIED_IDS
    work = envelope.encode("WORK", limit, **fence.fields(), hint={"bound": 2**40, "branch": 2**40, "expect": -2**60,
                                                                  "optimistic": True}, tried=ids)
    assert envelope.decode(work, limit)["tried"] == ids


def test_tried_is_optional_and_bounded_on_the_wire():
    fence = Fence(0, "g0-m0", "0.0.1", "a" * 64, "b" * 64, 1)
    plain = envelope.encode("WORK", LIMIT, **fence.fields(), hint=None, tried=[])
    assert b"tried" not in plain and "tried" not in envelope.decode(plain, LIMIT)  # an empty one is left out
    with pytest.raises(envelope.ProtocolError, match="tried"):
        envelope.encode("WORK", LIMIT, **fence.fields(), hint=None, tried=list(range(MAX_TRIED_IDS + 1)))
    with pytest.raises(envelope.ProtocolError, match="tried"):
        envelope.encode("WORK", LIMIT, **fence.fields(), hint=None, tried=[-1])
    with pytest.raises(envelope.ProtocolError, match="analyzed"):
        envelope.encode("FRONTIER", LIMIT, generation=0, master=0, items=[], coverage=[], analyzed=[2**63])


# -- analyzed edges ------------------------------------------------------------------------------


def test_analyzed_edges_do_not_depend_on_the_order_of_the_facts():
    first, second = Analyzed(), Analyzed()
    assert first.coverage(h(1), [1, 2]) == [] and first.analyzed(h(1)) == [1, 2]
    assert second.analyzed(h(1)) == [] and second.coverage(h(1), [1, 2]) == [1, 2]
    for a in (first, second):
        a.coverage(h(2), [2, 3, 4])
        assert a.ids == {1, 2} and a.score(h(2)) == 2 and a.score(h(9)) is None
        assert a.analyzed(h(1)) == []  # twice: nothing new


# -- the edge order --------------------------------------------------------------------------------


def _frontier(order="edge", masters=(0,)) -> Frontier:
    return Frontier(0, masters, 0, LIMIT, order)


def _record(n: int, input_hash: str, objects: dict[str, list[int]], tried=(), sliced=None) -> dict:
    """A done record of master 0 whose manifest publishes ``objects`` (name -> coverage)."""
    fence = Fence(0, "g0-m0", f"0.0.{n}", hashlib.sha256(f"work-{n}".encode()).hexdigest(), input_hash, 1)
    kept = [Judged(name, 4, tuple(cov), True) for name, cov in objects.items()]
    manifest = result_manifest(0, 0, 1, "concolic", fence, kept, [], [], {}, None, sliced, tried)
    return {"work_hash": fence.work_hash, "input_hash": input_hash, "state": "done", "manifest": manifest,
            "done": {"generation": 0, "master": 0, "claimed": list(objects)}}


def test_the_input_with_the_most_unanalyzed_edges_goes_first_and_one_with_none_is_skipped():
    f = _frontier()
    f.account(_record(1, h("seed"), {h("a"): [1, 2], h("b"): [1, 2, 3, 4], h("c"): [3]}))
    f.account(_record(2, h("x"), {h("x1"): [9]}))  # x: an input whose own coverage was never told
    for name in (h("a"), h("b"), h("c")):
        assert f.queue.knows(name)
    assert f.queue.next_input() == h("b")
    f.account(_record(3, h("b"), {}))  # b analyzed: 1..4 are on an analyzed path
    assert f.queue.next_input() == h("x1")  # a and c on the way: nothing left to analyze on their paths
    assert f.queue.skipped == [h("a"), h("c")] and f.queue.next_input() is None


def test_seeds_and_inputs_of_unknown_coverage_go_first_and_are_never_skipped():
    f = _frontier()
    f.account(_record(1, h("seed"), {h("a"): [1]}))
    assert f.queue.next_input() == h("a")
    f.account(_record(2, h("a"), {}))
    f.queue.offer(h("other"), PRIORITY_NOVEL)  # offered without a known coverage
    f.queue.offer(h("seed2"), PRIORITY_SEED)
    assert {f.queue.next_input(), f.queue.next_input()} == {h("other"), h("seed2")}
    assert f.queue.next_input() is None


def test_seed_order_is_unchanged_and_skips_nothing():
    f = _frontier("seed")
    f.account(_record(1, h("seed"), {h("a"): [1, 2], h("b"): [1, 2, 3, 4]}, tried=[7]))
    f.account(_record(2, h("b"), {}))
    assert f.queue.next_input() == h("a") and f.queue.skipped == []  # shorter first, never scored
    assert len(f.branches) == 0


def test_a_rebuilt_frontier_skips_the_same_inputs_whatever_the_order_of_the_records():
    objects = {h(i): [i % 5, 10 + i % 3] for i in range(12)}
    wal = [_record(1, h("seed"), objects, tried=[100, 101])]
    live = _frontier()
    live.account(wal[0])
    while (name := live.queue.next_input()) is not None:  # one worker analyzes what it is leased, in turn
        wal.append(_record(len(wal) + 1, name, {}, tried=[100 + len(wal)]))
        live.account(wal[-1])
    skipped = set(live.queue.skipped)
    assert skipped and len(wal) - 1 + len(skipped) == len(objects)
    for seed in range(5):
        shuffled = list(wal)
        random.Random(seed).shuffle(shuffled)
        rebuilt = _frontier()
        settled = set()
        for record in shuffled:  # what a new master's start learns from the WAL
            settled.add(record["input_hash"])
            settled |= rebuilt.learn(record)
        assert set(rebuilt.branches._order) == set(live.branches._order) == set(range(100, 100 + len(wal)))
        for name in objects:  # then the corpus, less what is settled
            if name not in settled:
                rebuilt.queue.offer(name, rebuilt.priority_of(name))
        assert rebuilt.queue.next_input() is None
        assert set(rebuilt.queue.skipped) == skipped


def test_frontier_messages_share_the_record_the_analyzed_edges_and_each_items_coverage():
    masters = (0, 4)
    f = Frontier(0, masters, 0, LIMIT, "edge")
    names = {h(f"o{i}"): [i, 100 + i] for i in range(8)}
    line, out = f.account(_record(1, h("seed"), names, tried=[7, 8]))
    ((peer, payload),) = out
    message = envelope.decode(payload, LIMIT)
    assert peer == 4 and message["tried"] == [7, 8]
    assert message["items"] and all(i["coverage"] == names[i["input_hash"]] for i in message["items"])
    other = Frontier(4, masters, 0, LIMIT, "edge")
    other.take(message)
    assert other.branches._order == [7, 8]
    forwarded = message["items"][0]["input_hash"]
    assert other.analyzed.score(forwarded) == 2
    _, out = f.account(_record(2, forwarded, {}))  # analyzed here (a replay): its edges travel as facts
    other.take(envelope.decode(out[0][1], LIMIT))
    assert other.analyzed.score(forwarded) == 0


def test_facts_that_do_not_fit_a_frontier_message_are_left_out():
    masters = (0, 4)
    small = 6000
    f = Frontier(0, masters, 0, small, "edge")
    _, out = f.account(_record(1, h("seed"), {h("a"): [1]}, tried=list(range(2**60, 2**60 + 400))))
    message = envelope.decode(out[0][1], small)
    assert "tried" not in message and message["coverage"] == [1]


def test_a_slice_settles_no_input_as_analyzed():
    f = _frontier()
    f.account(_record(1, h("seed"), {h("a"): [1, 2]}))
    sliced = descriptor("havoc", 0, 0, 1, 1, 1.0)
    f.account(_record(2, slice_hash(sliced), {h("b"): [1, 2]}, sliced=sliced))
    assert f.analyzed.ids == set() and f.queue.next_input() in (h("a"), h("b"))


def test_the_order_is_a_policy_field_written_only_when_it_is_edge():
    assert "concolic_order" not in Policy().to_json()
    edge = Policy(concolic_order="edge")
    assert edge.to_json()["concolic_order"] == "edge" and Policy.from_json(edge.to_json()) == edge
    assert edge.sha256 != Policy().sha256
    with pytest.raises(PolicyError) as info:
        Policy(concolic_order="bfs")
    assert info.value.field == "concolic_order"
