"""Coverage saturation: refusals with their exact recorded reasons, recovery, thresholds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symcc_ulfm.errors import ConfigError
from symcc_ulfm.stats.saturation import (
    fit_saturation,
    relative_doubling_gain,
    saturation,
    saturation_threshold,
)

INVALID = "coverage_fit_error=invalid coverage observation"


def repeats_with(means, half_widths, n=9, seed=0):
    """Per-repeat values with exactly these means and normal 95% CI half-widths."""
    rng = np.random.default_rng(seed)
    tiers, values = [], []
    for (tier, mean), half in zip(means.items(), half_widths, strict=True):
        noise = rng.normal(0, 1, n)
        noise = (noise - noise.mean()) / noise.std(ddof=1) * half * np.sqrt(n) / 1.959964
        tiers += [tier] * n
        values += list(mean + noise)
    return tiers, values


def brute_threshold(e_b, n_b, g_inf, rho, gain, limit):
    """One past the last N in [n_b, limit) whose doubling still gains at least ``gain``."""
    n = np.arange(n_b, limit, dtype=float)
    here = saturation(n, e_b, n_b, g_inf, rho)
    above = np.flatnonzero((saturation(2 * n, e_b, n_b, g_inf, rho) - here) / here >= gain)
    return int(n[above[-1]]) + 1 if above.size else n_b


def test_record_endpoint_edges_are_refused_as_non_monotonic():
    tiers, values = repeats_with({8: 185.00, 32: 173.89, 128: 181.44}, [3.36, 5.89, 3.07])
    fit = fit_saturation(tiers, values)
    assert fit["refused"] == INVALID
    assert "N=8 to N=32" in fit["detail"]
    assert fit["threshold"] is None and fit["g_inf"] is None


def test_tier_means_alone_are_refused_too():
    assert fit_saturation([8, 32, 128], [185.00, 173.89, 181.44])["refused"] == INVALID


def test_a_dip_within_noise_is_accepted():
    tiers, values = repeats_with({8: 100.0, 32: 118.0, 128: 116.5}, [2.0, 2.0, 2.0])
    fit = fit_saturation(tiers, values)
    assert fit["refused"] is None
    assert fit["e_b"] == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("tiers", "coverage", "reason"),
    [
        ([8, 32, 128], [185.0, float("inf"), 190.0], INVALID),
        ([8, 32, 128], [185.0, float("nan"), 190.0], INVALID),
        ([8, 32, 128], [0.0, 5.0, 6.0], INVALID),
        ([8, 32, 128], [-1.0, 5.0, 6.0], INVALID),
        ([8, 32], [185.0, 190.0], "coverage_fit_error=too few tiers"),
        ([], [], "coverage_fit_error=too few tiers"),
        ([8, 8, 32, 32, 128, 128], [100, 102, 60, 180, 130, 131], "coverage_fit_error=intervals too wide"),
    ],
)
def test_refusals_record_the_exact_reason(tiers, coverage, reason):
    fit = fit_saturation(tiers, coverage)
    assert fit["refused"] == reason
    assert fit["detail"]


@pytest.mark.parametrize(("g_inf", "rho"), [(50.0, 0.05), (200.0, 0.01), (10.0, 0.3), (80.0, 0.002)])
def test_recovers_known_parameters(g_inf, rho):
    tiers = [8, 16, 32, 64, 128, 256]
    fit = fit_saturation(tiers, list(saturation(tiers, 100.0, 8, g_inf, rho)))
    assert fit["refused"] is None
    assert fit["g_inf"] == pytest.approx(g_inf, rel=1e-5)
    assert fit["rho"] == pytest.approx(rho, rel=1e-5)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-9)
    assert fit["threshold"] == brute_threshold(100.0, 8, fit["g_inf"], fit["rho"], 0.10, 20_000)


def test_recovers_parameters_from_noisy_repeats():
    rng = np.random.default_rng(11)
    tiers = np.repeat([4, 8, 16, 32, 64, 128], 15)
    truth = saturation(tiers, 120.0, 4, 60.0, 0.04)
    values = truth + rng.normal(0, 1.0, tiers.size)
    fit = fit_saturation(list(tiers), list(values))
    assert fit["g_inf"] == pytest.approx(60.0, rel=0.05)
    assert fit["rho"] == pytest.approx(0.04, rel=0.1)


@settings(max_examples=300, deadline=None)
@given(
    e_b=st.floats(1, 1000),
    n_b=st.integers(1, 64),
    g_inf=st.floats(0, 5000),
    rho=st.floats(1e-3, 2),
    gain=st.floats(0.01, 0.5),
)
def test_threshold_matches_brute_force(e_b, n_b, g_inf, rho, gain):
    expected = brute_threshold(e_b, n_b, g_inf, rho, gain, limit=n_b + 12_000)
    assume(expected < n_b + 11_000)  # the scan window holds the whole superlevel set
    near = [
        relative_doubling_gain(n, e_b, n_b, g_inf, rho) for n in range(max(n_b, expected - 2), expected + 2)
    ]
    assume(all(abs(r - gain) > 1e-9 * gain for r in near))  # a float tie has no meaningful side
    assert saturation_threshold(e_b, n_b, g_inf, rho, gain) == expected


def test_threshold_skips_a_low_gain_before_the_rise():
    """The relative gain rises before it falls: a low gain at N_b is not the threshold."""
    e_b, n_b, g_inf, rho = 100.0, 8, 1000.0, 0.001
    assert relative_doubling_gain(n_b, e_b, n_b, g_inf, rho) < 0.10
    assert relative_doubling_gain(100, e_b, n_b, g_inf, rho) > 0.10
    assert saturation_threshold(e_b, n_b, g_inf, rho) > 100


def test_threshold_at_lowest_tier_and_extrapolation_are_noted():
    flat = fit_saturation([8, 32, 128], [100.0, 101.0, 101.5])
    assert flat["threshold"] == 8 and flat["threshold_note"]
    tiers = [1, 2, 4]
    rising = fit_saturation(tiers, list(saturation(tiers, 10.0, 1, 100.0, 0.05)))
    assert rising["threshold"] > 2 and rising["extrapolated"] is True
    assert "measured range is [1, 4]" in rising["extrapolation"]


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError):
        fit_saturation([8, 32, 128], [1.0, 2.0])
    with pytest.raises(ConfigError):
        fit_saturation([8, 32, 128], [1.0, 2.0, 3.0], gain=-0.1)
