"""``slurm.json``: the Slurm allocation of every job that ran the campaign, in order.

``launch`` appends one entry before each job it starts inside an allocation (the first one and
every ``--resume``): the job id, the cluster, the nodes with their task slots, and the hosts the
ranks were placed on. A resumed campaign usually runs in another job on other nodes, so this is
a list, never overwritten; each append replaces the file atomically. The oracle does not read it
(the hosts it judges are the ones the ranks recorded in the membership snapshots); it is the
record of where the campaign ran, sealed with the state.
"""

from __future__ import annotations

import json

from ..core.canonical import canonical_json
from ..core.limits import MAX_SMALL_JSON_BYTES
from ..errors import IntegrityError
from .atomic import write_replace
from .paths import StateDir
from .reads import read_bytes

ALLOCATIONS_FORMAT = "symcc-ulfm-slurm/1"


def read_allocations(state: StateDir) -> list[dict]:
    """The recorded entries (empty when no job ran in an allocation)."""
    try:
        raw = read_bytes(state.allocations, limit=MAX_SMALL_JSON_BYTES)
    except FileNotFoundError:
        return []
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        raise IntegrityError(f"{state.allocations} is not JSON") from None
    if not isinstance(record, dict) or record.get("format") != ALLOCATIONS_FORMAT or not isinstance(record.get("jobs"), list):
        raise IntegrityError(f"{state.allocations} is not a {ALLOCATIONS_FORMAT} record")
    return record["jobs"]


def record_allocation(state: StateDir, entry: dict) -> int:
    """Append ``entry`` (plain JSON) and return how many jobs are recorded now."""
    jobs = [*read_allocations(state), entry]
    data = canonical_json({"format": ALLOCATIONS_FORMAT, "jobs": jobs})
    if len(data) > MAX_SMALL_JSON_BYTES:
        raise IntegrityError(f"{state.allocations} would exceed {MAX_SMALL_JSON_BYTES} bytes with job {entry.get('job_id')}")
    write_replace(state.allocations, data, state.modes.snapshot)
    return len(jobs)
