"""symcc_ulfm.stats.fuzzbench: FuzzBench's statistics on samples whose answer is known by construction
or by hand (Mann-Whitney U exact p-values, Demšar's critical-difference table, Kaplan-Meier)."""

from __future__ import annotations

import math

import pytest

from symcc_ulfm.stats import fuzzbench
from symcc_ulfm.stats.common import StatsInputError

HIGH = [100, 101, 102, 103, 104]
LOW = [10, 11, 12, 13, 14]


def test_describe_gives_median_quartiles_and_range():
    assert fuzzbench.describe([4, 1, 3, 2, 5]) == {"n": 5, "median": 3.0, "q1": 2.0, "q3": 4.0, "min": 1.0, "max": 5.0}
    assert fuzzbench.describe([]) == {"n": 0, "median": None, "q1": None, "q3": None, "min": None, "max": None}
    with pytest.raises(StatsInputError):
        fuzzbench.describe([1.0, math.nan])


def test_a_dominating_sample_has_a12_one_and_a_significant_exact_p():
    forward = fuzzbench.versus(HIGH, LOW)
    assert forward["a12"] == 1.0 and forward["magnitude"] == "large" and forward["u"] == 25.0
    assert forward["p_value"] == pytest.approx(2 / 252)  # exact two-sided: 2 of the C(10,5) orderings
    backward = fuzzbench.versus(LOW, HIGH)
    assert backward["a12"] == 0.0 and backward["u"] == 0.0 and backward["p_value"] == pytest.approx(2 / 252)


def test_overlapping_samples_are_not_significant():
    result = fuzzbench.versus([1, 3, 5, 7, 9], [2, 4, 6, 8, 10])
    assert result["a12"] == pytest.approx(10 / 25) and result["p_value"] > 0.05


def test_all_identical_samples_give_p_one_and_a12_half_with_a_note():
    result = fuzzbench.versus([7, 7, 7], [7, 7, 7, 7, 7])
    assert (result["p_value"], result["a12"], result["u"]) == (1.0, 0.5, 7.5)
    assert "nothing to rank" in result["note"]
    tied_apart = fuzzbench.versus([7, 7, 7], [8, 8, 8])  # constant but different: a real, complete separation
    assert tied_apart["a12"] == 0.0 and "note" not in tied_apart


def test_versus_needs_two_values_each():
    with pytest.raises(StatsInputError):
        fuzzbench.versus([1], [1, 2])


def test_ratio_is_none_without_a_denominator():
    assert fuzzbench.ratio(30, 20) == 1.5
    assert fuzzbench.ratio(3, 0) is None and fuzzbench.ratio(None, 2) is None


def test_bands_take_each_curve_at_its_last_point_before_t():
    curves = [[[0, 1], [10, 5], [20, 9]], [[0, 3], [20, 4]], [[0, 2], [10, 2], [20, 6]]]
    assert fuzzbench.bands(curves) == [[0.0, 2.0, 1.5, 2.5], [10.0, 3.0, 2.5, 4.0], [20.0, 6.0, 5.0, 7.5]]
    assert fuzzbench.bands([[[5, 1]], [[0, 0]]])[0] == [0.0, 0.0, 0.0, 0.0]  # a curve not started does not count
    assert fuzzbench.bands([]) == []


def test_ranks_put_the_highest_first_and_share_ties():
    assert fuzzbench.ranks({"a": 10, "b": 30, "c": 20}) == {"a": 3.0, "b": 1.0, "c": 2.0}
    assert fuzzbench.ranks({"a": 5, "b": 5, "c": 1}) == {"a": 1.5, "b": 1.5, "c": 3.0}


TABLE = {  # medians: c leads on t1, t3, t4; b on t2; a on t5 (ranks by hand in the test)
    "t1": {"a": 10, "b": 20, "c": 30}, "t2": {"a": 10, "b": 30, "c": 20}, "t3": {"a": 5, "b": 6, "c": 7},
    "t4": {"a": 1, "b": 2, "c": 3}, "t5": {"a": 3, "b": 2, "c": 1}}


def test_friedman_and_the_critical_difference_match_a_hand_computation():
    result = fuzzbench.friedman_nemenyi(TABLE)
    # mean ranks: a (3+3+3+3+1)/5, b (2+1+2+2+2)/5, c (1+2+1+1+3)/5
    assert result["mean_ranks"] == pytest.approx({"a": 2.6, "b": 1.8, "c": 1.6})
    # chi2_F = 12 N / (k (k+1)) * (sum R_j^2 - k (k+1)^2 / 4) = 5 * (12.56 - 12); df 2: p = exp(-chi2 / 2)
    assert result["statistic"] == pytest.approx(2.8) and result["p_value"] == pytest.approx(math.exp(-1.4))
    assert result["q_alpha"] == pytest.approx(2.343, abs=1e-3)  # Demšar (2006), Table 5(a), k = 3
    assert result["critical_difference"] == pytest.approx(2.343 * math.sqrt(3 * 4 / (6 * 5)), abs=2e-3)
    assert (result["k"], result["n"], result["systems"]) == (3, 5, ["a", "b", "c"])


def test_friedman_is_refused_with_too_few_systems_or_targets_or_nothing_to_rank():
    four = {t: row for t, row in TABLE.items() if t != "t5"}
    assert "needs >= 3 systems and >= 5 targets" in fuzzbench.friedman_nemenyi(four)["refused"]
    two = {t: {"a": row["a"], "b": row["b"]} for t, row in TABLE.items()}
    assert "got 2 systems and 5 targets" in fuzzbench.friedman_nemenyi(two)["refused"]
    flat = {t: {"a": 1, "b": 1, "c": 1} for t in TABLE}
    assert fuzzbench.friedman_nemenyi(flat) == {"refused": "every target ties every system: nothing to rank"}
    with pytest.raises(StatsInputError):
        fuzzbench.friedman_nemenyi({**TABLE, "t6": {"a": 1, "b": 2}})


def test_kaplan_meier_by_hand():
    km = fuzzbench.kaplan_meier([10, None, 20, 20, None], 100)
    # t=10: 4/5; t=20: two of the four at risk -> 0.8 * 2/4
    assert km["curve"] == [[0.0, 1.0], [10.0, 0.8], [20.0, pytest.approx(0.4)], [100.0, pytest.approx(0.4)]]
    assert km["median_s"] == 20.0 and (km["n"], km["events"]) == (5, 3)


def test_kaplan_meier_all_censored_has_no_median():
    km = fuzzbench.kaplan_meier([None, None, 150.0], 100)  # found only after the window: censored too
    assert km == {"n": 3, "events": 0, "curve": [[0.0, 1.0], [100.0, 1.0]], "median_s": None}


def test_kaplan_meier_median_is_none_until_half_have_found():
    assert fuzzbench.kaplan_meier([5, None, None], 60)["median_s"] is None
    assert fuzzbench.kaplan_meier([5, 9, None, None], 60)["median_s"] == 9.0
