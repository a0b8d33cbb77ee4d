"""Landlock: a binary target that may write only beneath the directories it is given.

Linux's Landlock LSM (5.13+, unprivileged) restricts a process and everything it starts, for good:
:func:`confine` (in this process, as a ``preexec_fn``: :func:`ruleset` built before the fork,
:func:`restrict` after it) or this file run as a script before it executes a command
(``python -I -S landlock.py --rw DIR... -- COMMAND...``: what afl-fuzz starts as its target, so that
the target, not afl-fuzz, is confined). It imports nothing but the standard library, so that it
runs as a file without the package.

afl-fuzz starts a CmpLog build (``-c``) with the main target's command line, its first word
replaced by the ``-c`` path, and :data:`CMPLOG_ENV` set (AFL++'s ``cmplog_exec_child``). Given
``-c`` the interpreter of that command line and ``--cmplog BUILD`` in it, the CmpLog fork server
is this same launcher: where :data:`CMPLOG_ENV` is set it executes ``BUILD`` instead of the
command's first word, with the command's arguments, confined the same way.

A confined process may create, write, truncate, rename, link or remove files only beneath its
``--rw`` directories and ``/dev`` (``/dev/null``, a terminal, a sandbox's private ``/dev/shm``),
by whatever path it names them: Landlock checks the file a path resolves to, so a path through
``/proc/PID/cwd`` or ``/proc/PID/root`` of a process with another view of the file system reaches
nothing more. It cannot ptrace, nor open ``/proc/PID/mem`` or those links of, a process outside its
domain (Landlock's own rule), such as the fuzzer that started it. It reads what its user can read,
and writes through the descriptors it inherited (a standard output that is a pipe or a file).

:func:`unavailable` says why a kernel cannot do this (no Landlock, or Landlock not enabled at boot).
"""

from __future__ import annotations

import ctypes
import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
# LANDLOCK_ACCESS_FS_*: what changes the file system (reading and executing are not restricted)
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << bit for bit in range(6, 13))  # character device, directory, regular file, socket, FIFO, block, symlink
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2 (rename and link across directories), ABI 3
ALWAYS_WRITABLE = ("/dev",)
CMPLOG_ENV = "___AFL_EINS_ZWEI_POLIZEI___"  # set by afl-fuzz for its CmpLog fork server (AFL++ 3.0 and later)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args) -> int:
    result = _libc().syscall(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where it has none or it is not enabled."""
    try:
        return _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def unavailable() -> str | None:
    """Why writes cannot be confined here (None: they can)."""
    if abi() < 1:
        return ("the kernel has no Landlock (Linux 5.13 or later, with landlock in its lsm= boot "
                "parameter or CONFIG_LSM)")
    return None


def _handled(version: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    return rights | (_REFER if version >= 2 else 0) | (_TRUNCATE if version >= 3 else 0)


def ruleset(writable: list[str]) -> int:
    """A ruleset (its descriptor) that lets a process write beneath ``writable`` and /dev only."""
    handled = _handled(abi())
    attr = _RulesetAttr(handled)
    fd = _syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    try:
        for directory in [*writable, *ALWAYS_WRITABLE]:
            parent = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(handled, parent)
                _syscall(_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                         ctypes.c_uint32(0))
            finally:
                os.close(parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


def restrict(fd: int) -> None:
    """Confine this process (and what it starts) by ruleset ``fd``; no undoing it."""
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"no_new_privs: {os.strerror(err)}")
    _syscall(_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0))


def confine(writable: list[str]) -> None:
    """Confine this process: it may write beneath ``writable`` and /dev only."""
    fd = ruleset(writable)
    try:
        restrict(fd)
    finally:
        os.close(fd)


def command(writable: list[str], argv: list[str], cmplog: str | None = None) -> list[str]:
    """``argv`` started confined to ``writable`` (this file as a script, in a Python without site);
    ``cmplog``: the build executed instead of ``argv[0]`` when afl-fuzz starts the command as its
    CmpLog target (``-c`` the command's first word, this Python)."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__),
            *[arg for directory in writable for arg in ("--rw", os.path.abspath(directory))],
            *(["--cmplog", os.path.abspath(cmplog)] if cmplog else []), "--", *argv]


def main(argv: list[str]) -> int:
    writable, cmplog = [], None
    while len(argv) > 1 and argv[0] in ("--rw", "--cmplog"):
        if argv[0] == "--rw":
            writable.append(argv[1])
        else:
            cmplog = argv[1]
        argv = argv[2:]
    if len(argv) < 2 or argv[0] != "--":
        print("usage: landlock.py [--rw DIR]... [--cmplog BUILD] -- COMMAND...", file=sys.stderr)
        return 2
    command = [cmplog, *argv[2:]] if cmplog and os.environ.get(CMPLOG_ENV) else argv[1:]
    try:
        confine(writable)
        os.execv(command[0], command)
    except OSError as exc:
        print(f"symcc-ulfm landlock: {exc}", file=sys.stderr)
    return 70


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
