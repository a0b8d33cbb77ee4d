"""symcc_ulfm.compare.analyze: which cells count (each rule with what it excluded) and the statistics
of synthetic studies whose differences are known by construction."""

from __future__ import annotations

import json
import math

import pytest

from symcc_ulfm.compare import analyze as analysis

CAMPAIGN = {"kind": "campaign", "launch": []}


def protocol(targets=("t",), systems=("a", "b"), reference="b", trials=5, min_trials=5, **extra) -> dict:
    return {"format": "symcc-ulfm-compare-protocol/1", "description": "synthetic",
            "targets": {t: {"python": "json_parser"} for t in targets},
            "systems": {s: dict(CAMPAIGN) for s in systems}, "reference": reference, "trials": trials,
            "min_trials": min_trials, "window_s": 60, "cores": 2, "snapshots": 3, "seed": 0,
            "rerun": {"max_attempts": 2}, "stop_rule": {}, **extra}


def cell(trial: int, target: str, system: str, final: float, *, first=None, findings=(), status="ok",
         problems=(), curve=None) -> dict:
    return {"format": "symcc-ulfm-compare-cell/1", "cell": f"{trial}.{target}.{system}", "trial": trial,
            "target": target, "system": system, "attempt": 1, "status": status, "problems": list(problems),
            "window_s": 60, "wall_s": 61.0, "cores": [0, 1], "load_before": 0.1, "load_after": 0.2, "system_notes": {},
            "measure": {"measurer": "coverage.py branch arcs", "unit": "arcs", "final": final,
                        "curve": curve if curve is not None else [[0, 1], [30, final / 2], [60, final]],
                        "inputs": 3, "findings": [{"signature": sig, "first_s": t, "sha256": "0" * 64}
                                                  for sig, t in findings],
                        "first_finding_s": first, "hangs": 0}}


def results_of(finals: dict[str, list[float]], target: str = "t", **kwargs) -> dict:
    return {f"{trial}.{target}.{system}": cell(trial, target, system, value, **kwargs)
            for system, values in finals.items() for trial, value in enumerate(values)}


def rule(selection: dict, name: str) -> dict:
    (found,) = [r for r in selection["rules"] if r["rule"] == name]
    return found


DOMINATING = {"a": [100, 101, 102, 103, 104], "b": [10, 11, 12, 13, 14]}


def test_a_system_dominating_the_reference_by_construction_has_a12_one_and_p_below_005():
    selection, result = analysis.analyze(protocol(), results_of(DOMINATING), [])
    pair = result["targets"]["t"]["against_reference"]["a"]
    assert pair["a12"] == 1.0 and pair["p_value"] < 0.05 and pair["p_value"] == pytest.approx(2 / 252)
    assert pair["ratio_of_medians"] == pytest.approx(102 / 12)
    assert result["targets"]["t"]["ranks"] == {"a": 1.0, "b": 2.0}
    assert [r["claim"] for r in result["refusals"]] == ["critical difference"]  # one target, two systems
    assert set(result["targets"]["t"]["against_reference"]) == {"a"}  # the reference is not compared to itself
    assert selection["counts"] == {"t": {"a": 5, "b": 5}} and len(selection["counted_cells"]) == 10


def test_the_reverse_direction_gives_a12_zero():
    _, result = analysis.analyze(protocol(reference="a"), results_of(DOMINATING), [])
    pair = result["targets"]["t"]["against_reference"]["b"]
    assert pair["a12"] == 0.0 and pair["p_value"] < 0.05
    assert result["targets"]["t"]["systems"]["b"] == {"n": 5, "median": 12.0, "q1": 11.0, "q3": 13.0, "min": 10.0,
                                                      "max": 14.0, "below_min_trials": False}


def test_identical_samples_give_p_one_and_a12_half_with_a_note():
    _, result = analysis.analyze(protocol(), results_of({"a": [7] * 5, "b": [7] * 5}), [])
    pair = result["targets"]["t"]["against_reference"]["a"]
    assert (pair["p_value"], pair["a12"], pair["ratio_of_medians"]) == (1.0, 0.5, 1.0) and "nothing to rank" in pair["note"]
    assert result["targets"]["t"]["ranks"] == {"a": 1.5, "b": 1.5}


