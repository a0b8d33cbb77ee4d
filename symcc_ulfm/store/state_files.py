"""A campaign's state as a command opens it: ``findings``, ``export``, ``replay``, ``minimize``,
``sarif`` (``tools.sources``), ``status`` (``tools.status``) and ``launch --resume``
(``launch.prepare``).

:func:`open_state` finds the state (a state directory, or the ``state/`` of a run directory) and
reads its small files through their owners before anything else is read: the policy
(``store.policy_file``), the deadline's extensions (``store.deadline_file``) and the membership
of the latest committed generation with the snapshots, layouts and receipts that lead to it
(``store.snapshots``). Whatever an owner refuses (garbage, a file cut short, JSON of another
shape, a file not in canonical form, a broken receipt chain, a link, a directory or a special
file in its place, a file over its bound) is refused naming the file, exit 2, whichever command
opened the state: a :class:`PolicyError` from the policy's owner, a :class:`DamagedState` for
the others' refusals. No command parses these files itself.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.deadlines import Deadlines
from ..core.membership import Membership
from ..core.modes import FileModes
from ..core.policy import Policy
from ..errors import DamagedState, IntegrityError
from .deadline_file import read_deadlines
from .paths import StateDir
from .policy_file import read_policy
from .snapshots import SnapshotStore


@dataclass(frozen=True)
class StateFiles:
    """A state and what its small files say."""

    state: StateDir
    policy: Policy
    policy_sha256: str
    deadlines: Deadlines
    membership: Membership | None  # the latest committed generation; None before generation 0


def state_of(path: str | Path, modes: FileModes) -> StateDir:
    """A state directory, or the ``state/`` of a run directory (``FileNotFoundError`` when neither)."""
    path = Path(path)
    if not os.path.lexists(path / "policy.json") and os.path.lexists(path / "state" / "policy.json"):
        path = path / "state"
    if not os.path.lexists(path / "policy.json"):
        raise FileNotFoundError(errno.ENOENT, "holds no policy.json (neither a state nor a run directory)", str(path))
    return StateDir(path, modes)


def open_state(path: str | Path, modes: FileModes) -> StateFiles:
    """The state at ``path`` with its policy, deadlines and membership, each read by its owner
    (module docstring)."""
    state = state_of(path, modes)
    try:
        policy, sha256 = read_policy(state)
        deadlines = read_deadlines(state, policy)
    except IntegrityError as exc:  # deadline.json refused, or either file unsafe to open: named
        raise DamagedState(str(state.root), str(exc)) from None
    return StateFiles(state, policy, sha256, deadlines, _read_membership(state))


def _read_membership(state: StateDir) -> Membership | None:
    """The latest committed generation, its chain of receipts checked (``SnapshotStore.current``);
    None before the snapshot of generation 0 was written (a campaign prepared but not started).
    A damaged snapshot, layout or receipt is a :class:`DamagedState` naming it."""
    snapshots = SnapshotStore(state.membership, state.modes.snapshot)
    if not os.path.lexists(snapshots.snapshot_path(0)):
        return None
    try:
        return snapshots.current()
    except FileNotFoundError as exc:  # the layout of a snapshot
        raise DamagedState(str(state.membership), f"{Path(exc.filename or '?').name} is missing beside its "
                                                  "snapshot") from None
    except IntegrityError as exc:  # SnapshotCorruption naming the file, or UnsafeFile naming its path
        raise DamagedState(str(state.membership), str(exc)) from None
