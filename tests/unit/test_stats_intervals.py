"""Intervals checked against scipy.stats and an independent Wilson closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.stats.common import StatsInputError
from symcc_ulfm.stats.intervals import mean_normal_ci, model_wilson, paired_relative_change, wilson_interval

Z = stats.norm.ppf(0.975)


def wilson_reference(failures: int, trials: int) -> tuple[float, float]:
    """Wilson (1927) in the (2np + z² ± z√(z² + 4np(1−p))) / (2(n + z²)) form."""
    p = failures / trials
    root = Z * math.sqrt(Z * Z + 4 * trials * p * (1 - p))
    denominator = 2 * (trials + Z * Z)
    return (2 * failures + Z * Z - root) / denominator, (2 * failures + Z * Z + root) / denominator


def test_mean_ci_matches_scipy_norm():
    values = [65.1, 61.0, 70.2, 66.6, 63.3, 68.9, 64.4, 67.0, 62.8]
    result = mean_normal_ci(values)
    low, high = stats.norm.interval(0.95, loc=np.mean(values), scale=stats.sem(values))
    assert result["n"] == 9
    assert result["mean"] == pytest.approx(np.mean(values), rel=1e-12)
    assert result["sd"] == pytest.approx(np.std(values, ddof=1), rel=1e-12)
    assert (result["low"], result["high"]) == (pytest.approx(low, rel=1e-7), pytest.approx(high, rel=1e-7))


def test_paired_relative_change_matches_scipy_t():
    base = np.array([23.0, 24.1, 22.7, 23.9, 24.4, 22.2, 23.5, 23.8, 23.6])
    values = np.array([27.1, 28.3, 26.0, 27.9, 29.2, 25.8, 27.0, 28.4, 27.3])
    change = (values - base) / base
    low, high = stats.t.interval(0.95, change.size - 1, loc=change.mean(), scale=stats.sem(change))
    result = paired_relative_change(list(values), list(base))
    assert result["mean"] == pytest.approx(change.mean(), rel=1e-12)
    assert (result["low"], result["high"]) == (pytest.approx(low, rel=1e-10), pytest.approx(high, rel=1e-10))
    # a t interval, visibly wider than the normal one for 9 blocks
    assert result["high"] - result["low"] > 2 * Z * stats.sem(change) * 1.1


def test_wilson_record_value():
    low, high = wilson_interval(2, 11)
    assert (round(low, 4), round(high, 4)) == (0.0514, 0.4770)
    assert model_wilson(2, 11) == {
        "failures": 2,
        "trials": 11,
        "rate": pytest.approx(2 / 11),
        "low": low,
        "high": high,
    }


@given(st.integers(min_value=1, max_value=500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_closed_form(counts):
    failures, trials = counts
    low, high = wilson_interval(failures, trials)
    ref_low, ref_high = wilson_reference(failures, trials)
    assert low == pytest.approx(max(0.0, ref_low), abs=1e-7)
    assert high == pytest.approx(min(1.0, ref_high), abs=1e-7)
    assert 0.0 <= low <= failures / trials <= high <= 1.0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: mean_normal_ci([1.0]), "values"),
        (lambda: mean_normal_ci([1.0, float("nan")]), "values"),
        (lambda: paired_relative_change([1.0, 2.0], [1.0, 0.0]), "baselines"),
        (lambda: paired_relative_change([1.0, 2.0, 3.0], [1.0, 2.0]), "values"),
        (lambda: paired_relative_change([1.0], [1.0]), "baselines"),
        (lambda: wilson_interval(3, 2), "failures"),
        (lambda: wilson_interval(-1, 2), "failures"),
        (lambda: wilson_interval(0, 0), "trials"),
        (lambda: wilson_interval(1.5, 3), "failures"),
    ],
)
def test_bad_input_is_a_config_error(call, field):
    with pytest.raises(StatsInputError) as info:
        call()
    assert isinstance(info.value, ConfigError)
    assert info.value.exit_code == 2
    assert info.value.field == field
