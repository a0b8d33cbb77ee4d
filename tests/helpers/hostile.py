"""A hostile Python target: on some inputs it attacks its sandbox and the campaign instead of failing.

The first byte chooses the attack (the concolic search solves each comparison from a benign seed):

``F`` forks and raises in both processes (two copies of the child would answer);
``S`` leaves a daemon behind (``setsid`` and a second fork: a grandchild no session owns);
``W`` writes into the campaign's state directory: a planted corpus object with a ``seed`` claim
and a line appended to a WAL record;
``C`` closes descriptors 3-20 (the sandbox child's pipes among them) and returns;
``G`` writes garbage into descriptors 3-20 and returns;
``R`` kills the worker rank, the parent of its sandbox's fork server as ``/proc`` shows it
(isolated, the server's parent is outside the target's PID namespace: ``/proc`` says 0, and
the kill ends the target's own process group);
``K``, ``X``, ``E``, ``B`` raise ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` and a
``BaseException`` subclass of the target's own.

The daemon's command line carries ``marker``, so a test can look for it afterwards.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

ATTACKS = "FSWCGRKXEB"
SEED = b"A" * 8

SOURCE = textwrap.dedent('''
    import hashlib
    import os
    import signal
    import sys

    STATE = {state!r}
    MARKER = {marker!r}


    class Escape(BaseException):
        pass


    def _daemon():
        pid = os.fork()
        if pid == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)  # " + MARKER])
            os._exit(0)
        os.waitpid(pid, 0)


    def _plant():
        data = b"planted by the target"
        name = hashlib.sha256(data).hexdigest()
        with open(os.path.join(STATE, "corpus", "objects", name), "wb") as out:
            out.write(data)
        with open(os.path.join(STATE, "corpus", "claims", name), "w") as out:
            out.write("seed")
        records = os.path.join(STATE, "wal", "records")
        for record in sorted(os.listdir(records))[:1]:
            with open(os.path.join(records, record), "ab") as out:
                out.write(b'{{"forged": true}}\\n')


    def parse(data: bytes) -> str:
        if len(data) < 2:
            return "short"
        op = data[0]
        if op == 0x46:  # F
            os.fork()
            raise RuntimeError("forked")
        if op == 0x53:  # S
            _daemon()
            raise ChildProcessError("left a daemon behind")
        if op == 0x57:  # W
            _plant()
            return "planted"
        if op == 0x43:  # C
            os.closerange(3, 21)
            return "closed"
        if op == 0x47:  # G
            for fd in range(3, 21):
                try:
                    os.write(fd, b"\\xff" * 64)
                except OSError:
                    pass
            return "garbled"
        if op == 0x52:  # R
            with open(f"/proc/{{os.getppid()}}/stat") as stat:
                rank = int(stat.read().rsplit(")", 1)[1].split()[1])
            os.kill(rank, signal.SIGKILL)
            return "killed"
        if op == 0x4b:  # K
            raise KeyboardInterrupt
        if op == 0x58:  # X
            raise SystemExit(3)
        if op == 0x45:  # E
            raise GeneratorExit
        if op == 0x42:  # B
            raise Escape("escaped")
        return "benign"
''')


def write_hostile(directory: Path, state: Path, marker: str) -> str:
    """The target ``directory/hostile.py:parse`` that attacks ``state``."""
    path = directory / "hostile.py"
    path.write_text(SOURCE.format(state=str(state), marker=marker))
    return f"{path}:parse"


def marked_processes(marker: str) -> list[int]:
    """Pids of live processes whose command line holds ``marker`` (a daemon the target left)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X") and int(entry) != os.getpid():
            found.append(int(entry))
    return found
