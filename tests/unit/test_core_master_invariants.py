"""The master's invariants (``core.master.invariants``): each names what breaks it, and the check
the suite runs after every event (``helpers.master_invariants``) stops a test at the event whose
state breaks one."""

from __future__ import annotations

import dataclasses

import pytest
from test_core_master_state import h, ready, started

from symcc_ulfm.core.master import events as ev
from symcc_ulfm.core.master.fields import Recovery
from symcc_ulfm.core.master.invariants import violations
from symcc_ulfm.core.master.rounds import MAX_REJECTIONS, PIPELINE

FUZZER, ANALYST = 1, 2


def leased():
    """A master whose fuzzer worker holds a slice and whose analysis worker two inputs, two more
    inputs queued."""
    model = started(corpus=[h(i) for i in range(PIPELINE + 1)], kinds={FUZZER: "simfuzz"},
                    fuzzers=frozenset({"simfuzz"}))
    for worker in (FUZZER, ANALYST):
        model.feed(ev.FromWorker(2.0, worker, ready(worker)))
    for t in (2.0, 2.1, 2.2):
        model.feed(ev.Tick(t))
    state = model.state
    assert len(state.outstanding[ANALYST]) == 2 and len(state.outstanding[FUZZER]) == 1
    assert state.queue.pending == 2
    return model


def _another_lease(state, token: str = "0.0.99"):
    held = state.outstanding[ANALYST][0]
    return dataclasses.replace(held, fence=dataclasses.replace(held.fence, lease=token))


def _overfill(state):
    while len(state.outstanding[ANALYST]) <= PIPELINE:
        state.outstanding[ANALYST].append(_another_lease(state, f"0.0.{90 + len(state.outstanding[ANALYST])}"))


CORRUPTIONS = {
    "a lease held by two workers": (
        lambda s: s.outstanding[FUZZER].append(s.outstanding[ANALYST][0]),
        "is held by worker 1"),
    "a lease held twice": (
        lambda s: s.outstanding[ANALYST].append(s.outstanding[ANALYST][0]),
        "leases held twice"),
    "a pipeline past its depth": (
        _overfill,
        f"worker 2 holds {PIPELINE + 1} leases, more than PIPELINE"),
    "an input leased twice": (
        lambda s: s.outstanding[ANALYST].append(_another_lease(s)),
        "inputs leased twice"),
    "a fuzzer given an input": (
        lambda s: s.outstanding[FUZZER].appendleft(s.outstanding[ANALYST].pop()),
        "fuzzer worker 1 holds the lease of an input"),
    "a slice of another kind": (
        lambda s: s.outstanding[FUZZER][0].slice.update(kind="afl"),
        "is of kind afl, not simfuzz"),
    "a leased input queued again": (
        lambda s: s.queue.requeue(s.outstanding[ANALYST][0].fence.input_hash, 1),
        "inputs leased and queued"),
    "an input queued that the frontier never took": (
        lambda s: s.queue.requeue(h("never offered"), 1),
        "a queued input is unknown to the frontier"),
    "a lease without a progress time": (
        lambda s: s.progress_at.pop(ANALYST),
        "worker 2 holds a lease but has no progress time"),
    "a result counted that no record accounts for": (
        lambda s: s.results.update({ANALYST: 1}),
        "1 results counted for workers, 0 records accounted"),
    "a worker of another group ready": (
        lambda s: s.ready.add(9),
        "ready [9] are not workers"),
    "an input rejected more often than it may be": (
        lambda s: s.rejections.update({h(0): MAX_REJECTIONS + 1}),
        f"rejection counts outside 1..{MAX_REJECTIONS}"),
    "a start that waits for nothing": (
        lambda s: setattr(s, "_start", Recovery(2.0)),
        "a start or a round is in progress but no fact is awaited"),
    "stopped while not stopping": (
        lambda s: setattr(s, "stopped", True),
        "stopped without stopping"),
}


def test_a_master_that_leased_holds_every_invariant():
    assert violations(leased().state) == []


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_a_corrupted_state_is_named(name):
    state = leased().state
    corrupt, message = CORRUPTIONS[name]
    corrupt(state)
    assert any(message in broken for broken in violations(state)), violations(state)
    with pytest.raises(AssertionError, match="master state: .*" + message.replace("[", r"\[").replace("]", r"\]")):
        state.check_invariants()


def test_the_suite_checks_the_invariants_after_every_event():
    """The fixture of ``tests/conftest.py`` is in force: the next event a corrupted master handles
    raises, naming the invariant."""
    model = leased()
    model.state.ready.add(9)
    with pytest.raises(AssertionError, match=r"ready \[9\] are not workers"):
        model.feed(ev.Tick(2.5))
