"""Comparing time to first finding between tiers, as Klees et al. ("Evaluating Fuzz Testing",
CCS 2018) ask of fuzzer evaluations: the two-sided Mann-Whitney U test and the Vargha-Delaney
A12 effect size.

A campaign that found nothing within its window is *censored* at the window: its time is
counted as the window length, which orders it after every campaign that found something (both
statistics use ranks only, so the exact value above the window does not matter).

A12 of ``x`` against ``y`` is the probability that a time drawn from ``x`` is *larger* than one
from ``y`` (ties count one half): below 0.5, ``x`` finds sooner. Vargha and Delaney's thresholds
on ``|A12 - 0.5|``: 0.06 small, 0.14 medium, 0.21 large.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

from .common import StatsInputError, finite_array


def censored(times: Sequence[float | None], window_s: float) -> list[float]:
    """Times to first finding with "none in the window" (None) counted as the window."""
    return [window_s if t is None else min(float(t), window_s) for t in times]


def a12(x: Sequence[float], y: Sequence[float]) -> float:
    """Vargha-Delaney A12: P(X > Y) + P(X = Y) / 2."""
    xs, ys = finite_array("x", x), finite_array("y", y)
    greater = (xs[:, None] > ys[None, :]).sum()
    equal = (xs[:, None] == ys[None, :]).sum()
    return float((greater + 0.5 * equal) / (xs.size * ys.size))


def magnitude(value: float) -> str:
    distance = abs(value - 0.5)
    return "negligible" if distance < 0.06 else "small" if distance < 0.14 else "medium" if distance < 0.21 else "large"


def compare(x: Sequence[float], y: Sequence[float]) -> dict:
    """``{n_x, n_y, u, p_value, a12, magnitude}`` of samples ``x`` and ``y`` (two or more each)."""
    xs, ys = finite_array("x", x, minimum=2), finite_array("y", y, minimum=2)
    if np.all(xs == xs[0]) and np.all(ys == xs[0]):
        raise StatsInputError("x", "every observation is the same value: nothing to rank")
    test = scipy_stats.mannwhitneyu(xs, ys, alternative="two-sided")
    effect = a12(xs, ys)
    return {"n_x": int(xs.size), "n_y": int(ys.size), "u": float(test.statistic), "p_value": float(test.pvalue),
            "a12": effect, "magnitude": magnitude(effect)}
