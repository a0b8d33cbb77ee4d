"""Keeping every process a target starts: child subreapers and sweeps.

Each sandbox child and its fork server are child subreapers (``PR_SET_CHILD_SUBREAPER``): a
process a target leaves behind, whatever session it moved to, is re-parented to the nearest of
them instead of ``init`` (isolated, the fork server is PID 1 of the target's PID namespace and
receives them anyway). Who then kills it:

* the sandbox child, after each target execution of an executor that runs the target in its own
  process (``concolic``): :func:`sweep_leftovers` costs one ``waitpid`` when nothing is left;
* the executor itself after each binary it ran, for executors whose targets are processes
  (``symcc``, ``afl``: ``reaps_own_orphans``), with :func:`sweep_children` (sparing the processes
  the executor keeps running across runs: ``afl``'s afl-fuzz);
* the fork server, for what a dead child left, on each control message (:func:`kill_orphans`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterator

PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37
SWEEP_S = 5.0  # how long a sweep looks for a child it was told exists but cannot see


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")


def is_subreaper() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(0)
    if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return False
    return bool(flag.value)


def children_of(parent: int) -> list[int]:
    """Pids whose parent is ``parent``: its tasks' ``children`` lists, or a scan of /proc where
    the kernel has none."""
    try:
        return [int(pid) for task in os.listdir(f"/proc/{parent}/task")
                for pid in open(f"/proc/{parent}/task/{task}/children", "rb").read().split()]
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return []
    return [pid for pid, fields in proc_stats() if int(fields[1]) == parent]


def proc_stats() -> Iterator[tuple[int, list[bytes]]]:
    """``(pid, fields)`` of every process ``/proc`` shows, ``fields`` those of its ``stat`` after
    the parenthesised command name: state, ppid, pgrp, session, ... (``proc(5)``'s field 3 on);
    a process that ended while it was read is left out."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 14:
                yield int(entry), fields


def sweep_children(spare: frozenset[int] = frozenset()) -> int:
    """Kill and reap every child of this process but those in ``spare`` until none is left; how
    many were killed.

    Only for a child subreaper whose children are all its targets' (the sandbox child): orphans of
    a killed descendant are re-parented here while this runs, and are found on the next pass.
    ``spare`` names the executor's own long-lived children (the ``afl`` kind's afl-fuzz), which a
    run of another binary beside them must not end.
    """
    killed = 0
    deadline = time.monotonic() + SWEEP_S
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return killed
        if pid:
            continue
        children = children_of(os.getpid())
        found = [child for child in children if child not in spare]
        for child in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        killed += len(found)
        if found:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(-1, 0)  # one of them is dying
        elif children or time.monotonic() > deadline:  # only spared ones, or one /proc does not show (hidepid)
            return killed
        else:
            time.sleep(0.001)


def sweep_leftovers() -> int:
    """:func:`sweep_children` when this process has any child at all (one ``waitpid`` when not)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return 0
    return sweep_children()


def kill_orphans(own: set[int]) -> int:
    """SIGKILL every child of this process that is not in ``own`` (they are reaped by the caller's
    next ``waitpid``); how many."""
    found = [pid for pid in children_of(os.getpid()) if pid not in own]
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(found)
