"""Time to first finding between tiers: Vargha-Delaney A12 and Mann-Whitney U."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symcc_ulfm.stats import effect
from symcc_ulfm.stats.common import StatsInputError

samples = st.lists(st.integers(0, 20).map(float), min_size=2, max_size=12)


@given(samples, samples)
def test_a12_is_the_share_of_pairs_where_x_is_later(x, y):
    pairs = list(itertools.product(x, y))
    expected = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs) / len(pairs)
    assert effect.a12(x, y) == pytest.approx(expected)
    assert effect.a12(x, y) + effect.a12(y, x) == pytest.approx(1.0)


def test_a_tier_that_always_finds_sooner_has_a12_zero_and_a_small_p_value():
    sooner, later = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
    result = effect.compare(sooner, later)
    assert result["a12"] == 0.0 and result["magnitude"] == "large"
    assert result["u"] == 0.0 and result["p_value"] == pytest.approx(0.0021645, rel=1e-3)  # exact two-sided
    assert effect.compare(later, sooner)["a12"] == 1.0


def test_censoring_counts_no_finding_as_the_window():
    assert effect.censored([None, 2.5, 99.0], 10.0) == [10.0, 2.5, 10.0]
    assert effect.magnitude(0.5) == "negligible" and effect.magnitude(0.62) == "small"
    assert effect.magnitude(0.3) == "medium" and effect.magnitude(0.95) == "large"


def test_nothing_to_rank_or_too_few_observations_is_refused():
    with pytest.raises(StatsInputError, match="nothing to rank"):
        effect.compare([10.0, 10.0], [10.0, 10.0, 10.0])
    with pytest.raises(StatsInputError):
        effect.compare([1.0], [2.0, 3.0])
