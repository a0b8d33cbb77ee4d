"""A Python target whose inputs attack the fork server and the deadline instead of failing.

The first byte chooses the attack (``tests/helpers/hostile.py`` has the target that attacks the
campaign's files and its own pipes):

against the fork server (the target's parent, ``os.getppid()``; isolated, PID 1 of its namespace):

``P`` attaches to it with ``ptrace`` and detaches with ``SIGSTOP``: a server left stopped;
``L`` lowers its ``RLIMIT_AS`` to 64 MiB with ``prlimit``: every child it forks then starves;
``M`` writes ``int3`` over its libc code through ``/proc/PID/mem``: it dies at its next call;
``T`` sends it ``SIGSTOP`` (a signal the kernel refuses to deliver to PID 1 of a namespace
from inside it: this one works only without isolation);
``E`` executes a new process (``python`` runs this file: an executed binary is dumpable again)
that makes the attacks ``P``, ``L`` and ``M`` in turn and fails naming those refused;

against the deadline and the worker:

``O`` floods stdout and stderr with 150 MiB each;
``N`` forks 300 processes that sleep;
``Z`` closes descriptors 0-2 and returns;
``K`` sends ``SIGKILL`` to every process it may signal (``kill(-1)``);
``G`` sends ``SIGKILL`` to its own process group;
``D`` opens ``/dev/null`` until no descriptor is left and returns.

Each attack that the kernel refuses raises the ``OSError`` it got (an ``exception`` finding).
The sleepers' command lines start with ``marker``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

SERVER_ATTACKS = "PLME"
STALL_ATTACKS = "ONZKGD"
SEED = b"A" * 8
FLOOD_MIB = 150
BOMB = 300

SOURCE = textwrap.dedent('''
    import ctypes
    import os
    import resource
    import signal
    import subprocess
    import sys

    MARKER = {marker!r}
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)


    def _fail(what):
        err = ctypes.get_errno()
        raise OSError(err, f"{{what}}: {{os.strerror(err)}}")


    def _ptrace_stop(server):
        if _libc.ptrace(16, server, None, None) != 0:  # PTRACE_ATTACH
            _fail("ptrace(PTRACE_ATTACH) of the fork server")
        os.waitpid(server, 0x40000000)  # __WALL: it stopped for its tracer
        _libc.ptrace(17, server, None, signal.SIGSTOP)  # PTRACE_DETACH, delivering SIGSTOP


    def _poke(server):
        with open(f"/proc/{{server}}/maps") as maps:
            code = [line.split() for line in maps if " r-xp " in line and "libc" in line]
        with open(f"/proc/{{server}}/mem", "r+b", buffering=0) as mem:
            for fields in code:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                mem.seek(start)
                mem.write(b"\\xcc" * (end - start))


    def _limit(server):
        resource.prlimit(server, resource.RLIMIT_AS, (64 << 20, 64 << 20))


    def _flood():
        block = b"x" * (1 << 20)
        for _ in range({flood}):
            for fd in (1, 2):
                try:
                    os.write(fd, block)
                except OSError:
                    pass


    def _exhaust():
        try:
            while True:
                os.open("/dev/null", os.O_RDONLY)
        except OSError:
            pass


    def _bomb():
        for _ in range({bomb}):
            if os.fork() == 0:
                os.execv("/bin/sleep", [MARKER, "3600"])


    def _executed(server):
        done = subprocess.run([sys.executable, __file__, str(server)], capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(done.stderr.strip().splitlines()[-1])


    {parse}

    if __name__ == "__main__":
        refused = []
        for letter, attack in (("P", _ptrace_stop), ("L", _limit), ("M", _poke)):
            try:
                attack(int(sys.argv[1]))
            except OSError as exc:
                refused.append(f"{{letter}} {{exc.strerror}}")
        sys.exit("refused: " + ", ".join(refused) if refused else 0)''')


# what each attack does, in ``parse`` (``op``: the first byte; ``server``: the fork server's pid)
ATTACKS = {
    "P": "_ptrace_stop(server)",
    "L": "_limit(server)",
    "M": "_poke(server)",
    "T": "os.kill(server, signal.SIGSTOP)",
    "E": "_executed(server)",
    "O": "_flood()",
    "N": "_bomb()",
    "Z": "os.closerange(0, 3)",
    "K": "os.kill(-1, signal.SIGKILL)",
    "G": "os.killpg(0, signal.SIGKILL)",
    "D": "_exhaust()",
}


def _parse(attacks: str) -> str:
    lines = ["def parse(data: bytes) -> str:", "    if len(data) < 2:", '        return "short"',
             "    op, server = data[0], os.getppid()"]
    for letter in attacks:
        lines += [f"    if op == {ord(letter):#x}:  # {letter}", f"        {ATTACKS[letter]}", f"        return {letter!r}"]
    return "\n".join([*lines, '    return "benign"', ""])


def write_target(directory: Path, marker: str, attacks: str = "".join(ATTACKS)) -> str:
    """The target ``directory/hostile_sandbox.py:parse``, whose inputs make only ``attacks`` (the
    concolic search solves each comparison of the first byte: a target with one attack keeps the
    others out of its search)."""
    path = directory / "hostile_sandbox.py"
    path.write_text(SOURCE.format(marker=marker, bomb=BOMB, flood=FLOOD_MIB, parse=_parse(attacks)))
    return f"{path}:parse"
