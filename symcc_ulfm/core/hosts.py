"""Host specifications: ``node-a:9,node-b:1`` = 9 slots on node-a, then 1 on node-b."""

from __future__ import annotations

import re

from ..errors import HostSpecError

_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_FORM = "comma-separated HOST:SLOTS with SLOTS >= 1, e.g. node-a:9,node-b:1"


def parse_hosts(text: str) -> tuple[tuple[str, int], ...]:
    """Parse a host spec; ``""`` means a single local host."""
    if not isinstance(text, str):
        raise HostSpecError("hosts", f"expected a string, got {type(text).__name__}")
    if not text.strip():
        return ()
    hosts: list[tuple[str, int]] = []
    for part in text.split(","):
        name, sep, slots = part.strip().partition(":")
        if not sep or not _HOST.fullmatch(name) or not (slots.isascii() and slots.isdigit()) or int(slots) < 1:
            raise HostSpecError("hosts", f"{part.strip()!r} is not HOST:SLOTS; expected {_FORM}")
        if any(name == existing for existing, _ in hosts):
            raise HostSpecError("hosts", f"host {name!r} appears twice in {text!r}")
        hosts.append((name, int(slots)))
    return tuple(hosts)


def is_host_name(name: str) -> bool:
    """Whether ``name`` is a host name a spec (and ``mpiexec -H``) can carry."""
    return bool(_HOST.fullmatch(name))


def format_hosts(hosts: tuple[tuple[str, int], ...]) -> str:
    return ",".join(f"{name}:{slots}" for name, slots in hosts)


def host_of_rank(hosts: tuple[tuple[str, int], ...], rank: int) -> str | None:
    """The host a rank is mapped to with ``--map-by slot`` (fill each host in order)."""
    offset = 0
    for name, slots in hosts:
        if rank < offset + slots:
            return name
        offset += slots
    return None
