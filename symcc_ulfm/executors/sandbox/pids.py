"""A bound on the processes of one sandbox: a fork bomb fails at once instead of outliving its
execution's time limit while it forks.

Two kernel mechanisms, each where it works:

* a ``pids`` cgroup of the sandbox's own (:class:`PidsGroup`), made under this process's group
  where the ``pids`` controller is mounted and this process may create a group there (cgroup v1,
  or v2 with ``pids`` in the group's ``subtree_control``): the fork server enters it before it
  executes, so it and every process of the sandbox count against ``pids.max``; isolated, the
  cgroup file systems are read-only inside (:mod:`.isolation`), so a target cannot leave it;
* ``RLIMIT_NPROC`` in each sandbox child (:func:`limit_child`): counted per user and per user
  namespace, and each isolated child has a user namespace of its own (:mod:`.guard`), so it bounds
  that child and the processes of its executions; the kernel does not apply it to root (uid 0 of
  the machine), whose sandboxes rely on the cgroup.

Either way a ``fork`` past the bound fails with ``EAGAIN``: the target's own error, an
``exception`` finding of the input (leftovers are killed after each execution, :mod:`.reaper`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import time
from pathlib import Path

PROCESSES = 64  # processes of one sandbox (the fork server, its child and what an execution starts)
REMOVE_S = 2.0
_PREFIX = "symcc-ulfm-sandbox-"
_serial = itertools.count()


def limit_child() -> None:
    """In a sandbox child in a user namespace of its own: at most :data:`PROCESSES` processes."""
    resource.setrlimit(resource.RLIMIT_NPROC, (PROCESSES, PROCESSES))


def _own_groups() -> dict[str, str]:
    """This process's cgroup path by controller (``""``: the unified hierarchy)."""
    groups = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                groups[name] = path
    return groups


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, super options) of every cgroup mount."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _, options = right.split()[:3]
            if fstype in ("cgroup", "cgroup2"):
                out.append((left.split()[4], fstype, set(options.split(","))))
    return out


class PidsGroup:
    """A ``pids`` cgroup of one sandbox: :meth:`create` (None where there is none to have)."""

    def __init__(self, path: Path):
        self.path = path
        self.procs = str(path / "cgroup.procs")

    @classmethod
    def create(cls, limit: int = PROCESSES) -> PidsGroup | None:
        groups = _own_groups()
        for point, fstype, options in _mounts():
            own = groups.get("pids") if fstype == "cgroup" and "pids" in options else \
                groups.get("") if fstype == "cgroup2" else None
            if own is None:
                continue
            parent = Path(point) / own.lstrip("/")
            _remove_orphans(parent)
            path = parent / f"{_PREFIX}{os.getpid()}-{next(_serial)}"
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(str(limit))
                return cls(path)
            except OSError:
                cls(path).remove()
        return None

    def enter(self) -> None:
        """In the process to bound (before it executes): move it into the group."""
        with open(self.procs, "w") as procs:
            procs.write("0")

    def remove(self) -> None:
        """Remove the group once its processes are gone (the kernel ends those of a killed PID
        namespace after its first process: waited for up to :data:`REMOVE_S`)."""
        deadline = time.monotonic() + REMOVE_S
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)


def _remove_orphans(parent: Path) -> None:
    """Remove the empty groups under ``parent`` that processes now gone made (a rank that ended
    with ``os._exit`` or a signal removes none of its own)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            owner = entry.name[len(_PREFIX):].split("-")[0] if entry.name.startswith(_PREFIX) else ""
            if not owner.isdigit():
                continue
            try:
                os.kill(int(owner), 0)
            except ProcessLookupError:
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)
            except OSError:
                continue