def test_a_system_with_three_trials_of_five_minimum_is_refused_and_its_median_still_shown():
    results = results_of({"a": [100, 101, 102], "b": [10, 11, 12, 13, 14]})
    selection, result = analysis.analyze(protocol(), results, [])
    target = result["targets"]["t"]
    assert target["against_reference"]["a"] == {"refused": "needs >= 5 counted cells each: a has 3, b has 5"}
    assert target["systems"]["a"]["median"] == 101.0 and target["systems"]["a"]["below_min_trials"]
    assert not target["systems"]["b"]["below_min_trials"]
    claims = {(r["target"], r["system"], r["claim"]) for r in result["refusals"]}
    assert ("t", "a", "final coverage against the reference") in claims
    assert ("t", "a", "time to first finding against the reference") in claims
    assert rule(selection, "complete")["excluded"] == ["3.t.a", "4.t.a"]  # planned, never run


def test_a_failed_cell_is_excluded_and_listed_with_its_problems():
    results = results_of(DOMINATING)
    results["2.t.a"] = cell(2, "t", "a", 5000, status="failed", problems=["campaign exit 70"])
    selection, result = analysis.analyze(protocol(), results, [])
    assert rule(selection, "ok")["excluded"] == [{"cell": "2.t.a", "problems": ["campaign exit 70"]}]
    assert "2.t.a" not in selection["counted_cells"] and selection["counts"]["t"] == {"a": 4, "b": 5}
    assert result["targets"]["t"]["systems"]["a"]["max"] == 104.0  # the failed cell's 5000 is not counted
    assert "a has 4" in result["targets"]["t"]["against_reference"]["a"]["refused"]


def test_unreadable_malformed_and_unplanned_results_are_excluded_with_reasons_and_attempts_are_kept():
    results = results_of(DOMINATING)
    results["0.t.a"] = None
    results["1.t.a"]["measure"]["final"] = math.inf
    results["2.t.a"]["cell"] = "2.t.b"
    results["3.t.a"]["status"] = "done"
    results["9.t.a"] = cell(9, "t", "a", 1)  # trial 9 of a 5-trial protocol
    results["0.u.a"] = cell(0, "u", "a", 1)  # no such target
    attempts = [{"cell": "4.t.a", "attempt": 1, "reason": "interrupted: rank lost", "moved_to": "cells/.attempts/x"},
                {"cell": "1.t.b", "attempt": 1, "reason": "failed", "moved_to": "cells/.attempts/y"}]
    selection, _ = analysis.analyze(protocol(), results, attempts)
    reasons = {e["cell"]: e["reason"] for e in rule(selection, "valid")["excluded"]}
    assert reasons == {"0.t.a": "result.json is unreadable", "1.t.a": "measure.final must be a finite number >= 0",
                       "2.t.a": "cell, trial, target and system do not match the cell's name",
                       "3.t.a": "status must be 'ok' or 'failed', got 'done'",
                       "9.t.a": "not a planned cell of the protocol", "0.u.a": "not a planned cell of the protocol"}
    assert [e["cell"] for e in rule(selection, "valid")["excluded"]] == ["0.t.a", "0.u.a", "1.t.a", "2.t.a",
                                                                        "3.t.a", "9.t.a"]  # by trial
    assert [a["cell"] for a in rule(selection, "attempts")["attempts"]] == ["1.t.b", "4.t.a"]
    assert selection["counts"]["t"] == {"a": 1, "b": 5} and selection["planned_cells"] == 10


def test_a_target_whose_reference_has_no_counted_cell_is_refused():
    results = results_of({"a": [5, 6, 7, 8, 9]})
    _, result = analysis.analyze(protocol(), results, [])
    assert result["targets"]["t"]["against_reference"]["a"] == {"refused": "the reference b has no counted cell on t"}
    assert result["targets"]["t"]["systems"]["b"]["n"] == 0 and result["targets"]["t"]["ranks"] == {"a": 1.0}
    assert {r["reason"] for r in result["refusals"] if r["target"] == "t"} == {"the reference b has no counted cell on t"}


def test_time_to_first_finding_survival_and_findings_per_signature():
    results = results_of({"a": [5] * 5}, findings=[("KeyError@f:1", 4.0)], first=4.0)
    results.update(results_of({"b": [5] * 5}))  # the reference never finds anything: all censored
    results["0.t.a"]["measure"]["findings"].append({"signature": "ValueError@g:2", "first_s": 9.5, "sha256": "1" * 64})
    _, result = analysis.analyze(protocol(), results, [])
    survival = result["targets"]["t"]["survival"]
    assert survival["systems"]["b"]["median_s"] is None and survival["systems"]["b"]["events"] == 0
    assert survival["systems"]["a"]["median_s"] == 4.0 and survival["systems"]["a"]["curve"][1] == [4.0, 0.0]
    pair = survival["against_reference"]["a"]
    assert pair["a12"] == 0.0 and pair["p_value"] < 0.05  # a finds sooner than the reference (censored at 60)
    assert result["targets"]["t"]["findings"]["a"] == {"distinct": 2, "signatures": {
        "KeyError@f:1": {"trials": 5, "first_s": 4.0}, "ValueError@g:2": {"trials": 1, "first_s": 9.5}}}
    assert result["targets"]["t"]["findings"]["b"] == {"distinct": 0, "signatures": {}}


