"""The ssh-like agent PRRTE uses to start its daemon on a namespace host.

PRRTE calls ``AGENT [ssh options] HOST COMMAND...`` (``--prtemca plm_ssh_agent AGENT``) and,
like ssh, means COMMAND as one shell string. The agent maps HOST to its namespace, gives the
process that host's name (``unshare --uts``: without distinct host names MPI_Init fails with a
local-peers error) and, for an unprivileged host, drops to its uid/gid with ``setpriv``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from .topology import Host

# ssh options that take an argument: skipped together with it.
_SSH_OPTIONS_WITH_ARGUMENT = "BbcDEeFIiJLlmOopQRSWw"


def render(hosts: tuple[Host, ...]) -> str:
    cases = "\n".join(f'  {h.name}) exec {shlex.join(h.exec_prefix())} sh -c "$*" ;;' for h in hosts)
    return f"""#!/bin/sh
# PRRTE's ssh agent for the namespace hosts of symcc_ulfm.gates.netns (generated, removed at teardown).
# Called as: agent [ssh options] HOST COMMAND...; COMMAND is one shell string, as with ssh.
while [ $# -gt 0 ]; do
  case "$1" in
    -[{_SSH_OPTIONS_WITH_ARGUMENT}]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then echo "symcc-ulfm agent: usage: agent [ssh options] HOST COMMAND" >&2; exit 255; fi
host=$1
shift
case "$host" in
{cases}
  *) echo "symcc-ulfm agent: unknown host $host" >&2; exit 255 ;;
esac
"""


def write_agent(path: Path, hosts: tuple[Host, ...]) -> Path:
    """Write the agent (root-owned, 0755: PRRTE runs it as root inside host A's namespace)."""
    path = Path(path)
    path.write_text(render(hosts))
    os.chmod(path, 0o755)
    return path


def prrte_arguments(agent: Path, subnet: str) -> list[str]:
    """mpiexec arguments: remote launch through the agent, all traffic on the veth subnet."""
    return [
        "--prtemca", "plm_ssh_agent", str(agent),
        "--prtemca", "plm_ssh_no_tree_spawn", "1",
        "--prtemca", "oob_tcp_if_include", subnet,
        "--mca", "btl_tcp_if_include", subnet,
    ]
