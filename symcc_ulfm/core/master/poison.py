"""Poison inputs: work whose lease ended with the death of its worker ``K`` times is quarantined.

Containment (``executors.sandbox.parent``) keeps target crashes out of the ranks; should a worker rank
still die while it executes a lease (containment escaped, the kernel's OOM killer, a fence for a
stuck worker), the input must not go on killing one worker after another. A lease *ended with
the death of its worker* when its worker is in the missing set of the recovery that closed the
lease's generation and the worker's running marker of that generation names the lease (a worker
holds up to three leases but executes one). Whole-job losses (resume receipts) are nobody's
fault and are not counted.

Pure: the master feeds in a record's leases, the deaths from the receipts and the markers it
read, and quarantines what :func:`strikes` returns when there are ``K`` of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SIGNATURE = "worker killed while executing this input (escaped containment)"


@dataclass(frozen=True)
class Strike:
    generation: int
    worker: int
    token: str

    def to_json(self) -> dict:
        return {"generation": self.generation, "worker": self.worker, "token": self.token}


def deaths(receipts: Iterable) -> dict[int, frozenset[int]]:
    """Generation -> the ranks that died in it (from the recovery receipts that closed it)."""
    return {r.generation - 1: frozenset(r.missing) for r in receipts if r.kind == "recovery"}


def record_leases(record: Mapping) -> list[Mapping]:
    """Every lease a WAL record was given, oldest first."""
    return [*record["history"], record["lease"]]


def strikes(leases: Iterable[Mapping], died: Mapping[int, frozenset[int]],
            running: Mapping[tuple[int, int], str | None]) -> list[Strike]:
    """The leases that ended with the death of their worker while it executed them.

    ``running[(worker, generation)]`` is the lease that worker's marker names (None: none).
    """
    out = []
    for lease in leases:
        generation, worker, token = lease["generation"], lease["worker"], lease["token"]
        if worker in died.get(generation, ()) and running.get((worker, generation)) == token:
            out.append(Strike(generation, worker, token))
    return out


def detail(found: list[Strike]) -> str:
    who = ", ".join(f"worker {s.worker} in generation {s.generation}" for s in found)
    return f"{len(found)} leases of this input ended with the death of their worker: {who}"
