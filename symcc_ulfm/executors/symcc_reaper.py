"""Run one command with a timeout and leave no process of it behind (Linux).

Used by the ``symcc`` executor as ``python -I -S symcc_reaper.py STATUS TIMEOUT_S -- ARGV...``
around every SymCC run and every ``afl-showmap`` measurement. A process-group kill is not
enough on its own: AFL++'s fork server calls ``setsid()``, so an instrumented target (and
anything it forks) lives outside the group of the afl-showmap that started it, and a target may
daemonize by itself. This process therefore makes itself a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``): every orphaned descendant, whatever its session, is re-parented
to it instead of to init. It

1. forks the command into its own process group (stdin, stderr inherited, stdout /dev/null);
2. waits for it, at most TIMEOUT_S seconds, then SIGKILLs that group;
3. SIGKILLs and reaps every remaining descendant until it has no children left;
4. writes ``{"returncode": ..., "timed_out": ...}`` (or ``{"exec_error": ...}``) as JSON to
   STATUS; ``returncode`` is negative for a signal, as in :mod:`subprocess`.

It imports only the standard library and runs with ``-I -S``, so the target's environment
(PYTHONPATH and the like) cannot change it.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _children() -> list[int]:
    """Pids whose parent is this process (the threads' ``children`` files, else a /proc scan)."""
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as handle:
                pids += [int(pid) for pid in handle.read().split()]
        return pids
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN
        pass
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    # Fields after the parenthesised command: state, ppid, ...
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == me:
                        pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return pids


def _kill_all_descendants() -> None:
    """Kill and reap until no child is left; orphans of killed ones become children here."""
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if reaped == 0:
            time.sleep(0.001)


def _wait(child: int, timeout_s: float) -> int | None:
    """The child's wait status, or None on timeout. SIGCHLD is blocked, so none is missed."""
    deadline = time.monotonic() + timeout_s
    while True:
        reaped, status = os.waitpid(child, os.WNOHANG)
        if reaped:
            return status
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        signal.sigtimedwait({signal.SIGCHLD}, remaining)


def main(argv: list[str]) -> int:
    status_path, timeout_s, separator, *command = argv
    if separator != "--" or not command:
        print("usage: symcc_reaper.py STATUS TIMEOUT_S -- ARGV...", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(
            f"symcc_reaper: prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}", file=sys.stderr
        )
        return 2
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    child = os.fork()
    if child == 0:
        os.close(read_end)
        try:
            os.setpgid(0, 0)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.execv(command[0], command)
        except OSError as exc:
            os.write(write_end, (exc.strerror or str(exc)).encode())
        os._exit(127)
    os.close(write_end)
    # The pipe closes on a successful exec (O_CLOEXEC); otherwise it carries the reason.
    with os.fdopen(read_end, "rb") as pipe:
        exec_error = pipe.read().decode("utf-8", "replace")
    status = None if exec_error else _wait(child, float(timeout_s))
    if status is None and not exec_error:
        try:
            os.killpg(child, signal.SIGKILL)  # not reaped yet, so the group id is still its own
        except ProcessLookupError:
            pass
    _kill_all_descendants()
    if exec_error:
        result: dict[str, object] = {"exec_error": exec_error}
    elif status is None:
        result = {"returncode": -signal.SIGKILL, "timed_out": True}
    else:
        result = {"returncode": os.waitstatus_to_exitcode(status), "timed_out": False}
    with open(status_path, "w") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
