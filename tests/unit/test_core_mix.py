"""The adaptive mix of kinds (``core.master.mix``): facts from done records, windows by count, the
rule, and the oracle's own implementation of it (``evidence.oracle.mix_checks``) agreeing with it."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symcc_ulfm.core.coverage import coverage_id
from symcc_ulfm.core.master import mix
from symcc_ulfm.core.master.mix import KindYields, decide, fact_of, lent_workers, new_edges, previous_decision
from symcc_ulfm.evidence.oracle import mix_checks


def h(i: object) -> str:
    return hashlib.sha256(repr(i).encode()).hexdigest()


def done(work: object, kind: str, edges: int | None = None, cpu: float | None = None, seconds: float = 0.5,
         generation: int = 0, novel: int = 0, **manifest) -> dict:
    stats = {"seconds": seconds, **({"cpu_seconds": cpu} if cpu is not None else {})}
    objects = [{"sha256": h((work, i)), "novel": True} for i in range(novel)]
    body = {"kind": kind, "generation": generation, "stats": stats, "objects": objects, "master": 0, "slice": None,
            **({"new_edges": edges} if edges is not None else {}), **manifest}
    return {"work_hash": h(work), "state": "done", "manifest": body}


def test_a_fact_is_the_new_edges_and_cpu_seconds_of_a_manifest_else_its_novel_objects_and_wall_time():
    assert fact_of(done(1, "afl", edges=7, cpu=1.5)) == mix.Fact(h(1), "afl", 7, 1.5)
    # an older WAL: no new_edges, no cpu_seconds
    assert fact_of(done(2, "symcc", novel=3, seconds=2.0)) == mix.Fact(h(2), "symcc", 3, 2.0)
    assert fact_of(done(3, "symcc", edges=1, quarantine={"strikes": []})) is None


def test_new_edges_count_edges_not_known_and_not_branch_directions():
    known = {coverage_id(1, 1)}
    coverage = [(coverage_id(1, 1), coverage_id(2, 1)), (coverage_id(2, 1), coverage_id(3, 2))]
    assert new_edges(coverage, known) == 2


def test_the_window_is_the_last_records_of_each_kind_by_count_and_restores_from_the_wal_alone():
    yields = KindYields("symcc", "afl")
    records = [done(("a", i), "symcc", edges=i, cpu=1.0) for i in range(12)] + \
              [done(("f", i), "afl", edges=1, cpu=1.0) for i in range(3)] + [done("x", "havoc", edges=9)]
    for record in records:
        yields.observe(record)
    assert [f.edges for f in yields.recent["symcc"]] == list(range(4, 12))  # the last WINDOW
    assert len(yields.recent["afl"]) == 3 and yields.stale == 3
    restored = KindYields("symcc", "afl")
    restored.restore([*reversed(records), {**done("leased", "afl"), "state": "leased"}])
    # rebuilt in (generation, work hash) order: the same records kept where each kind has fewer than WINDOW
    assert set(restored.recent["afl"]) == set(yields.recent["afl"]) and restored.stale <= 3
    assert len(restored.recent["symcc"]) == mix.WINDOW


def measured(yields: KindYields, kind: str, count: int, edges: int, cpu: float) -> None:
    for i in range(count):
        yields.observe(done((kind, i, edges, cpu), kind, edges=edges, cpu=cpu))


@pytest.mark.parametrize("analysis_edges, fuzzer_edges, previous, novel, lent, reason", [
    (0, 5, 0, False, 1, "yield"),  # the fuzzer finds, the analysis does not: lend the analysis slot
    (0, 5, 0, True, 0, "floor"),  # ... unless inputs that added coverage wait for it
    (5, 0, 1, False, 0, "yield"),  # the analysis finds again: take the slot back
    (1, 4, 0, False, 0, "band"),  # want = 2 * 1/5 = 0.4 analysis slots: within the band, stays analyzing
    (1, 4, 1, False, 1, "band"),  # ... and stays lent: the hysteresis
    (1, 0, 0, False, 0, "yield"),  # want 2 slots, at most the one there is
    (0, 0, 1, False, 1, "no-yield"),
])
def test_the_rule_lends_by_yield_with_hysteresis_and_a_floor(analysis_edges, fuzzer_edges, previous, novel, lent,
                                                             reason):
    yields = KindYields("symcc", "afl")
    measured(yields, "symcc", 4, analysis_edges, 1.0)
    measured(yields, "afl", 4, fuzzer_edges, 1.0)
    yields.stale = 0
    decision = decide(yields, 1, 1, previous, novel)
    assert (decision.lent, decision.reason) == (lent, reason)
    assert decision.to_json()["window"]["afl"][0] == [h(("afl", 0, fuzzer_edges, 1.0)), fuzzer_edges, 1.0]


def test_a_kind_without_a_recent_measurement_gets_a_measurement_lease():
    yields = KindYields("symcc", "afl")
    measured(yields, "afl", 4, 5, 1.0)
    assert (decide(yields, 2, 1, 2, False).lent, decide(yields, 2, 1, 2, False).reason) == (1, "explore")
    measured(yields, "symcc", 4, 0, 1.0)
    assert decide(yields, 2, 1, 2, False).lent == 2  # measured now: lend both
    measured(yields, "afl", mix.STALE_AFTER, 5, 1.0)  # the analysis kind's window is stale
    assert (decide(yields, 2, 1, 2, False).lent, decide(yields, 2, 1, 2, False).reason) == (1, "explore")
    fresh = KindYields("symcc", "afl")
    measured(fresh, "symcc", 4, 0, 1.0)
    assert decide(fresh, 1, 1, 1, False).reason == "unmeasured"  # the fuzzer's own slots measure it


def test_the_decision_lends_the_last_analysis_workers_and_is_restored_from_the_wal():
    assert lent_workers([2, 3, 5], 2) == frozenset({3, 5}) and lent_workers([2, 3], 0) == frozenset()

    def sliced(work, generation, seq, lent, master=0):
        return done(work, "afl", generation=generation, master=master, mix={"lent": lent},
                    slice={"seq": seq})
    records = [sliced(1, 0, 9, 2), sliced(2, 1, 3, 1), sliced(3, 1, 2, 0), sliced(4, 2, 1, 0, master=4)]
    assert previous_decision(records, 0) == 1 and previous_decision(records, 7) == 0


windows = st.lists(st.tuples(st.integers(0, 50), st.floats(0, 30, allow_nan=False)), max_size=mix.WINDOW)


@settings(max_examples=150, deadline=None)
@given(windows, windows, st.integers(0, 4), st.integers(1, 4), st.integers(0, 4), st.booleans(),
       st.integers(0, 2 * mix.STALE_AFTER))
def test_the_oracles_rule_agrees_with_the_masters(analysis, fuzzer, slots, fuzzers, previous, novel, stale):
    """Two implementations of one rule (core and the oracle's own) give the same decision."""
    yields = KindYields("symcc", "afl")
    for i, (edges, cpu) in enumerate(analysis):
        yields.observe(done(("a", i), "symcc", edges=edges, cpu=cpu))
    for i, (edges, cpu) in enumerate(fuzzer):
        yields.observe(done(("f", i), "afl", edges=edges, cpu=cpu))
    yields.stale = stale
    decision = decide(yields, slots, fuzzers, min(previous, slots), novel)
    assert 0 <= decision.lent <= slots
    if novel and slots:
        assert decision.lent < slots  # the floor
    recorded = decision.to_json()
    assert mix_checks.expected(recorded) == (recorded["lent"], recorded["reason"])


def test_the_oracle_measures_records_of_older_wals_as_the_master_does():
    for record in (done(1, "afl", edges=7, cpu=1.5), done(2, "symcc", novel=3, seconds=2.0),
                   done(3, "symcc", edges=0, seconds=0.25)):
        fact = fact_of(record)
        assert mix_checks.measured(record["manifest"]) == (fact.edges, fact.cpu_s)
