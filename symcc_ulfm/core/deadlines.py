"""The campaign's deadline across jobs: the policy's ``deadline_s`` and the extensions resumes recorded.

``policy.json`` is written once: its SHA-256 is the policy SHA every rank compares and the
evidence names. A resume with a longer ``--deadline`` therefore does not rewrite it; ``launch``
records the new deadline as an *extension* in force from the epoch the resumed job opens
(``deadline.json``, ``store.deadline_file``). The deadline of epoch ``e`` is that of the last
extension from an epoch ``<= e``, else the policy's; ``core.budget`` charges each epoch against
the deadline in force for it, so a campaign that reached 15 s and is resumed with ``--deadline
30`` runs 15 s more. Deadlines only grow: a resume may extend the deadline, never shorten it.
The oracle reads the same file with its own parser (``evidence.oracle``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ..errors import PolicyError
from .canonical import Canonical, is_sha256_hex

DEADLINE_FORMAT = "symcc-ulfm-deadline/1"
MAX_DEADLINE_S = 7 * 86400  # as core.policy bounds deadline_s


@dataclass(frozen=True)
class Extension:
    """``deadline_s`` in force from epoch ``from_epoch`` on."""

    from_epoch: int
    deadline_s: float

    def to_json(self) -> dict[str, Any]:
        return {"from_epoch": self.from_epoch, "deadline_s": self.deadline_s}


@dataclass(frozen=True)
class Deadlines(Canonical):
    """The policy's deadline (``policy_deadline_s``, of the policy whose SHA-256 is
    ``policy_sha256``) and its extensions, in epoch order, each longer than the one before."""

    policy_sha256: str
    policy_deadline_s: float
    extensions: tuple[Extension, ...] = ()

    def __post_init__(self):
        if not is_sha256_hex(self.policy_sha256):
            raise PolicyError("deadline.policy_sha256", f"{self.policy_sha256!r}: expected a SHA-256 in hex")
        previous_epoch, previous_s = -1, self.policy_deadline_s
        for extension in self.extensions:
            epoch, seconds = extension.from_epoch, extension.deadline_s
            if type(epoch) is not int or epoch <= previous_epoch:
                raise PolicyError("deadline.extensions", f"from_epoch {epoch!r}: expected an integer >= 0, "
                                                         "greater than the previous extension's")
            if type(seconds) not in (int, float) or not math.isfinite(seconds) or not \
                    previous_s < seconds <= MAX_DEADLINE_S:
                raise PolicyError("deadline.extensions", f"deadline_s {seconds!r}: expected seconds longer than "
                                                         f"{previous_s:g} and at most {MAX_DEADLINE_S}")
            previous_epoch, previous_s = epoch, seconds

    def of_epoch(self, epoch: int) -> float:
        """The deadline (seconds of campaign budget) in force for ``epoch``."""
        in_force = [e.deadline_s for e in self.extensions if e.from_epoch <= epoch]
        return in_force[-1] if in_force else self.policy_deadline_s

    @property
    def latest(self) -> float:
        """The longest deadline recorded: what a resume compares a given ``--deadline`` with."""
        return self.extensions[-1].deadline_s if self.extensions else self.policy_deadline_s

    def extended(self, from_epoch: int, deadline_s: float) -> Deadlines:
        """These deadlines with ``deadline_s`` in force from ``from_epoch`` (an extension recorded
        for that epoch or a later one, which no job opened yet, is replaced); unchanged when it is
        the latest already; a shorter one is refused naming both (exit 2)."""
        if deadline_s < self.latest:
            raise PolicyError("deadline_s", f"stored {self.latest:g}, given {deadline_s:g}: a resume may extend "
                                            "the deadline, not shorten it")
        if deadline_s == self.latest:
            return self
        kept = tuple(e for e in self.extensions if e.from_epoch < from_epoch)
        return replace(self, extensions=(*kept, Extension(from_epoch, float(deadline_s))))

    def to_json(self) -> dict[str, Any]:
        return {"format": DEADLINE_FORMAT, "policy_sha256": self.policy_sha256,
                "extensions": [e.to_json() for e in self.extensions]}

    @classmethod
    def from_json(cls, value: Any, policy_sha256: str, policy_deadline_s: float) -> Deadlines:
        """Parse ``deadline.json`` of the policy with that SHA-256 and deadline (PolicyError naming
        what is wrong)."""
        if not isinstance(value, dict) or set(value) != {"format", "policy_sha256", "extensions"}:
            raise PolicyError("deadline", "expected an object with format, policy_sha256 and extensions")
        if value["format"] != DEADLINE_FORMAT:
            raise PolicyError("deadline.format", f"{value['format']!r}: expected {DEADLINE_FORMAT!r}")
        if value["policy_sha256"] != policy_sha256:
            raise PolicyError("deadline.policy_sha256", "names another policy than policy.json")
        items = value["extensions"]
        if not isinstance(items, list) or not all(isinstance(e, dict) and set(e) == {"from_epoch", "deadline_s"}
                                                  for e in items):
            raise PolicyError("deadline.extensions", "expected a list of {from_epoch, deadline_s}")
        return cls(policy_sha256, policy_deadline_s, tuple(Extension(e["from_epoch"], e["deadline_s"]) for e in items))
