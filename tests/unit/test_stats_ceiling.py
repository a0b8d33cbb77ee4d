"""The recommended ceiling: min over usable components, each refusal recorded."""

from __future__ import annotations

from symcc_ulfm.stats.ceiling import NO_CEILING, recommend_ceiling
from symcc_ulfm.stats.saturation import fit_saturation
from symcc_ulfm.stats.usl import model_usl


def fit(threshold, extrapolated=False, refused=None):
    return {"threshold": threshold, "extrapolated": extrapolated, "refused": refused, "detail": "d"}


def test_minimum_of_all_three():
    result = recommend_ceiling(fit(40), fit(25), 130)
    assert result["ceiling"] == 25
    assert result["used"] == ["usl_threshold", "coverage_threshold", "physical_limit"]
    assert result["partial"] is False and result["refusals"] == [] and result["refused"] is None
    assert recommend_ceiling(fit(400), fit(250), 130)["ceiling"] == 130


def test_record_data_uses_usl_and_cores_and_records_the_coverage_refusal():
    usl = model_usl([8, 32, 128], [23.47, 27.45, 30.22])
    coverage = fit_saturation([8, 32, 128], [185.00, 173.89, 181.44])
    result = recommend_ceiling(usl, coverage, 130)
    assert result["ceiling"] == 11
    assert result["used"] == ["usl_threshold", "physical_limit"]
    assert result["partial"] is True
    assert result["refusals"] == ["coverage_fit_error=invalid coverage observation"]
    assert result["components"]["coverage_threshold"]["used"] is False


def test_extrapolated_or_missing_thresholds_are_not_used():
    result = recommend_ceiling(fit(300, extrapolated=True), fit(None), None)
    assert result["ceiling"] is None and result["used"] == [] and result["refused"] == NO_CEILING
    assert result["refusals"] == [
        "usl_threshold_error=threshold extrapolated beyond measured range",
        "coverage_threshold_error=no threshold",
        "physical_limit_error=cores not recorded",
    ]
    assert result["components"]["usl_threshold"]["value"] == 300


def test_missing_fits_leave_the_physical_limit():
    result = recommend_ceiling(None, None, 64)
    assert result["ceiling"] == 64 and result["used"] == ["physical_limit"]
    assert result["refusals"] == ["usl_threshold_error=not fitted", "coverage_threshold_error=not fitted"]
