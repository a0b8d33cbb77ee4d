"""Input checks and per-tier grouping shared by the interval and model modules."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import least_squares

from ..errors import ConfigError

#: Normal 97.5% quantile used for every "normal 95% CI" of the study.
Z95 = 1.959964


class StatsInputError(ConfigError):
    """Arguments a statistic cannot be computed from (too few values, zero baselines, ...)."""


def as_array(field: str, values: Sequence[float], *, minimum: int = 1) -> np.ndarray:
    """``values`` as a 1-D float array of at least ``minimum`` entries (finiteness is not checked)."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(field, f"expected a list of numbers ({exc})") from exc
    if array.ndim != 1:
        raise StatsInputError(field, "expected a flat list of numbers")
    if array.size < minimum:
        raise StatsInputError(field, f"needs at least {minimum} values, got {array.size}")
    return array


def finite_array(field: str, values: Sequence[float], *, minimum: int = 1) -> np.ndarray:
    array = as_array(field, values, minimum=minimum)
    if not np.all(np.isfinite(array)):
        raise StatsInputError(field, "every value must be finite")
    return array


def paired_arrays(
    x_field: str, x: Sequence[float], y_field: str, y: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Two equally long arrays (workers/throughput, values/baselines, ...), possibly empty."""
    xs, ys = as_array(x_field, x, minimum=0), as_array(y_field, y, minimum=0)
    if xs.size != ys.size:
        raise StatsInputError(y_field, f"has {ys.size} values but {x_field} has {xs.size}")
    return xs, ys


def check_tiers(field: str, tiers: np.ndarray) -> None:
    """Worker counts: finite and at least 1 (fractional values are allowed for model inputs)."""
    if not np.all(np.isfinite(tiers)) or np.any(tiers < 1):
        raise StatsInputError(field, "every worker count must be a finite number >= 1")


def tier_groups(tiers: np.ndarray, values: np.ndarray) -> dict[float, np.ndarray]:
    """Observations per distinct tier, tiers ascending."""
    return {float(t): values[tiers == t] for t in np.unique(tiers)}


def half_width(values: np.ndarray) -> float | None:
    """Normal 95% CI half-width of the mean; ``None`` with fewer than 2 observations."""
    if values.size < 2:
        return None
    return Z95 * float(np.std(values, ddof=1)) / math.sqrt(values.size)


def too_wide(groups: dict[float, np.ndarray], max_rel_ci: float) -> str | None:
    """A description of the first tier whose CI half-width exceeds ``max_rel_ci`` x |mean|.

    Tiers with one observation have no interval and are not judged.
    """
    for tier, values in groups.items():
        width = half_width(values)
        mean = float(np.mean(values))
        if width is not None and width > max_rel_ci * abs(mean):
            return (
                f"tier {tier:g}: 95% CI half-width {width:.6g} exceeds {max_rel_ci:g} x |mean| "
                f"({abs(mean):.6g})"
            )
    return None


def check_gain(gain: float) -> float:
    if not (isinstance(gain, int | float) and math.isfinite(gain) and 0 < gain < 1):
        raise StatsInputError("gain", f"must be a number strictly between 0 and 1, got {gain!r}")
    return float(gain)


def check_max_rel_ci(max_rel_ci: float) -> float:
    if not (isinstance(max_rel_ci, int | float) and math.isfinite(max_rel_ci) and max_rel_ci > 0):
        raise StatsInputError("max_rel_ci", f"must be a positive number, got {max_rel_ci!r}")
    return float(max_rel_ci)


def tier_number(tier: float) -> int | float:
    """A tier as JSON should show it: ``8`` rather than ``8.0``."""
    return int(tier) if float(tier).is_integer() else float(tier)


def best_least_squares(residual, starts: list[tuple[float, list[float]]], lower, upper, keep: int = 3):
    """Bounded least squares from the ``keep`` best-scoring starts; ``(params, SSE)`` of the best, or None.

    ``starts`` are ``(score, x0)`` pairs (a cheap pre-fit, lower is better), so the expensive
    solver runs only from the most promising points.
    """
    best = None
    for _, x0 in sorted(starts, key=lambda item: item[0])[:keep]:
        result = least_squares(residual, x0, bounds=(lower, upper), method="trf", x_scale="jac",
                               ftol=1e-14, xtol=1e-14, gtol=1e-14, max_nfev=20000)
        if result.status <= 0 or not np.all(np.isfinite(result.x)):
            continue
        sse = float(result.fun @ result.fun)
        if best is None or sse < best[1]:
            best = (result.x.copy(), sse)
    return best
