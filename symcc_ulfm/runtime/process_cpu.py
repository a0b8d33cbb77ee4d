"""The CPU time a worker rank and everything it started have used: the clock of ``cpu_seconds``.

A worker's work runs in other processes: the executor's sandbox child (a fork server's child that
lives across leases, running the Python engine or SymCC's runs), afl-fuzz (that child's child,
fuzzing on across slices), afl-showmap and the target's executions. ``getrusage(RUSAGE_CHILDREN)``
counts only children that have ended and been waited for, so it misses the long-lived ones; this
reads ``/proc`` instead: the user and system time of the process and of every live descendant
(``utime + stime``), each with what its own ended children used (``cutime + cstime``, counted
once the child is waited for). A process that ends moves its time into its parent's ``cutime``
(the sandbox children and fork servers are child subreapers, so its orphans stay in the tree),
so the sum only grows. Its limits: the kernel's clock ticks (``SC_CLK_TCK``, usually 10 ms); a
process that ends while ``/proc`` is read may be missed or seen twice for one reading (the next
reading is right again); a descendant reaped outside the tree (by ``init``) takes its time with it.
"""

from __future__ import annotations

import os

from ..executors.sandbox.reaper import proc_stats

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user and system) used so far by process ``root`` (default: this one), its live
    descendants, and every process of the tree that ended and was waited for."""
    root = os.getpid() if root is None else root
    # one pass over /proc (the kernel may have no task/*/children lists): the parent of each process
    # and its clock ticks, its own (utime, stime: proc(5)'s fields 14, 15) and its waited-for children's (16, 17)
    table = {pid: (int(fields[1]), sum(int(value) for value in fields[11:15])) for pid, fields in proc_stats()}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    ticks, pending, seen = 0, [root], set()
    while pending:
        pid = pending.pop()
        if pid in seen or pid not in table:
            continue
        seen.add(pid)
        ticks += table[pid][1]
        pending.extend(children.get(pid, ()))
    return ticks / _TICKS_PER_S
