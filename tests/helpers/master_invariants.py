"""The master's invariants checked after every event it handles (``core.master.invariants``).

:func:`checked` wraps ``MasterState.handle``: ``tests/conftest.py`` installs it for every test of
the suite (the unit tests of the machine, the protocol scenarios on the loopback transport) and
``tests/protocol/mpi_job.py`` for the real masters of the scenarios under MPI, so a transition
that breaks an invariant fails the test whose events caused it, at the event that did.
"""

from __future__ import annotations

from symcc_ulfm.core.master import events as ev
from symcc_ulfm.core.master.machine import MasterState


def checked(handle):
    """``handle``, followed by :meth:`MasterState.check_invariants` of the state that handled the event."""

    def handle_and_check(state: MasterState, event: ev.Event) -> list[ev.Instruction]:
        instructions = handle(state, event)
        state.check_invariants()
        return instructions

    return handle_and_check
