"""One gate session: a lock, the namespace hosts, the agent, host B's HOME, permission grants.

Torn down exactly once whatever happens: on leaving the ``with`` block, at interpreter exit
(atexit), or on SIGTERM/SIGINT/SIGHUP (turned into ``SystemExit`` so that ``finally`` blocks
run); the signals are held back while the teardown runs. The lock serialises gates on one
machine; holding it also means that a namespace, journal or runtime file found at start was
left by an earlier run that died, so it is removed first.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

from ...errors import ConfigError
from . import topology
from .access import SearchGrants
from .agent import write_agent
from .topology import Host

RUNTIME = Path("/run/symcc-ulfm-multinode")  # agent, host B's HOME, the grants journal
LOCK = Path("/run/symcc-ulfm-multinode.lock")  # kept: an empty file, only ever locked
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


class Session:
    def __init__(self, hosts: tuple[Host, Host], echo: Callable[[str], None] = print, runtime: Path = RUNTIME,
                 lock: Path = LOCK, lock_wait_s: float = 900.0, with_agent: bool = True,
                 clear_earlier: Callable[[], None] | None = None):
        self.hosts = hosts
        self.echo = echo
        self.runtime = Path(runtime)
        self.lock_path = Path(lock)
        self.lock_wait_s = lock_wait_s
        self.with_agent = with_agent  # the Slurm gate starts its daemons itself and needs no ssh agent
        # what an earlier run of the same gate left (its daemons): cleared only once the lock is
        # held, so that a second gate never stops the daemons of one that is running
        self.clear_earlier = clear_earlier
        self.grants = SearchGrants(self.runtime / "grants.json", echo)
        self.granted: list[dict] = []  # search-permission grants made for host B's user
        self.report: dict | None = None
        self._lock_fd = -1
        self._handlers: dict[int, object] = {}

    @property
    def agent(self) -> Path:
        return self.runtime / "agent.sh"

    def __enter__(self) -> Session:
        self._acquire()
        try:
            if self.clear_earlier is not None:
                self.clear_earlier()
            self._handlers = {sig: signal.signal(sig, _on_signal) for sig in SIGNALS}
            atexit.register(self.close)
            self._teardown("earlier run")
            self.runtime.mkdir(mode=0o755)
            os.chmod(self.runtime, 0o755)  # host B's user must reach its HOME below it
            for host in self.hosts:
                if host.home is not None:
                    host.home.mkdir(mode=0o700)
                    os.chown(host.home, host.uid, host.gid)
            if self.with_agent:
                write_agent(self.agent, self.hosts)
            topology.up(self.hosts, self.echo)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> dict:
        """Tear everything down (idempotent); returns what was removed, restored and is still left."""
        if self.report is not None:
            return self.report
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            removed, restored = self._teardown("teardown")
            self.report = {"removed": removed, "restored": restored, "left": topology.leftovers(self.hosts)}
            for line in self.report["left"]:
                self.echo(f"teardown: STILL PRESENT: {line}")
            atexit.unregister(self.close)
            for sig, handler in self._handlers.items():
                signal.signal(sig, handler)
            self._release()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return self.report

    def _teardown(self, label: str) -> tuple[list[str], list[dict]]:
        removed = topology.down(self.hosts, lambda line: self.echo(line.replace("teardown", label, 1)))
        restored = self.grants.restore(label) if self.runtime.is_dir() else []
        if self.runtime.is_dir():
            shutil.rmtree(self.runtime)
            removed.append(str(self.runtime))
        return removed, restored

    def _acquire(self) -> None:
        self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        limit = time.monotonic() + self.lock_wait_s
        told = False
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > limit:
                    self._release()
                    raise ConfigError("lock", f"another multinode gate holds {self.lock_path}") from None
                if not told:
                    self.echo(f"waiting for another multinode gate to finish (lock {self.lock_path})")
                    told = True
                time.sleep(1.0)

    def _release(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
