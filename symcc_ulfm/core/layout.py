"""Layout: which active endpoint is a master and which masters own which workers.

Active endpoints, in current transport order (ascending stable id: Shrink preserves relative
order and promoted spares have the highest stable ids), are cut into groups of
``1 + workers_per_master``; the first of each group is its master. A trailing group that
would have no worker joins the previous group as a worker, so that every master has work to
hand out. Reference: active 0..7 with 3 workers per master gives masters 0 and 4. With worker
kinds (``core.kinds``) each group also names the kind of each of its workers; a layout without
them is written as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from .canonical import Canonical
from .kinds import kind_at

LAYOUT_FORMAT = "symcc-ulfm-layout/1"


@dataclass(frozen=True)
class Group:
    index: int
    master: int
    workers: tuple[int, ...]
    kinds: tuple[str, ...] = ()  # of each worker, in order; () when every worker runs the executor


@dataclass(frozen=True)
class Layout(Canonical):
    generation: int
    groups: tuple[Group, ...]

    @property
    def masters(self) -> tuple[int, ...]:
        return tuple(g.master for g in self.groups)

    @property
    def workers(self) -> tuple[int, ...]:
        return tuple(w for g in self.groups for w in g.workers)

    def group_of(self, stable: int) -> Group | None:
        for group in self.groups:
            if stable == group.master or stable in group.workers:
                return group
        return None

    def master_of(self, worker: int) -> int | None:
        group = self.group_of(worker)
        return None if group is None else group.master

    def kind_of(self, worker: int) -> str | None:
        """The kind of worker ``worker`` (None: the campaign's executor, or not a worker)."""
        group = self.group_of(worker)
        if group is None or worker not in group.workers or not group.kinds:
            return None
        return group.kinds[group.workers.index(worker)]

    def to_json(self) -> dict:
        return {
            "format": LAYOUT_FORMAT,
            "generation": self.generation,
            "groups": [{"index": g.index, "master": g.master, "workers": list(g.workers),
                        **({"kinds": list(g.kinds)} if g.kinds else {})} for g in self.groups],
        }



def compute_layout(generation: int, active: tuple[int, ...] | list[int], workers_per_master: int,
                   slots: tuple[str, ...] = ()) -> Layout:
    """Cut ``active`` (transport order) into groups; fewer than two endpoints give no groups.
    ``slots``: the kind of each worker slot (``core.kinds.slot_kinds``)."""
    if workers_per_master < 1:
        raise ValueError("workers_per_master must be at least 1")
    members = list(active)
    chunks = [members[i : i + 1 + workers_per_master] for i in range(0, len(members), 1 + workers_per_master)]
    if len(chunks) > 1 and len(chunks[-1]) == 1:
        chunks[-2].extend(chunks.pop())
    groups = tuple(
        Group(index=i, master=chunk[0], workers=tuple(chunk[1:]),
              kinds=tuple(kind_at(slots, p) for p in range(len(chunk) - 1)) if slots else ())
        for i, chunk in enumerate(chunks) if len(chunk) > 1
    )
    return Layout(generation=generation, groups=groups)
