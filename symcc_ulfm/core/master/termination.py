"""When does a campaign end before its deadline? When its search is exhausted, or when its budget
by count is spent; both decided in waves.

A master is *idle* when its frontier is empty and it holds no lease, no result to commit and no
record to count. Idle masters can still be woken by a FRONTIER message that carries inputs, so
idleness alone is not enough: the coordinator (the first master of the layout) asks every
master for its status in waves (``PROBE`` / ``STATUS``), each status being whether it is idle
and how many input-carrying FRONTIER messages it has sent and received so far. Two consecutive
complete waves in which every master is idle, the sums of sent and received are equal, and no
counter changed mean that no such message was in flight during the second wave and none can be
sent any more (Mattern's counting method): the search is exhausted.

A master is *satisfied* when every worker of its group has had ``stop_after`` results committed
in this generation (analyses and fuzzer slices alike; ``core.policy``). That only grows within a
generation, so one complete wave in which every master is satisfied spends the budget: however
fast or slow the machine, the campaign ends after the same count of work per worker.

Pure: the master loop feeds in the replies and sends what it is told.
"""

from __future__ import annotations

from dataclasses import dataclass

EXHAUSTED, BUDGET = "exhausted", "budget"  # why a campaign ends before its deadline


@dataclass(frozen=True)
class Status:
    idle: bool
    sent: int
    received: int
    satisfied: bool = False


class Waves:
    """The coordinator's side of the decision."""

    def __init__(self, masters: tuple[int, ...]):
        self.masters = tuple(masters)
        self.wave = 0
        self.replies: dict[int, Status] = {}
        self.previous: tuple | None = None

    def start(self) -> int:
        """Begin the next wave; returns its number (the PROBE carries it)."""
        self.wave += 1
        self.replies = {}
        return self.wave

    def reply(self, master: int, wave: int, status: Status) -> None:
        """A STATUS; one of another wave or from a non-master is ignored."""
        if wave == self.wave and master in self.masters:
            self.replies[master] = status

    @property
    def complete(self) -> bool:
        return set(self.replies) == set(self.masters)

    def satisfied(self) -> bool:
        """After a complete wave: whether every master's workers reached the budget."""
        return all(s.satisfied for s in self.replies.values())

    def exhausted(self) -> bool:
        """After a complete wave: whether the search is exhausted (see the module docstring)."""
        statuses = self.replies.values()
        quiet = all(s.idle for s in statuses) and sum(s.sent for s in statuses) == sum(s.received for s in statuses)
        snapshot = tuple(sorted((m, (s.idle, s.sent, s.received)) for m, s in self.replies.items())) if quiet else None
        decided = snapshot is not None and snapshot == self.previous
        self.previous = snapshot
        return decided
