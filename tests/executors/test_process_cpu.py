"""The process-tree CPU clock of ``cpu_seconds`` (``runtime.process_cpu``) and the ``/proc`` reader
it shares with ``launch.job.session_pids`` (``executors.sandbox.reaper.proc_stats``): a live
grandchild's CPU time is counted while it runs and stays counted once it has ended and been waited for."""

from __future__ import annotations

import os
import subprocess
import sys

from symcc_ulfm.executors.sandbox.reaper import proc_stats
from symcc_ulfm.launch.job import session_pids
from symcc_ulfm.runtime.process_cpu import tree_cpu_seconds

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
# a grandchild that does a fixed amount of work, prints the CPU time it used, then waits for stdin
WORKER = ("import sys, time\nx = 0\nfor i in range(3_000_000):\n    x += i * i\n"
          "print(time.process_time(), flush=True)\nsys.stdin.read()\n")
MIDDLE = ("import subprocess, sys\n"
          f"sys.exit(subprocess.run([sys.executable, '-c', {WORKER!r}]).returncode)\n")


def test_a_grandchilds_cpu_counts_while_it_runs_and_after_it_ended():
    before = tree_cpu_seconds()
    middle = subprocess.Popen([sys.executable, "-c", MIDDLE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    spent = float(middle.stdout.readline())  # the grandchild's own CPU time; it now waits, alive
    assert spent > 0
    running = tree_cpu_seconds() - before
    assert running >= spent - 2 * TICK_S  # the live grandchild, two levels down
    middle.stdin.close()
    assert middle.wait() == 0
    assert tree_cpu_seconds() - before >= running - 2 * TICK_S  # now in the waited-for children's time


def test_the_proc_reader_sees_this_process_with_its_parent_and_session():
    fields = dict(proc_stats())[os.getpid()]
    assert (int(fields[1]), int(fields[2]), int(fields[3])) == (os.getppid(), os.getpgrp(), os.getsid(0))


def test_session_pids_finds_the_processes_of_a_session_and_no_other():
    leader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                              start_new_session=True)
    try:
        assert session_pids(leader.pid) == [leader.pid]
        assert os.getpid() in session_pids(os.getsid(0)) and leader.pid not in session_pids(os.getsid(0))
    finally:
        leader.stdin.close()
        leader.wait()
