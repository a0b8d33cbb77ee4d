"""``policy.json``: the campaign's policy, written once when it is prepared, read canonically.

Its bytes are what every rank's policy SHA-256 is taken over, so a reader accepts only the
canonical form ``launch`` wrote: a file edited by hand (reformatted, keys reordered) is refused
rather than read as an equivalent policy.
"""

from __future__ import annotations

import json

from ..core.canonical import sha256_hex
from ..core.limits import MAX_POLICY_BYTES
from ..core.policy import Policy
from ..errors import PolicyError, ProvenanceChanged
from .atomic import write_new
from .paths import StateDir
from .reads import read_bytes


def write_policy(state: StateDir, policy: Policy) -> None:
    if not write_new(state.policy, policy.to_bytes(), state.modes.snapshot):
        raise ProvenanceChanged(f"{state.policy} exists already")


def read_policy(state: StateDir) -> tuple[Policy, str]:
    """The policy and the SHA-256 of its bytes."""
    raw = read_bytes(state.policy, limit=MAX_POLICY_BYTES)
    try:
        policy = Policy.from_json(json.loads(raw))
    except ValueError as exc:
        raise PolicyError("policy.json", f"not valid JSON: {exc}") from None
    if policy.to_bytes() != raw:
        raise PolicyError("policy.json", "not in canonical form; write it with symcc-ulfm launch")
    return policy, sha256_hex(raw)


def holds_policy(state: StateDir, policy: Policy) -> bool:
    """Whether the state's policy file holds exactly ``policy``."""
    return read_bytes(state.policy, limit=MAX_POLICY_BYTES) == policy.to_bytes()
