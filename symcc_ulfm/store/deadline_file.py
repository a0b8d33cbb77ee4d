"""``deadline.json``: the extensions of the campaign's deadline that resumes recorded (``core.deadlines``).

``launch --resume --deadline S`` with ``S`` longer than the deadline in force writes it, holding
``launch.lock``, before the job starts; the ranks read it at start-up (and agree on it) and the
host side bounds the job with it. A campaign that was never extended has no such file: its
deadline is the policy's. The file is canonical JSON naming the policy's SHA-256, replaced
atomically as a whole; one that is not canonical, names another policy or is malformed is refused
(exit 4) rather than read as a different deadline.
"""

from __future__ import annotations

from ..core.canonical import parse_canonical
from ..core.deadlines import Deadlines
from ..core.limits import MAX_SMALL_JSON_BYTES
from ..core.policy import Policy
from ..errors import IntegrityError, PolicyError
from .atomic import write_replace
from .paths import StateDir
from .reads import read_bytes


def read_deadlines(state: StateDir, policy: Policy) -> Deadlines:
    """The campaign's deadlines: ``policy``'s and the extensions recorded in ``deadline.json``."""
    try:
        raw = read_bytes(state.deadline, limit=MAX_SMALL_JSON_BYTES)
    except FileNotFoundError:
        return Deadlines(policy.sha256, policy.deadline_s)
    try:
        deadlines = Deadlines.from_json(parse_canonical(raw), policy.sha256, policy.deadline_s)
    except (ValueError, PolicyError) as exc:
        raise IntegrityError(f"{state.deadline}: {exc}") from None
    if deadlines.to_bytes() != raw:
        raise IntegrityError(f"{state.deadline} is not in canonical form")
    return deadlines


def write_deadlines(state: StateDir, deadlines: Deadlines) -> None:
    """Record ``deadlines`` (atomically, durably, with the snapshot file mode)."""
    write_replace(state.deadline, deadlines.to_bytes(), state.modes.snapshot)
