"""The statistics of a comparison study, as FuzzBench reports them (its "reports" documentation):
medians with interquartile ranges, the two-sided Mann-Whitney U test and Vargha-Delaney A12
against a reference (trials are independent samples: unpaired), coverage-over-time medians with
bands, ranks per target and their mean, the Friedman test with the Nemenyi critical difference
(Demšar, JMLR 2006), and Kaplan-Meier survival of the time to first finding, censored at the window.

Pure: lists of numbers in, JSON-ready values out (finite floats, ``None`` where there is no value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats as scipy_stats

from . import effect
from .common import StatsInputError, finite_array

#: Significance level of the critical difference.
ALPHA = 0.05
#: Fewest systems and targets the Friedman test and the critical difference are computed for.
MIN_RANKED_SYSTEMS = 3
MIN_RANKED_TARGETS = 5


def describe(values: Sequence[float]) -> dict:
    """``{n, median, q1, q3, min, max}`` (numpy's linear quantiles); the statistics are None when empty."""
    xs = finite_array("values", values, minimum=0)
    if xs.size == 0:
        return {"n": 0, "median": None, "q1": None, "q3": None, "min": None, "max": None}
    q1, median, q3 = (float(q) for q in np.quantile(xs, [0.25, 0.5, 0.75]))
    return {"n": int(xs.size), "median": median, "q1": q1, "q3": q3, "min": float(xs.min()), "max": float(xs.max())}


def versus(x: Sequence[float], y: Sequence[float]) -> dict:
    """Two-sided Mann-Whitney U and A12 of ``x`` against ``y`` (A12 above 0.5: ``x`` tends to be larger).

    Samples that are all one and the same value give nothing to rank: U is ``n_x * n_y / 2``, the
    p-value 1.0 and A12 0.5, with a ``note`` saying so (:func:`.effect.compare` refuses them).
    """
    xs, ys = finite_array("x", x, minimum=2), finite_array("y", y, minimum=2)
    if np.all(xs == xs[0]) and np.all(ys == xs[0]):
        return {"n_x": int(xs.size), "n_y": int(ys.size), "u": xs.size * ys.size / 2, "p_value": 1.0, "a12": 0.5,
                "magnitude": effect.magnitude(0.5), "note": f"every observation is {float(xs[0]):g}: nothing to rank"}
    return effect.compare(xs, ys)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return float(numerator) / float(denominator)


def step_value(curve: Sequence[Sequence[float]], t: float) -> float | None:
    """The value of a non-decreasing step curve ``[[t, value], ...]`` at ``t``: its last point at or
    before ``t`` (None before its first point)."""
    value = None
    for time, point in sorted(curve, key=lambda p: p[0]):
        if time > t:
            break
        value = float(point)
    return value


def bands(curves: Sequence[Sequence[Sequence[float]]]) -> list[list[float]]:
    """``[[t, median, q1, q3], ...]`` across ``curves`` at every time any of them has a point; each curve
    counts at ``t`` with its value at ``t`` (:func:`step_value`), a curve not started yet does not count."""
    times = sorted({float(point[0]) for curve in curves for point in curve})
    rows = []
    for t in times:
        values = [v for v in (step_value(curve, t) for curve in curves) if v is not None]
        q1, median, q3 = (float(q) for q in np.quantile(values, [0.25, 0.5, 0.75]))
        rows.append([t, median, q1, q3])
    return rows


def ranks(scores: Mapping[str, float]) -> dict[str, float]:
    """Rank of each name by score, 1 = highest, ties sharing their average rank."""
    names = sorted(scores)
    ranked = scipy_stats.rankdata([-float(scores[name]) for name in names], method="average")
    return {name: float(rank) for name, rank in zip(names, ranked, strict=True)}


def friedman_nemenyi(table: Mapping[str, Mapping[str, float]], alpha: float = ALPHA) -> dict:
    """The Friedman test over ``table`` (block -> system -> score, every block scoring the same
    systems) and the Nemenyi critical difference of mean ranks, ``q_alpha * sqrt(k (k + 1) / (6 N))``
    with ``q_alpha`` the studentized range quantile over ``sqrt(2)``; ``{"refused": why}`` with fewer
    than :data:`MIN_RANKED_SYSTEMS` systems or :data:`MIN_RANKED_TARGETS` blocks, or when every block
    ties every system (nothing to rank)."""
    blocks = sorted(table)
    systems = sorted(table[blocks[0]]) if blocks else []
    if len(systems) < MIN_RANKED_SYSTEMS or len(blocks) < MIN_RANKED_TARGETS:
        return {"refused": f"needs >= {MIN_RANKED_SYSTEMS} systems and >= {MIN_RANKED_TARGETS} targets with every "
                           f"system counted, got {len(systems)} systems and {len(blocks)} targets"}
    if any(sorted(table[block]) != systems for block in blocks):
        raise StatsInputError("table", "every target must score the same systems")
    per_block = [ranks(table[block]) for block in blocks]
    mean_ranks = {name: float(np.mean([r[name] for r in per_block])) for name in systems}
    if all(len(set(r.values())) == 1 for r in per_block):
        return {"refused": "every target ties every system: nothing to rank"}
    test = scipy_stats.friedmanchisquare(*([table[block][name] for block in blocks] for name in systems))
    k, n = len(systems), len(blocks)
    q_alpha = float(scipy_stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return {"systems": systems, "targets": blocks, "k": k, "n": n, "alpha": alpha,
            "statistic": float(test.statistic), "p_value": float(test.pvalue), "mean_ranks": mean_ranks,
            "q_alpha": q_alpha, "critical_difference": q_alpha * math.sqrt(k * (k + 1) / (6 * n))}


def kaplan_meier(times: Sequence[float | None], window_s: float) -> dict:
    """Kaplan-Meier survival of "no finding yet" from times to first finding, None (nothing found)
    and times past the window censored at the window.

    ``curve`` is the step function ``[[t, S(t)], ...]`` from ``[0, 1]`` to the window; ``median_s`` the
    first time ``S`` reaches 0.5 (None when it never does).
    """
    events = sorted(float(t) for t in times if t is not None and float(t) <= window_s)
    at_risk, survival, curve, median = len(times), 1.0, [[0.0, 1.0]], None
    for t in sorted(set(events)):
        died = events.count(t)
        survival *= 1 - died / at_risk
        at_risk -= died
        curve.append([t, survival])
        if median is None and survival <= 0.5:
            median = t
    if curve[-1][0] < window_s:
        curve.append([float(window_s), survival])
    return {"n": len(times), "events": len(events), "curve": curve, "median_s": median}