def test_coverage_over_time_bands_per_system():
    results = results_of({"a": [10, 20, 30, 40, 50], "b": [1, 1, 1, 1, 1]})
    _, result = analysis.analyze(protocol(), results, [])
    assert result["targets"]["t"]["curves"]["a"] == [[0.0, 1.0, 1.0, 1.0], [30.0, 15.0, 10.0, 20.0],
                                                     [60.0, 30.0, 20.0, 40.0]]


TABLE = {"t1": {"a": 10, "b": 20, "c": 30}, "t2": {"a": 10, "b": 30, "c": 20}, "t3": {"a": 5, "b": 6, "c": 7},
         "t4": {"a": 1, "b": 2, "c": 3}, "t5": {"a": 3, "b": 2, "c": 1}}


def five_target_study(trials: int = 5) -> tuple[dict, dict]:
    results = {}
    for target, row in TABLE.items():
        results.update(results_of({s: [m - 1, m, m, m + 1, m][:trials] for s, m in row.items()}, target=target))
    return protocol(targets=tuple(TABLE), systems=("a", "b", "c"), reference="a", trials=trials,
                    min_trials=trials), results


def test_mean_rank_and_the_critical_difference_over_five_targets_match_the_hand_computation():
    _, result = analysis.analyze(*five_target_study(), [])
    assert result["mean_rank"] == pytest.approx({"a": 2.6, "b": 1.8, "c": 1.6})
    cd = result["critical_difference"]
    assert cd["statistic"] == pytest.approx(2.8) and cd["p_value"] == pytest.approx(math.exp(-1.4))
    assert cd["critical_difference"] == pytest.approx(2.3437 * math.sqrt(12 / 30), abs=1e-3)
    assert "left_out" not in cd


def test_the_critical_difference_is_refused_with_too_few_targets_or_counted_systems():
    _, one = analysis.analyze(protocol(systems=("a", "b", "c")), results_of({"a": [1] * 5, "b": [2] * 5, "c": [3] * 5}),
                              [])
    assert "needs >= 3 systems and >= 5 targets" in one["critical_difference"]["refused"]
    assert {"target": None, "system": None, "claim": "critical difference",
            "reason": one["critical_difference"]["refused"]} in one["refusals"]
    proto, results = five_target_study()
    del results["4.t3.c"]
    _, short = analysis.analyze(proto, results, [])  # c has 4 of 5 on t3: out of the Friedman table
    assert "got 2 systems and 5 targets" in short["critical_difference"]["refused"]
    assert set(short["critical_difference"]["left_out"]) == {"c"}


def test_planned_cells_follow_each_kind_s_target_family():
    proto = protocol(targets=(), systems=())
    proto["targets"] = {"json": {"python": "json_parser"}, "png": {"harness": "libpng"}}
    proto["systems"] = {"afl2": {"kind": "afl", "instances": [["-M", "m"]]}, "ath": {"kind": "atheris", "processes": 2},
                        "hyb": CAMPAIGN, "none": {"kind": "seeds"}}
    pairs = {(t, s) for _, t, s in analysis.planned_cells({**proto, "trials": 1})}
    assert pairs == {("json", "ath"), ("json", "hyb"), ("json", "none"), ("png", "afl2"), ("png", "hyb"),
                     ("png", "none")}
    results = {f"{trial}.{t}.{s}": cell(trial, t, s, 10 + trial) for trial in range(5) for t, s in pairs}
    _, result = analysis.analyze({**proto, "reference": "afl2"}, results, [])
    assert result["targets"]["json"]["against_reference"]["hyb"] == {"refused": "the reference afl2 does not run on json"}
    assert set(result["targets"]["json"]["systems"]) == {"ath", "hyb", "none"}
    assert result["targets"]["png"]["against_reference"]["hyb"]["p_value"] == 1.0  # the same finals: a tie


def test_the_records_are_strict_json_and_do_not_depend_on_the_order_results_come_in():
    proto, results = five_target_study()
    results["0.t1.a"]["measure"]["first_finding_s"] = 3.0
    first = analysis.analyze(proto, results, [])
    again = analysis.analyze(proto, dict(reversed(list(results.items()))), [])
    text = json.dumps(first, allow_nan=False)
    assert text == json.dumps(again, allow_nan=False) and json.loads(text) == list(first)
