"""Universal Scalability Law: ``X(N) = γN / (1 + σ(N−1) + κN(N−1))`` with ``σ, κ ≥ 0``.

``σ`` absorbs serial/contention cost (shared queue, WAL, master scheduling), ``κ`` the coherency
cost that grows with pairs of workers. The fitted values are empirical for one target and one
machine, not constants.

Threshold: the smallest integer ``N ≥ 1`` with ``X(2N)/X(N) − 1 < gain``. With ``D(N)`` the
denominator, ``X(2N)/X(N) < 1+g`` is ``(1+g)·D(2N) − 2·D(N) > 0``, a quadratic in ``N`` whose
derivative ``2κ(2+4g)N + 2g(σ−κ)`` is non-negative for ``N ≥ 1``: once doubling stops paying it never
pays again, so the threshold is found by exponential search plus bisection. ``σ = κ = 0`` (linear
scaling) has no threshold.

Measured range: ``[min N, max N]`` of the observations. The threshold ``T`` is always reported
but flagged ``extrapolated`` when ``T < min N`` or ``2T > max N``, because the claim "doubling
``T`` gains less than ``gain``" then rests on ``X`` outside the data. :func:`predict_usl`
refuses any ``N`` outside the measured range.

Refusals, checked in this order (``refused`` holds the reason, every number is ``None``):
``usl_fit_error=too few tiers`` (fewer than 3 distinct worker counts),
``usl_fit_error=invalid throughput observation`` (a negative or non-finite value, or no positive
one),
``usl_fit_error=intervals too wide`` (a tier's normal 95% CI half-width above ``max_rel_ci`` of its
mean; only tiers with repeats have one), ``usl_fit_error=fit did not converge``.

Check against the F447 record: its tier means (8/32/128 workers, 23.47/27.45/30.22 unique/s) fit
to ``γ=8.8761, σ=0.2932, κ=0, R²=0.9656``, threshold 11; its generated/s means
(65.47/83.42/97.93) to ``σ=0.1881, κ=0``, threshold 20. That matches the record's per-repeat
fit (``σ=0.2933, κ=0``, thresholds 11 and 20) up to the rounding of the published means, as it
should: least squares over a balanced design (equal repeats per tier) has the same optimum as
over the tier means. Only ``R²`` differs (0.6359 there): within-tier scatter is unexplained.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from .common import (
    best_least_squares,
    check_gain,
    check_max_rel_ci,
    check_tiers,
    paired_arrays,
    tier_groups,
    tier_number,
    too_wide,
)

PREFIX = "usl_fit_error="
PREDICT_REFUSAL = "usl_predict_error=extrapolation beyond measured range"
_SIGMA_STARTS = (0.0, 1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0)
_KAPPA_STARTS = (0.0, 1e-6, 1e-4, 1e-2)
#: Exponential search stops here: beyond it the threshold is reported as absent.
_MAX_THRESHOLD = 2**60


def usl(n, gamma: float, sigma: float, kappa: float):
    n = np.asarray(n, dtype=float)
    return gamma * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def doubling_gain(n: float, sigma: float, kappa: float) -> float:
    """``X(2N)/X(N) − 1`` (independent of ``γ``)."""

    def denominator(m: float) -> float:
        return 1 + sigma * (m - 1) + kappa * m * (m - 1)

    return 2 * denominator(n) / denominator(2 * n) - 1


def usl_threshold(sigma: float, kappa: float, gain: float = 0.10) -> int | None:
    """Smallest integer ``N ≥ 1`` where doubling gains less than ``gain``; ``None`` if there is none."""
    gain = check_gain(gain)
    if doubling_gain(1, sigma, kappa) < gain:
        return 1
    high = 2
    while doubling_gain(high, sigma, kappa) >= gain:
        if high >= _MAX_THRESHOLD:
            return None
        high *= 2
    low = high // 2  # doubling still gains at least `gain` here
    while high - low > 1:
        middle = (low + high) // 2
        if doubling_gain(middle, sigma, kappa) < gain:
            high = middle
        else:
            low = middle
    return high


def _profile_gamma(n: np.ndarray, y: np.ndarray, sigma: float, kappa: float) -> tuple[float, float]:
    """For fixed ``σ, κ`` the model is linear in ``γ``: its least-squares value and the SSE."""
    shape = usl(n, 1.0, sigma, kappa)
    gamma = max(0.0, float(shape @ y) / float(shape @ shape))
    residual = y - gamma * shape
    return gamma, float(residual @ residual)


def _fit(n: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Best ``(γ, σ, κ)`` and SSE: a grid of starts with ``γ`` profiled, then bounded least squares."""
    starts = []
    for sigma, kappa in itertools.product(_SIGMA_STARTS, _KAPPA_STARTS):
        gamma, sse = _profile_gamma(n, y, sigma, kappa)
        starts.append((sse, [gamma, sigma, kappa]))
    for _, x0 in starts:
        x0[0] = max(x0[0], 1e-12)
    best = best_least_squares(lambda p: usl(n, *p) - y, starts, [0.0, 0.0, 0.0], [np.inf, np.inf, np.inf])
    if best is None:
        return None
    return _snap_to_bounds(n, y, *best)


