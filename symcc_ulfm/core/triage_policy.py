"""Triage decisions (pure): how reliably a finding reproduces, and what that is called.

A replay runs a finding's input ``attempts`` times and counts how often the finding's own
``(kind, signature)`` came back. Following ClusterFuzz's notion of a *reliable* crash (one that
reproduces in a high fraction of attempts, not merely once), the measured rate is compared with a
minimum rate: ``reproducible`` at or above it, ``flaky`` below it but above zero, ``not
reproduced`` at zero. The command's exit status follows the same comparison, and a finding is
*confirmed* when its latest replay passed it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

DEFAULT_MIN_RATE = 0.8
DEFAULT_REPEAT = 10  # attempts of a finding's replay unless --repeat says otherwise
CONFIRM_REPEAT = 3  # attempts of the replay that confirms a finding (findings --confirm) unless --repeat says otherwise
MAX_REPEAT = 10_000
VERDICTS = ("reproducible", "flaky", "not reproduced")


@dataclass(frozen=True)
class Reproduction:
    reproduced: int
    attempts: int
    min_rate: float

    @property
    def rate(self) -> float:
        return self.reproduced / self.attempts

    @property
    def verdict(self) -> str:
        if self.reproduced == 0:
            return VERDICTS[2]
        return VERDICTS[0] if self.rate >= self.min_rate else VERDICTS[1]

    @property
    def passed(self) -> bool:
        return self.rate >= self.min_rate and self.reproduced > 0

    def to_json(self) -> dict:
        return {"reproduced": self.reproduced, "attempts": self.attempts, "rate": self.rate,
                "min_rate": self.min_rate, "verdict": self.verdict}


def check_repeat(repeat: int) -> int:
    if type(repeat) is not int or not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError("--repeat", f"{repeat!r}: expected an integer from 1 to {MAX_REPEAT}")
    return repeat


def check_min_rate(rate: float) -> float:
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 0 < rate <= 1:
        raise ConfigError("--min-rate", f"{rate!r}: expected a fraction in (0, 1], e.g. 0.8")
    return float(rate)


def reproduction(reproduced: int, attempts: int, min_rate: float = DEFAULT_MIN_RATE) -> Reproduction:
    """The measured reproduction of ``reproduced`` out of ``attempts`` (``0 <= reproduced <= attempts``)."""
    check_repeat(attempts)
    if not 0 <= reproduced <= attempts:
        raise ValueError(f"{reproduced} reproductions out of {attempts} attempts")
    return Reproduction(reproduced, attempts, check_min_rate(min_rate))
