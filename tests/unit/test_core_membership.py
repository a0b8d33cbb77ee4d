"""Layouts, membership transitions and schedule prediction (pure core)."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.layout import LAYOUT_FORMAT, compute_layout
from symcc_ulfm.core.membership import (
    Membership,
    Prepare,
    commit,
    discover_missing,
    initial_membership,
    plan,
    predict,
)
from symcc_ulfm.core.schedule import parse_schedule
from symcc_ulfm.errors import MembershipConflict, ScheduleError

# -- layout ------------------------------------------------------------------------------------


def test_reference_layout():
    layout = compute_layout(0, range(8), 3)
    assert layout.masters == (0, 4)
    assert layout.workers == (1, 2, 3, 5, 6, 7)
    assert [g.workers for g in layout.groups] == [(1, 2, 3), (5, 6, 7)]
    assert layout.master_of(6) == 4 and layout.master_of(3) == 0 and layout.master_of(8) is None
    assert layout.group_of(4).index == 1 and layout.group_of(99) is None


def test_trailing_lone_endpoint_is_folded_into_previous_group():
    layout = compute_layout(0, range(9), 3)  # groups [0..3], [4..7], [8] -> 8 joins master 4
    assert layout.masters == (0, 4)
    assert layout.groups[1].workers == (5, 6, 7, 8)
    assert compute_layout(0, range(5), 3).groups[0].workers == (1, 2, 3, 4)


def test_short_trailing_group_keeps_its_master():
    layout = compute_layout(0, range(10), 3)  # [0..3], [4..7], [8, 9]
    assert layout.masters == (0, 4, 8)
    assert layout.groups[2].workers == (9,)


def test_layout_uses_transport_order_not_stable_values():
    layout = compute_layout(2, (0, 1, 4, 5, 6, 7, 8, 9), 3)
    assert layout.masters == (0, 6)
    assert layout.workers == (1, 4, 5, 7, 8, 9)


@pytest.mark.parametrize("active", [(), (3,)])
def test_too_few_endpoints_give_no_groups(active):
    assert compute_layout(0, active, 3).groups == ()


def test_every_active_endpoint_has_exactly_one_role():
    for n in range(2, 30):
        for w in range(1, 6):
            layout = compute_layout(0, range(n), w)
            roles = list(layout.masters) + list(layout.workers)
            assert sorted(roles) == list(range(n))
            assert all(len(g.workers) >= 1 for g in layout.groups)


def test_layout_rejects_no_workers():
    with pytest.raises(ValueError):
        compute_layout(0, range(4), 0)


def test_layout_bytes_are_canonical_and_content_addressed():
    a = compute_layout(1, [0, 1, 2, 3], 1)
    b = compute_layout(1, (0, 1, 2, 3), 1)
    assert a.to_bytes() == b.to_bytes() and a.sha256 == b.sha256
    assert a.to_json()["format"] == LAYOUT_FORMAT
    assert compute_layout(2, [0, 1, 2, 3], 1).sha256 != a.sha256


# -- membership --------------------------------------------------------------------------------


def _gen0(**kw) -> Membership:
    args = dict(ranks=10, warm_spares=2, workers_per_master=3, hosts=(), policy_sha256="p" * 64, started_at=0.0)
    args.update(kw)
    return initial_membership(**args)


def test_generation_zero():
    m = _gen0()
    assert m.generation == 0 and m.active == tuple(range(8)) and m.spares == (8, 9) and m.failed == ()
    assert m.live == tuple(range(10))
    assert [m.role_of(r) for r in (0, 1, 4, 7, 8)] == ["master", "worker", "master", "worker", "spare"]
    assert m.previous_sha256 is None


def test_snapshot_json_round_trip():
    m = _gen0(hosts=("a",) * 10, started_at=1234.5)
    again = Membership.from_json(m.to_json())
    assert again == m and again.to_bytes() == m.to_bytes() and again.sha256 == m.sha256
    bad = m.to_json() | {"active": [0, 1, 2]}
    with pytest.raises(ValueError):
        Membership.from_json(bad)
    with pytest.raises(ValueError):
        Membership.from_json(m.to_json() | {"format": "x"})


def test_discover_missing():
    m = _gen0()
    assert discover_missing(m, [0, 1, 3, 4, 5, 6, 7, 8, 9]) == (2,)
    assert discover_missing(m, range(10)) == ()
    with pytest.raises(MembershipConflict):
        discover_missing(m, [0, 1, 10])


def test_plan_compatibility():
    m = _gen0()
    p = plan(m, (3, 2))
    assert p == Prepare(1, m.sha256, (2, 3))
    assert plan(m, (2, 3), existing=p) == p  # idempotent
    assert plan(m, (2, 3, 5), existing=p).missing == (2, 3, 5)  # failures during discovery only add
    with pytest.raises(MembershipConflict):
        plan(m, (2,), existing=p)  # the plan shrank: fork
    with pytest.raises(MembershipConflict):
        plan(m, (4,), existing=Prepare(1, m.sha256, (5,)))
    with pytest.raises(MembershipConflict):
        plan(m, (2,), existing=Prepare(1, "0" * 64, (2,)))
    with pytest.raises(MembershipConflict):
        plan(m, (2,), existing=Prepare(2, m.sha256, (2,)))
    with pytest.raises(MembershipConflict):
        plan(m, ())


def test_commit_promotes_lowest_spares_and_chains():
    m0 = _gen0()
    m1, r1 = commit(m0, plan(m0, (2,)))
    assert m1.active == (0, 1, 3, 4, 5, 6, 7, 8) and m1.spares == (9,) and m1.failed == (2,)
    assert r1.missing == (2,) and r1.promoted == (8,)
    assert r1.previous_sha256 == m0.sha256 == m1.previous_sha256
    assert r1.snapshot_sha256 == m1.sha256 and r1.layout_sha256 == m1.layout.sha256
    # a spare dying needs no promotion; the budget is refilled only for active losses
    m2, r2 = commit(m1, plan(m1, (9,)))
    assert r2.promoted == () and m2.spares == () and m2.active == m1.active
    # no spare left: continue with fewer
    m3, r3 = commit(m2, plan(m2, (1, 3)))
    assert r3.promoted == () and m3.active == (0, 4, 5, 6, 7, 8)
    assert m3.failed == (1, 2, 3, 9)


def test_commit_is_deterministic():
    m0 = _gen0()
    a = commit(m0, plan(m0, (2,)))
    b = commit(_gen0(), plan(_gen0(), (2,)))
    assert a[0].to_bytes() == b[0].to_bytes() and a[1].to_bytes() == b[1].to_bytes()


# -- prediction --------------------------------------------------------------------------------


def test_reference_prediction():
    receipts = predict(10, 2, 3, parse_schedule("0:2,1:3"))
    assert [r.generation for r in receipts] == [1, 2]
    assert [r.missing for r in receipts] == [(2,), (3,)]
    assert [r.promoted for r in receipts] == [(8,), (9,)]
    m0 = _gen0(policy_sha256="", hosts=())
    m1, _ = commit(m0, plan(m0, (2,)))
    m2, r2 = commit(m1, plan(m1, (3,)))
    assert m2.active == (0, 1, 4, 5, 6, 7, 8, 9)
    assert m2.layout.masters == (0, 6)
    assert r2.layout_sha256 == receipts[1].layout_sha256


def test_prediction_of_empty_schedule():
    assert predict(10, 2, 3, ()) == []


@pytest.mark.parametrize(
    "schedule, fragment",
    [
        ("0:2,2:3", "never reached"),
        ("1:3", "never reached"),
        ("0:2@idle", "@idle needs a warm spare"),
        ("0:0@idle", "@idle needs a warm spare"),
        ("0:1@commit", "@commit needs a master"),
        ("0:8@commit", "@commit needs a master"),
        ("0:8", "@work needs an active rank"),
        ("0:10", "outside 0..9"),
        ("0:99@idle", "outside 0..9"),
        ("0:2,1:2", "already dead"),
        ("0:2@recovery", "@recovery needs another failure"),
    ],
)
def test_impossible_schedules(schedule, fragment):
    with pytest.raises(ScheduleError) as info:
        predict(10, 2, 3, parse_schedule(schedule))
    assert info.value.field == "failure_schedule"
    assert fragment in str(info.value)


def test_too_few_actives_left():
    with pytest.raises(ScheduleError, match="at least one master and one worker"):
        predict(3, 0, 3, parse_schedule("0:1,0:2"))
    with pytest.raises(ScheduleError, match="at least one master and one worker"):
        predict(4, 0, 1, parse_schedule("0:1,1:2,2:3"))
    assert len(predict(4, 0, 1, parse_schedule("0:1,1:2"))) == 2


def test_valid_phases():
    receipts = predict(10, 2, 3, parse_schedule("0:0@commit,0:8@idle,0:3@recovery"))
    assert receipts[0].missing == (0, 3, 8)
    assert receipts[0].promoted == (9,)
    assert predict(10, 2, 3, parse_schedule("0:4@commit!"))[0].promoted == (8,)