def _snap_to_bounds(n: np.ndarray, y: np.ndarray, params: np.ndarray, sse: float) -> tuple[np.ndarray, float]:
    """Set ``σ`` or ``κ`` that sit on their bound to exactly 0 when that costs no fit quality.

    The solver stops a hair inside the bound (``κ = 1e-22``); reporting 0 says what the data say.
    """
    for index in (2, 1):
        trial = params.copy()
        trial[index] = 0.0
        gamma, trial_sse = _profile_gamma(n, y, trial[1], trial[2])
        trial[0] = gamma
        if trial_sse <= sse * (1 + 1e-9) + 1e-300:
            params, sse = trial, min(sse, trial_sse)
    return params, sse


def _refusal(reason: str, detail: str, base: dict) -> dict:
    return {**base, "refused": PREFIX + reason, "detail": detail}


def model_usl(
    workers: Sequence[float],
    throughput: Sequence[float],
    gain: float = 0.10,
    *,
    max_rel_ci: float = 0.25,
) -> dict:
    """Fit the USL to ``(workers[i], throughput[i])`` (per-repeat values or tier means).

    Keys: ``gamma, sigma, kappa, r2, threshold`` plus ``gain, tiers, n_observations,
    measured_range, fitted`` (model value per tier), ``extrapolated`` and ``extrapolation``
    (why), ``threshold_note`` (why there is no threshold), ``refused`` and ``detail``.
    """
    n, y = paired_arrays("workers", workers, "throughput", throughput)
    check_tiers("workers", n)
    gain = check_gain(gain)
    max_rel_ci = check_max_rel_ci(max_rel_ci)
    tiers = sorted({tier_number(t) for t in n})
    base = {
        "model": "usl",
        "gain": gain,
        "n_observations": int(n.size),
        "tiers": tiers,
        "measured_range": [tiers[0], tiers[-1]] if tiers else None,
        "gamma": None,
        "sigma": None,
        "kappa": None,
        "r2": None,
        "threshold": None,
        "threshold_note": None,
        "extrapolated": None,
        "extrapolation": None,
        "fitted": None,
        "refused": None,
        "detail": None,
    }
    if len(tiers) < 3:
        return _refusal("too few tiers", f"{len(tiers)} distinct worker counts; the fit needs 3", base)
    if not np.all(np.isfinite(y)) or np.any(y < 0) or not np.any(y > 0):
        return _refusal(
            "invalid throughput observation", "throughput must be finite, >= 0, and not all 0", base
        )
    wide = too_wide(tier_groups(n, y), max_rel_ci)
    if wide:
        return _refusal("intervals too wide", wide, base)
    fit = _fit(n, y)
    if fit is None:
        return _refusal("fit did not converge", "bounded least squares failed from every start", base)
    (gamma, sigma, kappa), sse = fit
    total = float(((y - y.mean()) ** 2).sum())
    threshold = usl_threshold(sigma, kappa, gain)
    result = {
        **base,
        "gamma": float(gamma),
        "sigma": float(sigma),
        "kappa": float(kappa),
        "r2": 1 - sse / total if total > 0 else None,
        "threshold": threshold,
        "fitted": {f"{t:g}": float(usl(t, gamma, sigma, kappa)) for t in tiers},
    }
    if threshold is None:
        result["threshold_note"] = f"doubling gains at least {gain:g} at every N (sigma=kappa=0 or nearly)"
        return result
    low, high = tiers[0], tiers[-1]
    result["extrapolated"] = threshold < low or 2 * threshold > high
    if result["extrapolated"]:
        result["extrapolation"] = (
            f"threshold N={threshold} compares X({threshold}) with X({2 * threshold}); "
            f"measured range is [{low:g}, {high:g}]"
        )
    return result


def predict_usl(fit: dict, n: float) -> dict:
    """The fitted throughput at ``n``: refused for a refused fit or an ``n`` outside the measured range."""
    answer = {"n": n, "throughput": None, "refused": None}
    if fit.get("refused"):
        return {**answer, "refused": fit["refused"]}
    low, high = fit["measured_range"]
    if not low <= n <= high:
        return {**answer, "refused": PREDICT_REFUSAL, "detail": f"N={n:g} outside [{low:g}, {high:g}]"}
    return {**answer, "throughput": float(usl(n, fit["gamma"], fit["sigma"], fit["kappa"]))}
