"""What a sandbox child cannot do to its fork server, or to any process but its own descendants.

The fork server (:mod:`.child`) is not dumpable (``PR_SET_DUMPABLE 0``, inherited by the children
it forks): the kernel's ptrace access check then refuses ``ptrace``, ``/proc/PID/mem`` and every
other access of that mode to a process that lacks ``CAP_SYS_PTRACE`` in the user namespace the
server was started in. Isolated, the server is root of that namespace (:mod:`.isolation`), and so
would a child be: :func:`confine_child` puts each forked child into a user namespace of its own
first, where its capabilities are worth nothing to the server's. The same kernel check does not
cover ``prlimit`` of a process of the same user (only the ids are compared), so a seccomp filter,
installed in every child and inherited across ``fork`` and ``execve`` (binaries the executor runs
included), refuses with ``EPERM``:

* ``ptrace``, ``process_vm_readv`` and ``process_vm_writev`` (a target debugging a process of its
  own is refused too);
* ``prlimit64`` that changes the limits of another process (a pid other than 0; reading them
  is allowed, and so is ``setrlimit`` of a process's own limits): an executor that bounds a
  binary it runs sets the limit in the binary's process before it executes (:mod:`..binary.runs`).

The filter knows the system call numbers of x86-64 (and i386, x32) and AArch64 (and 32-bit Arm);
every system call of an architecture it does not know is refused.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

from .pids import limit_child

PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 38, 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000
RET_ALLOW = 0x7FFF0000
RET_EPERM = 0x00050000 | errno.EPERM
X32_BIT = 0x40000000
# audit architecture: (ptrace, process_vm_readv, process_vm_writev, prlimit64)
SYSCALLS = {
    0xC000003E: (101, 310, 311, 302),  # x86-64 (x32's numbers have X32_BIT set: refused whole)
    0x40000003: (26, 347, 348, 340),  # i386
    0xC00000B7: (117, 270, 271, 261),  # AArch64
    0x40000028: (26, 376, 377, 369),  # 32-bit Arm
}
_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_NR, _ARCH = 0, 4


def _arg(index: int, high: bool = False) -> int:
    """Offset of the low (or high) 32 bits of system call argument ``index`` in ``seccomp_data``
    (little-endian machines)."""
    return 16 + 8 * index + (4 if high else 0)


def program() -> list[tuple[int, int, int, int]]:
    """The filter as ``(code, jt, jf, k)`` instructions (classic BPF on ``seccomp_data``)."""
    code: list[tuple] = [("ld", _ARCH)]
    code += [("jeq", arch, f"arch{arch}", None) for arch in SYSCALLS]
    code += [("ret", RET_EPERM)]
    for arch, (ptrace, readv, writev, prlimit) in SYSCALLS.items():
        deny, allow = f"deny{arch}", f"allow{arch}"
        code += [("label", f"arch{arch}"), ("ld", _NR)]
        if arch == 0xC000003E:
            code += [("jge", X32_BIT, deny, None)]
        code += [("jeq", ptrace, deny, None), ("jeq", readv, deny, None), ("jeq", writev, deny, None),
                 ("jeq", prlimit, None, allow),
                 ("ld", _arg(0)), ("jeq", 0, allow, None),  # its own limits
                 ("ld", _arg(2)), ("jeq", 0, None, deny), ("ld", _arg(2, high=True)), ("jeq", 0, allow, deny),
                 ("label", allow), ("ret", RET_ALLOW), ("label", deny), ("ret", RET_EPERM)]
    where, index = {}, 0
    for op in code:
        if op[0] == "label":
            where[op[1]] = index
        else:
            index += 1
    out = []
    for op in (op for op in code if op[0] != "label"):
        here = len(out) + 1  # jumps are relative to the next instruction
        if op[0] == "ld":
            out.append((_LD_W_ABS, 0, 0, op[1]))
        elif op[0] == "ret":
            out.append((_RET, 0, 0, op[1]))
        else:
            jt, jf = (0 if label is None else where[label] - here for label in op[2:])
            out.append((_JEQ if op[0] == "jeq" else _JGE, jt, jf, op[1]))
    return out


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def not_dumpable() -> None:
    """This process (the fork server) cannot be traced, nor its memory read or written, by a
    process without ``CAP_SYS_PTRACE`` in its user namespace."""
    _check(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def confine_child(own_user_namespace: bool) -> None:
    """In a child the fork server just forked, before it serves: a user namespace of its own
    (``own_user_namespace``: the server is isolated, so root of its namespace) with its process
    bound (:mod:`.pids`), and the filter."""
    libc = ctypes.CDLL(None, use_errno=True)
    if own_user_namespace:
        uid, gid = os.getuid(), os.getgid()
        _check(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        limit_child()
    instructions = program()
    table = (_Filter * len(instructions))(*(_Filter(*op) for op in instructions))
    prog = _Program(len(instructions), table)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "prctl(PR_SET_SECCOMP)")

