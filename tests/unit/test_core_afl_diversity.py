"""core.afl_diversity: the afl-fuzz settings of each afl instance of a campaign, by its position
(AFL++'s docs/fuzzing_in_depth.md 3c), and the positions the layout gives."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.afl_diversity import PLAIN, SECONDARY_SCHEDULES, Variant, instances, position, variant
from symcc_ulfm.core.kinds import slot_kinds
from symcc_ulfm.core.layout import compute_layout


def test_the_first_instance_is_the_main_one_with_cmplog_following_transformations():
    assert variant(0, 1, cmplog=True) == Variant(main=True, cmplog="2AT")
    assert variant(0, 1, cmplog=True).options() == [("-l", "2AT")]
    assert variant(0, 5, cmplog=False) == PLAIN  # without a CmpLog build: a plain main instance
    assert PLAIN.options() == [] and PLAIN.env() == {}


def test_the_others_are_secondaries_each_with_its_own_power_schedule():
    count = 1 + len(SECONDARY_SCHEDULES)
    secondaries = [variant(k, count, cmplog=True) for k in range(1, count)]
    assert not any(v.main for v in secondaries)
    assert [v.schedule for v in secondaries] == ["explore", "coe", "lin", "quad", "exploit", "rare"]
    assert variant(1 + len(SECONDARY_SCHEDULES), 20, cmplog=False).schedule == "explore"  # then again


def test_cmplog_runs_on_one_or_two_instances_mopt_and_sequential_cycling_on_one_in_ten():
    for count in (1, 2, 3, 4, 8, 32):
        chosen = [variant(k, count, cmplog=True) for k in range(count)]
        cmplog = [k for k, v in enumerate(chosen) if v.cmplog]
        assert cmplog == ([0, 2] if count >= 4 else [0]), (count, cmplog)
        assert chosen[0].cmplog == "2AT" and all(v.cmplog == "2" for v in chosen[1:] if v.cmplog)
        assert [k for k, v in enumerate(chosen) if v.mopt] == [k for k in range(count) if k % 10 == 3]
        assert [k for k, v in enumerate(chosen) if v.sequential] == [k for k in range(count) if k % 10 == 7]
    assert [variant(k, 4, cmplog=False).cmplog for k in range(4)] == [None] * 4  # no build, no CmpLog


def test_half_of_the_secondaries_do_not_trim_and_the_flags_say_it_all():
    chosen = [variant(k, 11, cmplog=True) for k in range(11)]
    assert sum(v.no_trim for v in chosen[1:]) == 5 and not chosen[0].no_trim
    assert chosen[1].env() == {"AFL_DISABLE_TRIM": "1"} and chosen[2].env() == {}
    assert chosen[2].options() == [("-l", "2"), ("-p", "coe")]
    assert chosen[3].options() == [("-p", "lin"), ("-L", "0")]
    assert chosen[7].options() == [("-p", "explore"), ("-Z", None)]  # the seventh schedule: the first again
    assert chosen[3].to_json() == {"role": "secondary", "cmplog": None, "schedule": "lin", "mopt": True,
                                   "sequential": False, "no_trim": True}


def test_a_position_outside_the_campaign_is_refused():
    for index, count in ((1, 1), (-1, 2), (3, 3)):
        with pytest.raises(ValueError):
            variant(index, count, cmplog=True)


def test_positions_are_the_afl_workers_in_layout_order_then_the_lent_analysis_workers():
    # 2 groups of 3 workers, afl:1,symcc:2: masters 0 and 4; afl workers 1 and 5; symcc 2, 3, 6, 7
    layout = compute_layout(3, list(range(8)), 3, slot_kinds((("afl", 1), ("symcc", 2))))
    assert instances(layout, "afl", None) == [(1, False), (5, False)]
    assert position(layout, 5, "afl", None, lent=False) == (1, 2)
    lending = instances(layout, "afl", "symcc")
    assert lending == [(1, False), (5, False), (2, True), (3, True), (6, True), (7, True)]
    assert position(layout, 1, "afl", "symcc", lent=False) == (0, 6)  # the main instance
    assert position(layout, 6, "afl", "symcc", lent=True) == (4, 6)
    with pytest.raises(ValueError):
        position(layout, 2, "afl", "symcc", lent=False)  # a symcc worker has no afl of its own
    with pytest.raises(ValueError):
        position(layout, 2, "afl", None, lent=True)  # nor a lent one where the campaign does not lend


def test_a_position_follows_the_layout_of_each_generation():
    slots = slot_kinds((("afl", 2),))
    before = compute_layout(0, [0, 1, 2], 2, slots)
    after = compute_layout(1, [0, 2, 3], 2, slots)  # worker 1 failed, spare 3 took the last slot
    assert position(before, 2, "afl", None, lent=False) == (1, 2)
    assert position(after, 2, "afl", None, lent=False) == (0, 2)  # now the main instance
    assert position(after, 3, "afl", None, lent=False) == (1, 2)
