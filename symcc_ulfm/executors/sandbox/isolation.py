"""Isolation of target code: namespaces in which the campaign's files are read-only and every
process a target starts dies with its sandbox.

:func:`wrap` turns the command of a process that will run target code (the sandbox's fork
server, whose children execute targets; the symcc and afl executors' binaries run under it) into
``unshare --user --map-root-user --mount --pid --fork --kill-child --mount-proc python -m
symcc_ulfm.executors.sandbox.isolation --rw DIR... -- COMMAND`` (util-linux's ``unshare``: no
privilege needed, as root or as any user, where the kernel allows unprivileged user namespaces).
Inside, before it runs COMMAND, this module (:func:`confine`):

* makes every mount private, then **read-only**, except ``/proc``, ``/sys``, ``/dev`` and their
  submounts (but the cgroup file systems): the state directory, the run directory and the
  evidence, the checkout and the rest of the machine's files cannot be written, whatever the
  file modes say;
* binds each ``--rw`` directory (the worker's scratch directory: the files its executions write)
  writable again, points ``TMPDIR`` at the first one (``/tmp`` is read-only like the rest: the
  campaign's own files may live there) and mounts a private ``tmpfs`` on ``/dev/shm``;
* enters a second user and mount namespace, in which all those mounts are *locked* (a mount
  inherited from a more privileged mount namespace cannot be unmounted or made writable again),
  so that a target, root in its own namespace, cannot undo them.

COMMAND is PID 1 of the new PID namespace: every process a target forks, daemons that left the
session included, is in it, is reaped by it, and is killed by the kernel when it ends; and it ends
with ``unshare`` (``--kill-child``), which dies with the process that started it
(``PR_SET_PDEATHSIG``, set by the caller). The namespaces cost nothing per execution (measured in
``make bench``, containment); starting a sandbox costs one more ``exec`` of Python.

What a target can still do: read whatever the campaign's user can read; write its scratch
directory (and ``TMPDIR``, in it) and a private ``/dev/shm``; use the network the user has (no network namespace: the
targets of this project do not need one, and a loopback-only namespace would break targets that
talk to local services); send signals to the processes of its own sandbox only; use CPU and memory
up to the sandbox's limits. Where the kernel refuses user namespaces :func:`unavailable` says why,
and a campaign refuses to start unless asked to run without isolation (``isolation = none``).
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ...errors import CapabilityError

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
# mount options that a remount in a user namespace must keep (they are locked), as mountinfo spells them
_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
          "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
_KEEP_WRITABLE = ("/proc", "/sys", "/dev")
_CGROUPS = "/sys/fs/cgroup"  # read-only all the same: a target may not leave its sandbox's pids group (.pids)
MODULE = "symcc_ulfm.executors.sandbox.isolation"
UNSHARE = ("--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc")


class IsolationError(OSError):
    pass


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else value.encode()


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc().mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags), _bytes(data)) != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"mount {target}: {os.strerror(err)}")


def _mountpoints() -> list[tuple[str, int]]:
    """(mount point, its locked flags) of every mount, parents first."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")
        flags = 0
        for option in fields[5].split(","):
            flags |= _FLAGS.get(option, 0)
        out.append((point, flags))
    return out


def confine(writable: list[str]) -> None:
    """Inside the first namespaces (module docstring): everything read-only but ``writable``, a
    private /tmp and /dev/shm, then a second user and mount namespace that locks it all."""
    uid, gid = os.getuid(), os.getgid()  # root of the first user namespace
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    for point, flags in _mountpoints():
        if any(point == top or point.startswith(top + "/") for top in _KEEP_WRITABLE) and \
                not point.startswith(_CGROUPS):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except IsolationError as exc:
            if exc.errno not in (2, 13):  # ENOENT, EACCES: a mount point hidden by another mount
                raise
    for directory in writable:
        _mount(directory, directory, None, MS_BIND | MS_REC)
        _mount(None, directory, None, MS_REMOUNT | MS_BIND)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=512m")
    if writable:
        os.environ["TMPDIR"] = writable[0]
    if _libc().unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise IsolationError(err, f"the inner user namespace: {os.strerror(err)}")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why target code cannot be isolated here (None: it can): ``unshare`` missing, or user
    namespaces refused by the kernel (``user.max_user_namespaces``, a seccomp policy...)."""
    if shutil.which("unshare") is None:
        return "util-linux's unshare is not on PATH"
    done = subprocess.run(["unshare", *UNSHARE, sys.executable, "-m", MODULE, "--check"],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        return f"user, mount and PID namespaces are refused: {(done.stderr or done.stdout).strip()[-300:]}"
    return None


def outer_pid(root: int, inner: int) -> int | None:
    """The pid, as this process sees it, of the descendant of ``root`` (the ``unshare`` that
    :func:`wrap` starts) whose pid in its own namespace is ``inner``: a pid from inside the
    namespace names another process outside it. None when there is none (it is gone)."""
    todo, seen = [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            children = [int(c) for task in os.listdir(f"/proc/{pid}/task")
                        for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:"):
                levels = line.split()[1:]
                if pid != root and len(levels) > 1 and int(levels[-1]) == inner:
                    return pid
        todo.extend(children)
    return None


def require() -> None:
    """CapabilityError (exit 5) where target code cannot be isolated, saying why."""
    reason = unavailable()
    if reason is not None:
        raise CapabilityError(f"target code cannot be isolated here ({reason}); run it without namespaces, "
                              "where a target can write the campaign's files and leave processes behind, "
                              "only on purpose: --isolation none")


def wrap(command: list[str], writable: list[str | Path]) -> list[str]:
    """``command`` run isolated (module docstring), ``writable`` its only writable directories."""
    rw = [arg for directory in writable for arg in ("--rw", os.path.abspath(directory))]
    return ["unshare", *UNSHARE, sys.executable, "-m", MODULE, *rw, "--", *command]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        confine([])
        return 0
    writable = []
    while argv and argv[0] == "--rw":
        writable.append(argv[1])
        argv = argv[2:]
    if not argv or argv[0] != "--":
        print(f"usage: python -m {MODULE} [--rw DIR]... -- COMMAND...", file=sys.stderr)
        return 2
    try:
        confine(writable)
    except (IsolationError, OSError) as exc:
        print(f"symcc-ulfm isolation: {exc}", file=sys.stderr)
        return 70
    os.execvp(argv[1], argv[1:])
    return 70


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
