"""Confidence intervals of the scaling study (DESIGN.md §10).

- :func:`mean_normal_ci`: mean across repeats with a normal 95% CI, ``mean ± z·s/√n`` where
  ``s`` is the sample standard deviation (``ddof=1``) and ``z = 1.959964``.
- :func:`paired_relative_change`: per block ``(x_i − base_i)/base_i``, then
  ``mean ± t_{0.975, n−1}·s/√n`` (Student-t, because the number of paired blocks is small).
- :func:`wilson_interval`: Wilson score 95% interval of a failure proportion; unlike the normal
  approximation it stays inside [0, 1] and is not degenerate at 0 or n failures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

from .common import Z95, StatsInputError, finite_array, paired_arrays


def mean_normal_ci(values: Sequence[float]) -> dict:
    """``{n, mean, sd, low, high}`` of ``values`` (at least 2, all finite)."""
    array = finite_array("values", values, minimum=2)
    mean = float(np.mean(array))
    sd = float(np.std(array, ddof=1))
    half = Z95 * sd / math.sqrt(array.size)
    return {"n": int(array.size), "mean": mean, "sd": sd, "low": mean - half, "high": mean + half}


def paired_relative_change(values: Sequence[float], baselines: Sequence[float]) -> dict:
    """Student-t 95% CI of the mean per-block relative change of ``values`` against ``baselines``.

    Both lists are in block order; the result is in fractions (0.1763 means +17.63%).
    """
    bases, xs = paired_arrays("baselines", baselines, "values", values)
    bases, xs = finite_array("baselines", bases, minimum=2), finite_array("values", xs, minimum=2)
    zero = np.flatnonzero(bases == 0)
    if zero.size:
        raise StatsInputError("baselines", f"a relative change needs non-zero baselines (position {zero[0]})")
    change = (xs - bases) / bases
    n = int(change.size)
    mean = float(np.mean(change))
    sd = float(np.std(change, ddof=1))
    half = float(scipy_stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "low": mean - half, "high": mean + half}


def wilson_interval(failures: int, trials: int) -> tuple[float, float]:
    """Wilson score interval of ``failures / trials`` as fractions."""
    for field, value in (("failures", failures), ("trials", trials)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise StatsInputError(field, f"must be an integer, got {value!r}")
    if trials < 1:
        raise StatsInputError("trials", f"must be at least 1, got {trials}")
    if not 0 <= failures <= trials:
        raise StatsInputError("failures", f"must be between 0 and trials ({trials}), got {failures}")
    p = failures / trials
    z = Z95
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    # the bounds are exactly 0 at no failures and 1 at all failures; floats only come close
    low = 0.0 if failures == 0 else max(0.0, centre - half)
    high = 1.0 if failures == trials else min(1.0, centre + half)
    return low, high


def model_wilson(failures: int, trials: int) -> dict:
    """``symcc-ulfm model wilson``: ``{low, high}`` (fractions) plus the counts and the rate."""
    low, high = wilson_interval(failures, trials)
    return {
        "failures": int(failures),
        "trials": int(trials),
        "rate": failures / trials,
        "low": low,
        "high": high,
    }
