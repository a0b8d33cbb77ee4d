"""Bounds for blocking MPI calls that have no usable nonblocking form.

``MPI_Comm_ishrink`` fails with ``ERR_INTERN`` in Open MPI 5.0.11 and ``MPI_Comm_split`` has no
nonblocking variant, so these run blocking under a watchdog thread (mpi4py releases the GIL
during MPI calls): if the call has not returned in time, the rank records the hang in its log,
says so on its standard error and exits with :data:`HUNG_EXIT_CODE`. No hang is an acceptable
outcome.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from ..store.runlog import RankLog

HUNG_EXIT_CODE = 75


@contextlib.contextmanager
def bounded(what: str, seconds: float, log: RankLog | None) -> Iterator[None]:
    def expire() -> None:
        os.write(2, f"symcc-ulfm rank hung in the {what} for {seconds:g} s: exit {HUNG_EXIT_CODE}\n".encode())
        if log is not None:
            log.event("hung", what=what, timeout_s=seconds)
            log.sync()
        os._exit(HUNG_EXIT_CODE)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
