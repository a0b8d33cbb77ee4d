"""The named steps of the master's machine: the control flow as data.

An instruction that ends in a fact is emitted together with the :class:`Step` that takes the
fact (``MasterState._ask``); the machine keeps that pair, not a closure, and its table maps each
step to the transition that handles it. A round or a drain, once over, goes on with its
:class:`After`: what the stimulus that started it does next.
"""

from __future__ import annotations

import enum


class Step(enum.Enum):
    # start of a generation (core.master.start)
    SCANNED = "scanned"
    REPLAYED = "replayed"
    DEATHS_READ = "deaths-read"
    MARKERS_READ = "markers-read"
    POISON_LEASED = "poison-leased"
    POISON_COMMITTING = "poison-committing"
    POISON_SYNCED = "poison-synced"
    LISTED = "listed"
    # a tick (core.master.machine)
    POLLED = "polled"
    FAILURE_SYNCED = "failure-synced"
    # a round of group commit and a drain (core.master.rounds)
    ACCEPTED = "accepted"
    COMMITTING = "committing"
    PUBLISHED = "published"
    LEASED = "leased"
    REPLAY_PUBLISHED = "replay-published"
    ROUND_SYNCED = "round-synced"
    DONE = "done"
    DRAIN_PUBLISHED = "drain-published"
    DRAIN_SYNCED = "drain-synced"
    DRAINED = "drained"


class After(enum.Enum):
    """What comes after a round or a drain."""

    TICK = "tick"  # the rest of the tick that started it: stop when stopping and nothing is held
    STOP = "stop"  # stop the master
