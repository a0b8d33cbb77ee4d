"""Namespace hosts joined by a veth pair (``notes/multinode.md``), and their exact teardown.

Every object made here has a fixed name (the namespaces, the veth ends, ``/etc/netns/<ns>/``),
so :func:`down` removes exactly what :func:`up` made, also when an earlier run crashed and
left them behind. Processes are found through their network namespace (``ip netns pids``):
every rank, ``prted`` and the ``mpiexec`` of a job started in a namespace stays in it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError

SUBNET = "198.51.100.0/24"  # TEST-NET-2 (RFC 5737): never routed anywhere
NETNS_ETC = Path("/etc/netns")
TOOLS = ("ip", "unshare", "setpriv", "hostname")
# Sets the UTS host name of the new UTS namespace, then runs the rest of the arguments.
_SET_HOSTNAME = 'hostname "$1" && shift && exec "$@"'


@dataclass(frozen=True)
class Host:
    """One namespace host: its host name, namespace, veth end, address and the user it runs as."""

    name: str
    namespace: str
    veth: str
    address: str
    uid: int = 0
    gid: int = 0
    home: Path | None = None

    def user_prefix(self) -> list[str]:
        """Run a command as this host's user (with its HOME); empty for root."""
        if self.uid == 0:
            return []
        prefix = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        return prefix + (["env", f"HOME={self.home}"] if self.home is not None else [])

    def exec_prefix(self) -> list[str]:
        """Run a command on this host: its namespace, its own host name, its user."""
        return ["ip", "netns", "exec", self.namespace, "unshare", "--uts", "sh", "-c", _SET_HOSTNAME,
                "symcc-ulfm-host", self.name, *self.user_prefix()]


def unavailable_reason() -> str | None:
    """Why namespace hosts cannot be built here (None when they can)."""
    if os.geteuid() != 0:
        return f"needs root (network namespaces, veth, setpriv); running as uid {os.geteuid()}"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"needs {', '.join(missing)} on PATH (iproute2, util-linux)"
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        return f"'ip netns list' failed: {listed.stderr.strip() or listed.returncode}"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise ConfigError("namespace hosts", f"'ip {shlex.join(args)}' failed: {done.stderr.strip()}")
    return done


def namespaces() -> set[str]:
    return {line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()}


def namespace_pids(namespace: str) -> list[int]:
    done = _ip("netns", "pids", namespace, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()] if done.returncode == 0 else []


def _link_exists(name: str) -> bool:
    return _ip("link", "show", "dev", name, check=False).returncode == 0


def hosts_file(hosts: tuple[Host, ...]) -> str:
    lines = ["127.0.0.1 localhost", *(f"{h.address} {h.name}" for h in hosts)]
    return "\n".join(lines) + "\n"


def up(hosts: tuple[Host, Host], echo: Callable[[str], None] = print) -> None:
    """Create both namespaces, the veth pair between them, addresses and per-namespace /etc/hosts."""
    a, b = hosts
    for host in hosts:
        _ip("netns", "add", host.namespace)
    _ip("link", "add", a.veth, "type", "veth", "peer", "name", b.veth)
    for host in hosts:
        _ip("link", "set", host.veth, "netns", host.namespace)
        _ip("-n", host.namespace, "addr", "add", f"{host.address}/{SUBNET.split('/')[1]}", "dev", host.veth)
        _ip("-n", host.namespace, "link", "set", "lo", "up")
        _ip("-n", host.namespace, "link", "set", host.veth, "up")
        etc = NETNS_ETC / host.namespace
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text(hosts_file(hosts))
        echo(f"host {host.name}: namespace {host.namespace}, {host.veth} {host.address}, uid {host.uid}")


def kill_namespace_processes(namespace: str, grace_s: float = 3.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process in ``namespace``; returns the pids that were found."""
    found = namespace_pids(namespace)
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        pids = namespace_pids(namespace)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        limit = time.monotonic() + wait
        while namespace_pids(namespace) and time.monotonic() < limit:
            time.sleep(0.05)
    return found


def down(hosts: tuple[Host, ...], echo: Callable[[str], None] = print) -> list[str]:
    """Remove every trace of ``hosts`` (idempotent): processes, namespaces, veths, /etc/netns, session dirs."""
    removed = []
    present = namespaces()
    for host in hosts:
        if host.namespace in present:
            pids = kill_namespace_processes(host.namespace)
            if pids:
                removed.append(f"processes {pids} in {host.namespace}")
            _ip("netns", "del", host.namespace)
            removed.append(f"namespace {host.namespace}")
        if _link_exists(host.veth):  # only when a crash came between 'link add' and 'link set netns'
            _ip("link", "del", host.veth)
            removed.append(f"link {host.veth}")
        etc = NETNS_ETC / host.namespace
        if etc.exists():
            shutil.rmtree(etc)
            removed.append(str(etc))
        removed += _remove_session_dirs(host.name)
    if NETNS_ETC.is_dir() and not any(NETNS_ETC.iterdir()):
        NETNS_ETC.rmdir()
    for line in removed:
        echo(f"teardown: removed {line}")
    return removed


def _remove_session_dirs(hostname: str) -> list[str]:
    """PRRTE/Open MPI session directories of a killed job carry the (unique) host name."""
    base = Path(tempfile.gettempdir())
    found = [p for pattern in (f"prte.{hostname}.*", f"ompi.{hostname}.*") for p in base.glob(pattern)]
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    return [str(p) for p in found]


def leftovers(hosts: tuple[Host, ...], settle_s: float = 10.0) -> list[str]:
    """What of ``hosts`` is still there (empty after a clean teardown).

    A process that is exiting has already left its namespace (``ip netns pids`` no longer
    lists it) but still exists: processes of the hosts' unprivileged uids get ``settle_s``.
    """
    left = [f"namespace {n}" for n in sorted(namespaces() & {h.namespace for h in hosts})]
    left += [f"link {h.veth}" for h in hosts if _link_exists(h.veth)]
    left += [str(NETNS_ETC / h.namespace) for h in hosts if (NETNS_ETC / h.namespace).exists()]
    uids = sorted({h.uid for h in hosts if h.uid != 0})
    limit = time.monotonic() + settle_s
    while any(processes_of_uid(uid) for uid in uids) and time.monotonic() < limit:
        time.sleep(0.1)
    for uid in uids:
        pids = processes_of_uid(uid)
        left += [f"processes of uid {uid}: {pids}"] if pids else []
    return left


def processes_of_uid(uid: int) -> list[int]:
    """Live (not zombie) processes owned by ``uid``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                pids.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return sorted(pids)
