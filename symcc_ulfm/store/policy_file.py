"""``policy.json``: the campaign's policy, written once when it is prepared, read canonically.

Its bytes are what every rank's policy SHA-256 is taken over, so a reader accepts only the
canonical form ``launch`` wrote: a file edited by hand (reformatted, keys reordered) is refused
rather than read as an equivalent policy. :func:`read_policy` is the file's one reader: the
ranks, and every command that opens a state (``store.state_files``), take the policy from it. A
damaged file (garbage, cut short, not UTF-8, not JSON, nested too deeply, JSON that is no
policy) is a :class:`PolicyError` naming the file (exit 2, as a bad option is); one over
:data:`MAX_POLICY_BYTES` or not a regular file is refused unread (``store.reads``), which a
command opening the state reports as a damaged state (exit 2).
"""

from __future__ import annotations

from ..core.canonical import parse_canonical, sha256_hex
from ..core.limits import MAX_POLICY_BYTES
from ..core.policy import Policy
from ..errors import ConfigError, PolicyError, ProvenanceChanged
from .atomic import write_new
from .paths import StateDir
from .reads import read_bytes


def write_policy(state: StateDir, policy: Policy) -> None:
    if not write_new(state.policy, policy.to_bytes(), state.modes.snapshot):
        raise ProvenanceChanged(f"{state.policy} exists already")


def read_policy(state: StateDir) -> tuple[Policy, str]:
    """The policy and the SHA-256 of its bytes (module docstring)."""
    raw = read_bytes(state.policy, limit=MAX_POLICY_BYTES)
    try:
        value = parse_canonical(raw)
    except ValueError as exc:
        raise PolicyError(str(state.policy), f"not valid JSON ({exc})") from None
    try:
        policy = Policy.from_json(value)
    except ConfigError as exc:  # a PolicyError, ScheduleError or HostSpecError naming the field
        raise PolicyError(str(state.policy), f"not a campaign policy ({exc})") from None
    if policy.to_bytes() != raw:
        raise PolicyError(str(state.policy), "not in canonical form; write it with symcc-ulfm launch")
    return policy, sha256_hex(raw)


def holds_policy(state: StateDir, policy: Policy) -> bool:
    """Whether the state's policy file holds exactly ``policy``."""
    return read_bytes(state.policy, limit=MAX_POLICY_BYTES) == policy.to_bytes()
