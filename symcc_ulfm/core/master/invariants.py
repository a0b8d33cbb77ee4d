"""What holds of a master's state between two events (as dask's ``validate_state``).

:func:`violations` names every invariant of a master's state (``core.master.fields``) that does not hold;
:meth:`~.machine.MasterState.check_invariants` raises ``AssertionError`` with them. No event,
however hostile its message, may break one: a violation is a bug of the machine, never a
condition of its input, so it is an assertion, not an error of ``symcc_ulfm.errors`` with an exit
code. The tests run the check after every ``handle`` (``tests/conftest.py``); the campaign does
not, since it walks the whole queue and hashes each queued input for its owner.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from .rounds import MAX_REJECTIONS, PIPELINE

if TYPE_CHECKING:
    from .fields import MasterFields


def _repeated(values) -> list:
    return sorted(v for v, n in Counter(values).items() if n > 1)


def violations(state: MasterFields) -> list[str]:
    """Each broken invariant of ``state``, named with what breaks it (empty: all hold)."""
    config, queue = state.config, state.queue
    workers = set(config.workers)
    held = [(w, o) for w, leases in state.outstanding.items() for o in leases]
    held += [(w, o) for w, _, o in state.waiting]
    inputs = [o.fence.input_hash for _, o in held if o.slice is None]
    queued = queue.queued()
    totals = state.frontier.totals
    counted = totals["analyzed"] + totals["slices"]
    checks = [
        (config.me in config.masters, f"master {config.me} is not one of the masters {config.masters}"),
        (not workers & set(config.masters), f"workers {sorted(workers & set(config.masters))} are masters"),
        (set(state.outstanding) == workers, f"lease queues of {sorted(state.outstanding)}, not of the workers"),
        (set(state.results) == workers, f"results counted for {sorted(state.results)}, not for the workers"),
        (state.ready <= workers, f"ready {sorted(state.ready - workers)} are not workers"),
        (state.fenced <= workers, f"fenced {sorted(state.fenced - workers)} are not workers"),
        (set(state.progress_at) <= workers, f"progress of {sorted(set(state.progress_at) - workers)}, not workers"),
        (all(w in workers for w, _, _ in state.waiting), "a waiting result is of no worker"),
    ]
    for w, leases in state.outstanding.items():
        checks += [
            (len(leases) <= PIPELINE, f"worker {w} holds {len(leases)} leases, more than PIPELINE ({PIPELINE})"),
            (not leases or w in state.progress_at, f"worker {w} holds a lease but has no progress time"),
            (not config.fuzzes(w) or len(leases) <= 1, f"fuzzer worker {w} holds {len(leases)} slices"),
            (not config.fuzzes(w) or all(o.slice is not None for o in leases),
             f"fuzzer worker {w} holds the lease of an input"),
        ]
    for w, o in held:
        fence, sliced = o.fence, o.slice
        checks += [
            (fence.worker == w, f"lease {fence.lease} of worker {fence.worker} is held by worker {w}"),
            (fence.generation == state.gen, f"lease {fence.lease} is of generation {fence.generation}"),
            (sliced is None or (sliced["worker"], sliced["master"], sliced["generation"]) == (w, config.me, state.gen),
             f"slice {fence.lease} of worker {w} names worker {sliced and sliced['worker']}, master "
             f"{sliced and sliced['master']}, generation {sliced and sliced['generation']}"),
            (sliced is None or sliced["kind"] == config.slice_kind(w),
             f"slice {fence.lease} of worker {w} is of kind {sliced and sliced['kind']}, not {config.slice_kind(w)}"),
            (sliced is None or 0 < sliced["seq"] <= state._slices,
             f"slice {fence.lease} is number {sliced and sliced['seq']} of {state._slices} leased"),
        ]
    checks += [
        (not _repeated(o.fence.lease for _, o in held), f"leases held twice: {_repeated(o.fence.lease for _, o in held)}"),
        (not _repeated(inputs), f"inputs leased twice: {_repeated(inputs)}"),
        (all(queue.knows(i) for i in inputs), "a leased input is unknown to the frontier"),
        (not set(inputs) & set(queued), f"inputs leased and queued: {sorted(set(inputs) & set(queued))}"),
        (not _repeated(queued), f"inputs queued twice: {_repeated(queued)}"),
        (all(queue.knows(i) for i in queued), "a queued input is unknown to the frontier"),
        (all(queue.owns(i) for i in queued), "a queued input is owned by another master"),
        (not _repeated(state.pending), f"manifests pending twice: {_repeated(state.pending)}"),
        (all(1 <= n <= MAX_REJECTIONS for n in state.rejections.values()),
         f"rejection counts outside 1..{MAX_REJECTIONS}: {sorted(set(state.rejections.values()))}"),
        (min(state.results.values(), default=0) >= 0, "a negative count of results"),
        (sum(state.results.values()) <= counted,
         f"{sum(state.results.values())} results counted for workers, {counted} records accounted"),
        (min(totals.values()) >= 0, f"a negative total: {totals}"),
        (totals["novel"] <= totals["unique"], f"{totals['novel']} novel of {totals['unique']} unique objects"),
        (queue.edges <= len(queue.coverage), f"{queue.edges} edges in {len(queue.coverage)} coverage ids"),
        (state._start is None or state._round is None, "a round runs during the start of the generation"),
        (state._awaiting is not None or (state._start is None and state._round is None),
         "a start or a round is in progress but no fact is awaited"),
        (not state.stopped or state.stopping_since is not None, "stopped without stopping"),
        (not state.stopped or (state._awaiting is None and state._round is None),
         "stopped with a round in progress or a fact awaited"),
    ]
    return [message for holds, message in checks if not holds]
