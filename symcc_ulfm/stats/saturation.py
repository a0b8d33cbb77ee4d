"""Coverage saturation: ``E(N) = E_b + G∞(1 − e^{−ρ(N−N_b)})`` with ``G∞ ≥ 0, ρ > 0``.

A project-specific decision model, not a law: more workers keep generating candidates while the
marginal coverage tends to zero. ``N_b`` is the lowest measured tier and ``E_b`` the mean coverage
there (fixed, not fitted), so the curve starts at the data and only ``G∞, ρ`` are fitted.

Threshold: the smallest integer ``N ≥ N_b`` from which on doubling is predicted to gain less than
``gain`` relative coverage, ``(E(2N) − E(N))/E(N) < gain``. With ``u = e^{−ρ(N−N_b)}`` and
``c = e^{−ρN_b}``, ``E(2N) − E(N) = G∞(u − c·u²)``, so "gain at least g" is the concave quadratic
``−G∞c·u² + G∞(1+g)·u − g(E_b+G∞) ≥ 0``: an interval of ``u``, hence of ``N``. The relative gain can
rise before it falls, so the threshold is the first integer past the upper end of that interval
(its smaller root in ``u``), not merely the first ``N`` where the gain happens to be low. When
the gain is already below ``gain`` at ``N_b`` the threshold is ``N_b`` and ``threshold_note`` says
it may be lower. It is flagged ``extrapolated`` when ``2T`` exceeds the largest measured tier.

Refusals, checked in this order and recorded in ``refused`` exactly as:
``coverage_fit_error=too few tiers`` (fewer than 3 distinct tiers);
``coverage_fit_error=invalid coverage observation``: a non-finite or negative value, a
non-positive mean at ``N_b``, or tier means that are non-monotonic: a tier's mean below the
previous tier's by more than the root-sum-square of their normal 95% CI half-widths (0 for a
tier with a single value);
``coverage_fit_error=intervals too wide`` (a tier's CI half-width above ``max_rel_ci`` of its mean);
``coverage_fit_error=fit did not converge``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .common import (
    best_least_squares,
    check_gain,
    check_max_rel_ci,
    check_tiers,
    half_width,
    paired_arrays,
    tier_groups,
    tier_number,
    too_wide,
)

PREFIX = "coverage_fit_error="
INVALID = PREFIX + "invalid coverage observation"
#: Starts and bounds for ``θ = ρ·(N_max − N_b)``, the decay over the measured span.
_THETA_STARTS = (0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
_THETA_BOUNDS = (1e-6, 1e3)


def saturation(n, e_b: float, n_b: float, g_inf: float, rho: float):
    return e_b + g_inf * (1 - np.exp(-rho * (np.asarray(n, dtype=float) - n_b)))


def relative_doubling_gain(n: float, e_b: float, n_b: float, g_inf: float, rho: float) -> float:
    """``(E(2N) − E(N)) / E(N)``."""
    here = float(saturation(n, e_b, n_b, g_inf, rho))
    return (float(saturation(2 * n, e_b, n_b, g_inf, rho)) - here) / here


def saturation_threshold(e_b: float, n_b: float, g_inf: float, rho: float, gain: float = 0.10) -> int:
    """Smallest integer ``N ≥ N_b`` after which doubling always gains less than ``gain`` (see module)."""
    gain = check_gain(gain)
    start = math.ceil(n_b)
    if g_inf <= 0:
        return start
    a = -g_inf * math.exp(-rho * n_b)
    b = g_inf * (1 + gain)
    c = -gain * (e_b + g_inf)
    discriminant = b * b - 4 * a * c
    if discriminant < 0:
        return start
    root = math.sqrt(discriminant)
    u_low = -2 * c / (b + root)  # the smaller root, stable as a -> 0
    u_high = (b + root) / (-2 * a) if a < 0 else math.inf
    if u_low > 1:
        return start
    # gain >= `gain` exactly for N in [n_low, n_high]; u <= 1 means N >= N_b
    n_high = n_b - math.log(u_low) / rho
    n_low = n_b - math.log(u_high) / rho if u_high < 1 else n_b
    last = math.floor(n_high)
    return last + 1 if last >= max(start, math.ceil(n_low)) else start


def _profile_g(n, r, n_b, span, theta) -> tuple[float, float]:
    """For fixed ``θ`` the model is linear in ``G∞``: its least-squares value (≥ 0) and the SSE."""
    shape = 1 - np.exp(-theta * (n - n_b) / span)
    g_inf = max(0.0, float(shape @ r) / float(shape @ shape))
    residual = r - g_inf * shape
    return g_inf, float(residual @ residual)


def _fit(n: np.ndarray, r: np.ndarray, n_b: float, span: float) -> tuple[float, float, float] | None:
    """``(G∞, ρ, SSE)`` for the excess coverage ``r = E − E_b``."""
    starts = []
    for theta in _THETA_STARTS:
        g_inf, sse = _profile_g(n, r, n_b, span, theta)
        starts.append((sse, [g_inf, theta]))
    best = best_least_squares(
        lambda p: p[0] * (1 - np.exp(-p[1] * (n - n_b) / span)) - r,
        starts, [0.0, _THETA_BOUNDS[0]], [np.inf, _THETA_BOUNDS[1]],
    )
    return None if best is None else (float(best[0][0]), float(best[0][1]) / span, best[1])


def _non_monotonic(groups: dict[float, np.ndarray]) -> str | None:
    tiers = list(groups)
    for low, high in zip(tiers, tiers[1:], strict=False):
        drop = float(np.mean(groups[low])) - float(np.mean(groups[high]))
        noise = math.hypot(half_width(groups[low]) or 0.0, half_width(groups[high]) or 0.0)
        if drop > noise:
            return (
                f"mean coverage falls by {drop:.6g} from N={low:g} to N={high:g}, "
                f"beyond the noise {noise:.6g} (root-sum-square of the 95% CI half-widths)"
            )
    return None


def fit_saturation(
    tiers: Sequence[float],
    coverage: Sequence[float],
    gain: float = 0.10,
    *,
    max_rel_ci: float = 0.25,
) -> dict:
    """Fit the saturation curve to ``(tiers[i], coverage[i])`` (per-repeat values or tier means).

    Keys: ``e_b, n_b, g_inf, rho, r2, threshold, threshold_note, extrapolated, extrapolation,
    gain, tiers, n_observations, measured_range, fitted, refused, detail``.
    """
    n, y = paired_arrays("tiers", tiers, "coverage", coverage)
    check_tiers("tiers", n)
    gain = check_gain(gain)
    max_rel_ci = check_max_rel_ci(max_rel_ci)
    distinct = sorted({tier_number(t) for t in n})
    base = {
        "model": "coverage_saturation",
        "gain": gain,
        "n_observations": int(n.size),
        "tiers": distinct,
        "measured_range": [distinct[0], distinct[-1]] if distinct else None,
        **dict.fromkeys(("e_b", "n_b", "g_inf", "rho", "r2", "threshold", "threshold_note")),
        **dict.fromkeys(("extrapolated", "extrapolation", "fitted", "refused", "detail")),
    }

    def refuse(reason: str, detail: str) -> dict:
        return {**base, "refused": reason, "detail": detail}

    if len(distinct) < 3:
        return refuse(PREFIX + "too few tiers", f"{len(distinct)} distinct tiers; the fit needs 3")
    if not np.all(np.isfinite(y)) or np.any(y < 0):
        return refuse(INVALID, "coverage must be finite and >= 0")
    groups = tier_groups(n, y)
    n_b = float(distinct[0])
    e_b = float(np.mean(groups[n_b]))
    if e_b <= 0:
        return refuse(INVALID, f"mean coverage at the lowest tier N={n_b:g} is {e_b:g}; it must be > 0")
    falling = _non_monotonic(groups)
    if falling:
        return refuse(INVALID, falling)
    wide = too_wide(groups, max_rel_ci)
    if wide:
        return refuse(PREFIX + "intervals too wide", wide)
    span = float(distinct[-1]) - n_b
    fit = _fit(n, y - e_b, n_b, span)
    if fit is None:
        return refuse(PREFIX + "fit did not converge", "bounded least squares failed from every start")
    g_inf, rho, sse = fit
    total = float(((y - y.mean()) ** 2).sum())
    threshold = saturation_threshold(e_b, n_b, g_inf, rho, gain)
    result = {
        **base,
        "e_b": e_b,
        "n_b": distinct[0],
        "g_inf": g_inf,
        "rho": rho,
        "r2": 1 - sse / total if total > 0 else None,
        "threshold": threshold,
        "fitted": {f"{t:g}": float(saturation(t, e_b, n_b, g_inf, rho)) for t in distinct},
        "extrapolated": 2 * threshold > distinct[-1],
    }
    if threshold == math.ceil(n_b):
        result["threshold_note"] = (
            f"doubling already gains under {gain:g} at the lowest tier; it may be lower"
        )
    if result["extrapolated"]:
        result["extrapolation"] = (
            f"threshold N={threshold} compares E({threshold}) with E({2 * threshold}); "
            f"measured range is [{distinct[0]:g}, {distinct[-1]:g}]"
        )
    return result
