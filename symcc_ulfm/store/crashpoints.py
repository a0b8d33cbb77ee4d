"""Named durable step boundaries where a test can SIGKILL the process.

``SYMCC_ULFM_CRASH_AT=NAME`` (or ``NAME#N`` for the N-th time the point is reached) makes the
process kill itself with SIGKILL at that boundary; replaying the state afterwards must reach
the same consistent outcome. Unset, a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

CRASH_VAR = "SYMCC_ULFM_CRASH_AT"

CRASH_POINTS = (
    "wal.leased",  # lease record written
    "wal.committing",  # manifest written, state committing
    "commit.claimed",  # an object's claim linked, object not yet published
    "commit.published",  # an object published into the corpus
    "commit.objects",  # every object of the manifest published, record not yet done
    "wal.done",  # record marked done, staging not yet removed
    "commit.staging-removed",  # staging of the record removed
    "membership.prepared",  # recovery plan written
    "membership.layout",  # layout of the next generation written
    "membership.snapshot",  # snapshot of the next generation written, receipt not yet
    "membership.receipt",  # receipt written: the next generation is committed
)

_hits: dict[str, int] = {}


def crash_point(name: str) -> None:
    spec = os.environ.get(CRASH_VAR)
    if not spec:
        return
    target, _, count = spec.partition("#")
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= (int(count) if count else 1):
        os.kill(os.getpid(), signal.SIGKILL)
