"""What a master's state machine takes in and gives out (``core.master.machine``).

Events are stimuli (a message arrived, a tick of the loop, the campaign failed) and facts (what
an instruction's I/O found: a lease was taken, a manifest written, a barrier passed). Each
carries ``now``, the wall time at which the driver fed it in. Instructions are what the driver
performs; each names the stimulus that caused it (``stimulus``), and every log line written for it
carries that id. An instruction that ends in a fact (``FACT``) is the last of its batch: the
driver performs it and feeds the fact back before anything else happens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# -- stimuli -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    now: float


@dataclass(frozen=True)
class Start(Event):
    """The generation begins: replay, reclaim, rebuild the frontier."""


@dataclass(frozen=True)
class FromWorker(Event):
    """Bytes from a worker on the data channel (READY or RESULT, or anything a worker may send)."""

    worker: int
    raw: bytes


@dataclass(frozen=True)
class FromMaster(Event):
    """Bytes from a peer master on the frontier channel."""

    master: int
    raw: bytes


@dataclass(frozen=True)
class Refused(Event):
    """The transport refused a message (oversized, or data where none is sent)."""

    source: int
    reason: str


@dataclass(frozen=True)
class Tick(Event):
    """One turn of the loop: lease expiry, deadline, exhaustion, a round of group commit."""


@dataclass(frozen=True)
class Failed(Event):
    """A process failure was detected: count what is durable, then recovery takes over."""


# -- facts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scanned(Event):
    """The WAL's trusted records, and the works whose records could not be trusted (with why)."""

    records: tuple[dict, ...]
    problems: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Replayed(Event):
    """A committing record replayed: its done record, or the integrity error that left it committing."""

    work: str
    record: dict | None
    error: str | None = None


@dataclass(frozen=True)
class DeathsRead(Event):
    """The membership receipts so far (``core.membership.Receipt``): who died in which generation."""

    receipts: tuple


@dataclass(frozen=True)
class MarkersRead(Event):
    """The running markers asked for: ``((worker, generation), lease token or None)`` pairs."""

    running: tuple[tuple[tuple[int, int], str | None], ...]


@dataclass(frozen=True)
class Listed(Event):
    """The corpus: every object's name and whether it is a seed."""

    names: tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class Polled(Event):
    """Whether the masters decided to end the campaign (``core.master.termination``): ``exhausted``,
    ``budget``, or None."""

    ended: str | None


@dataclass(frozen=True)
class Accepted(Event):
    """The QueryStore accepted a result for its lease; ``error`` says why it did not."""

    error: str | None = None


@dataclass(frozen=True)
class Committing(Event):
    """A manifest was written (``leased -> committing``); ``error`` says why it was not."""

    error: str | None = None


@dataclass(frozen=True)
class Published(Event):
    """A committing record's objects claimed and published: the claimed ones, None when it was done
    already, or the integrity error that stops it."""

    work: str
    claimed: list[str] | None
    error: str | None = None


@dataclass(frozen=True)
class Leased(Event):
    """A lease attempt: ``outcome`` is ``leased``, ``done`` (already done), ``committing`` (needs a
    replay), ``retry`` (a store error: the input may be leased later) or ``refused``."""

    outcome: str
    work: str
    token: str
    shard: str
    lease: dict = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Synced(Event):
    """A durability barrier passed; ``syncs`` counts the barriers of this master so far."""

    syncs: int


@dataclass(frozen=True)
class Done(Event):
    """A record marked done (``committing -> done``)."""

    record: dict


# -- instructions --------------------------------------------------------------------------------

NOT_LIMITED = object()


@dataclass(frozen=True)
class Instruction:
    stimulus: str


@dataclass(frozen=True)
class Log(Instruction):
    """One log line; rate-limited per ``(event, key)`` unless ``key`` is NOT_LIMITED."""

    event: str
    fields: dict[str, Any]
    key: object = NOT_LIMITED


@dataclass(frozen=True)
class Scan(Instruction):
    FACT = Scanned


@dataclass(frozen=True)
class Replay(Instruction):
    FACT = Replayed
    work: str


@dataclass(frozen=True)
class ReadDeaths(Instruction):
    """Read the membership receipts (for ``core.master.poison``)."""

    FACT = DeathsRead


@dataclass(frozen=True)
class ReadMarkers(Instruction):
    """Read the running marker of each ``(worker, generation)``: the lease it was executing."""

    FACT = MarkersRead
    pairs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ListCorpus(Instruction):
    FACT = Listed


@dataclass(frozen=True)
class PollExhaustion(Instruction):
    FACT = Polled
    idle: bool
    sent: int
    received: int
    satisfied: bool
    now: float


@dataclass(frozen=True)
class OpenBatch(Instruction):
    """Open a group commit (record locks held until CloseBatch) and a QueryStore transaction."""


@dataclass(frozen=True)
class Accept(Instruction):
    FACT = Accepted
    worker: int
    generation: int
    shard: str
    token: str
    work: str


@dataclass(frozen=True)
class WriteManifest(Instruction):
    """``leased -> committing`` (deferred to the next barrier); the driver names each object's
    staged file from the manifest's worker and lease."""

    FACT = Committing
    work: str
    lease: dict
    manifest: dict


@dataclass(frozen=True)
class Release(Instruction):
    token: str


@dataclass(frozen=True)
class Publish(Instruction):
    FACT = Published
    work: str


@dataclass(frozen=True)
class Lease(Instruction):
    """Issue a lease token for ``worker`` and write the WAL lease (deferred); the work is
    ``input_hash`` under the identity of ``kind`` (None: the campaign's executor)."""

    FACT = Leased
    worker: int
    input_hash: str
    kind: str | None = None


@dataclass(frozen=True)
class Barrier(Instruction):
    """Commit the QueryStore transaction if one is open, then one durability barrier."""

    FACT = Synced


@dataclass(frozen=True)
class MarkDone(Instruction):
    FACT = Done
    work: str
    claimed: list[str] | None


@dataclass(frozen=True)
class CloseBatch(Instruction):
    """End the group commit: release its record locks."""


@dataclass(frozen=True)
class Send(Instruction):
    """A message to a worker (WORK, STOP)."""

    worker: int
    payload: bytes
    what: str


@dataclass(frozen=True)
class Forward(Instruction):
    """A FRONTIER message to a peer master."""

    master: int
    payload: bytes


@dataclass(frozen=True)
class Inject(Instruction):
    """A point of the failure schedule (``core.schedule``) was reached."""

    phase: str


@dataclass(frozen=True)
class Kill(Instruction):
    """Fence a worker on this host that holds a lease past its time."""

    pid: int


@dataclass(frozen=True)
class Stop(Instruction):
    """The master is done: its workers were sent STOP."""
