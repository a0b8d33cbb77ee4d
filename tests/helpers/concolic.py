"""What the concolic engine's property tests share: plain values of symbolic ones, and running
a piece of code under a path recorder."""

from __future__ import annotations

import time

from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.values.seq import SymSequence
from symcc_ulfm.executors.concolic.values.symbolic import SymBool, SymInt


def plain(value):
    """``value`` with every symbolic part replaced by its concrete value (lists and tuples too)."""
    if isinstance(value, SymInt):
        return value.node.val
    if isinstance(value, SymBool):
        return bool(value.node.val)
    if isinstance(value, SymSequence):
        return value._plain()
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


def with_recorder(fn):
    """fn(path) under a fresh path recorder."""
    path = P.start(time.monotonic() + 60, 1_000_000)
    try:
        return fn(path)
    finally:
        P.stop()


def run(fn):
    """fn() under a recorder: (result or the exception type, recorded path)."""

    def call(path):
        try:
            return fn(), path
        except Exception as exc:  # compared with the concrete exception type
            return type(exc), path

    return with_recorder(call)
