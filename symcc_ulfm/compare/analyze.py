"""Which cells of a comparison study count, and the FuzzBench statistics of those that do.

:func:`analyze` is pure (no files): the protocol, the parsed ``result.json`` of every complete cell
(``None`` when unreadable) and the record of cells run again go in; the selection record
(``selection.json``) and the analysis record (``analysis/compare.json``) come out, JSON-ready with
finite floats, so a verifier recomputes both from the cells and compares.

The planned cells are ``<trial>.<target>.<system>`` for every trial below ``trials`` and every
target and system a system can run on (``afl`` needs a harness target, ``atheris`` a Python one).
Selection rules, in order, each recorded with exactly what it excluded:

1. ``complete``: a planned cell without a result was not run (a stop rule, an unfinished study);
2. ``valid``: a result that is unreadable, not a planned cell, or not of the cell format;
3. ``ok``: a failed cell never counts, listed with its problems;
4. ``attempts``: the cells run again and why, kept for the record (they exclude nothing).

The analysis, per target: the final coverage of each system (n, median, IQR, range), each system
against the protocol's reference (two-sided Mann-Whitney U, A12 of the system against the
reference: above 0.5 it reaches more, ratio of medians), coverage-over-time medians with q1-q3
bands, ranks by median (1 = best), findings (each signature and how many trials found it), and
the time to first finding (Kaplan-Meier, censored at the window; U and A12 on censored times,
above 0.5 the system finds *later*). Across targets: the mean rank, and the Friedman test with the
Nemenyi critical difference over the systems counted on every target. A claim the data cannot
carry is refused with its reason, in place and in ``refusals``: a pair where either side has fewer
than ``min_trials`` counted cells (its medians are still shown, ``below_min_trials`` marks them),
a target whose reference has no counted cell, a critical difference without enough systems or
targets. Trials are independent samples, as FuzzBench treats them (unpaired tests).

:func:`analyze_mechanism`, also pure, lays out what each worker kind of every counted campaign
cell added (``evidence.mechanism``: the runner computes it from ``cells/<cell>/system/state``)
into the mechanism record (``analysis/mechanism.json``): per target and campaign system, over its
trials, the redundant-edge ratio, the median hand-off time each way, each kind's CPU share and its
edges first per CPU second, each as n, median, IQR and range; a cell whose state could not be
summarised is listed with the reason.
"""

from __future__ import annotations

import math
import re

from ..stats import effect
from ..stats import fuzzbench as stats
from .design import cell_name, plan, reference_of

FORMAT = "symcc-ulfm-compare-analysis/1"
MECHANISM_FORMAT = "symcc-ulfm-compare-mechanism/1"
SELECTION_FORMAT = "symcc-ulfm-compare-selection/1"
CELL_FORMAT = "symcc-ulfm-compare-cell/1"
_CELL_NAME = re.compile(r"(0|[1-9][0-9]*)\.([a-z0-9][a-z0-9_+-]*)\.([a-z0-9][a-z0-9_+-]*)")


def _number(value) -> bool:
    """A finite JSON number (``true`` is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _time(value) -> bool:
    return _number(value) and value >= 0


def planned_cells(protocol: dict) -> list[tuple[int, str, str]]:
    """``(trial, target, system)`` of every cell the protocol plans (:func:`.design.plan`), sorted."""
    return sorted((c["trial"], c["target"], c["system"]) for c in plan(protocol)["cells"])


def _measure_problem(measure) -> str | None:
    if not isinstance(measure, dict):
        return "measure must be an object"
    if not isinstance(measure.get("unit"), str):
        return "measure.unit must be a string"
    if not _number(measure.get("final")) or measure["final"] < 0:
        return "measure.final must be a finite number >= 0"
    curve = measure.get("curve")
    if not isinstance(curve, list) or not all(
            isinstance(p, list) and len(p) == 2 and _time(p[0]) and _number(p[1]) for p in curve):
        return "measure.curve must be a list of [t >= 0, value] pairs"
    findings = measure.get("findings")
    if not isinstance(findings, list) or not all(
            isinstance(f, dict) and isinstance(f.get("signature"), str) and _time(f.get("first_s")) for f in findings):
        return "measure.findings must be a list of {signature, first_s >= 0}"
    first = measure.get("first_finding_s")
    if first is not None and not _time(first):
        return "measure.first_finding_s must be null (nothing found) or a number >= 0"
    return None


def _result_problem(name: str, result, planned: set[str]) -> str | None:
    """Why ``result`` is not a counted cell's result, or None."""
    if result is None:
        return "result.json is unreadable"
    if name not in planned:
        return "not a planned cell of the protocol"
    if not isinstance(result, dict) or result.get("format") != CELL_FORMAT:
        return f"not a {CELL_FORMAT} object"
    trial, target, system = _CELL_NAME.fullmatch(name).groups()
    if (result.get("cell"), result.get("trial"), result.get("target"), result.get("system")) != (
            name, int(trial), target, system):
        return "cell, trial, target and system do not match the cell's name"
    if result.get("status") not in ("ok", "failed"):
        return f"status must be 'ok' or 'failed', got {result.get('status')!r}"
    if not isinstance(result.get("problems"), list):
        return "problems must be a list"
    return _measure_problem(result.get("measure")) if result["status"] == "ok" else None


def select(protocol: dict, results: dict, attempts: list[dict]) -> tuple[dict, dict[tuple[str, str], list[dict]]]:
    """The selection record and the counted results by ``(target, system)``, in trial order."""
    cells = planned_cells(protocol)
    planned = [cell_name(*cell) for cell in cells]
    known = set(planned)
    not_run = [name for name in planned if name not in results]
    invalid, failed, counted_names = [], [], []
    counted: dict[tuple[str, str], list[dict]] = {(t, s): [] for _, t, s in cells}
    for name in sorted(results, key=lambda n: (_sort_key(n), n)):
        result = results[name]
        problem = _result_problem(name, result, known)
        if problem:
            invalid.append({"cell": name, "reason": problem})
        elif result["status"] == "failed":
            failed.append({"cell": name, "problems": [str(p) for p in result["problems"]]})
        else:
            counted_names.append(name)
            counted[(result["target"], result["system"])].append(result)
    counts: dict[str, dict[str, int]] = {}
    for (target, system), found in sorted(counted.items()):
        counts.setdefault(target, {})[system] = len(found)
    record = {
        "format": SELECTION_FORMAT,
        "planned_cells": len(planned),
        "counted_cells": counted_names,
        "rules": [
            {"rule": "complete", "accept": "a planned cell counts only once it has a result (not run: listed)",
             "excluded": not_run},
            {"rule": "valid", "accept": f"a result is readable, of a planned cell and of the {CELL_FORMAT} format",
             "excluded": invalid},
            {"rule": "ok", "accept": "a failed cell (status failed) is excluded from the statistics",
             "excluded": failed},
            {"rule": "attempts", "accept": "cells run again (interrupted or failed) and why; kept for the record",
             "attempts": sorted(attempts, key=lambda a: (_sort_key(str(a.get("cell"))), str(a.get("cell")),
                                                         str(a.get("attempt"))))},
        ],
        "counts": counts,
    }
    return record, counted


def _sort_key(name: str) -> tuple:
    match = _CELL_NAME.fullmatch(name)
    return (int(match.group(1)), match.group(2), match.group(3)) if match else (math.inf, "", "")


def _pair(x: list, y: list, n_x: int, n_y: int, min_trials: int, names: tuple[str, str]) -> dict:
    """:func:`stats.versus` of ``x`` against ``y``, or ``{"refused": why}`` below ``min_trials`` each."""
    least = max(min_trials, 2)
    if n_x < least or n_y < least:
        return {"refused": f"needs >= {least} counted cells each: {names[0]} has {n_x}, {names[1]} has {n_y}"}
    return stats.versus(x, y)


def _findings(cells: list[dict]) -> dict:
    signatures: dict[str, dict] = {}
    for result in cells:
        for finding in result["measure"]["findings"]:
            entry = signatures.setdefault(finding["signature"], {"trials": set(), "first_s": finding["first_s"]})
            entry["trials"].add(result["trial"])
            entry["first_s"] = min(entry["first_s"], finding["first_s"])
    return {"distinct": len(signatures), "signatures": {
        sig: {"trials": len(entry["trials"]), "first_s": float(entry["first_s"])}
        for sig, entry in sorted(signatures.items())}}


def _target(protocol: dict, target: str, systems: list[str], counted: dict, refusals: list[dict]) -> dict:
    reference, min_trials, window_s = reference_of(protocol, target), protocol["min_trials"], float(protocol["window_s"])
    cells = {s: counted[(target, s)] for s in systems}
    finals = {s: [r["measure"]["final"] for r in cells[s]] for s in systems}
    firsts = {s: [r["measure"]["first_finding_s"] for r in cells[s]] for s in systems}
    summary = {s: {**stats.describe(finals[s]), "below_min_trials": len(cells[s]) < min_trials} for s in systems}
    units = sorted({r["measure"]["unit"] for s in systems for r in cells[s]})
    against, survival_against = {}, {}
    ref_n = len(cells.get(reference, []))
    for s in systems:
        if s == reference:
            continue
        if reference not in cells or ref_n == 0:
            why = (f"the reference {reference} has no counted cell on {target}" if reference in cells
                   else f"the reference {reference} does not run on {target}")
            against[s] = survival_against[s] = {"refused": why}
        else:
            names = (s, reference)
            against[s] = _pair(finals[s], finals[reference], len(cells[s]), ref_n, min_trials, names)
            if "refused" not in against[s]:
                against[s]["ratio_of_medians"] = stats.ratio(summary[s]["median"], summary[reference]["median"])
            survival_against[s] = _pair(effect.censored(firsts[s], window_s),
                                        effect.censored(firsts[reference], window_s),
                                        len(cells[s]), ref_n, min_trials, names)
        for claim, record in (("final coverage against the reference", against[s]),
                              ("time to first finding against the reference", survival_against[s])):
            if "refused" in record:
                refusals.append({"target": target, "system": s, "claim": claim, "reason": record["refused"]})
    return {
        "unit": ", ".join(units) if units else None,
        "reference": reference,
        "systems": summary,
        "against_reference": against,
        "curves": {s: stats.bands([r["measure"]["curve"] for r in cells[s]]) for s in systems},
        "ranks": stats.ranks({s: summary[s]["median"] for s in systems if summary[s]["n"]}),
        "findings": {s: _findings(cells[s]) for s in systems},
        "survival": {
            "window_s": window_s,
            "censoring": "a cell without a finding (or finding after the window) is censored at the window",
            "test": "two-sided Mann-Whitney U on censored times; A12 above 0.5: the system finds later",
            "systems": {s: stats.kaplan_meier(firsts[s], window_s) for s in systems},
            "against_reference": survival_against,
        },
    }


def _critical_difference(protocol: dict, targets: dict, refusals: list[dict]) -> dict:
    """Friedman and Nemenyi over the systems with at least ``min_trials`` counted cells on every target."""
    names = sorted(protocol["systems"])
    enough = [s for s in names if all(s in t["systems"] and t["systems"][s]["n"]
                                      and not t["systems"][s]["below_min_trials"] for t in targets.values())]
    table = {target: {s: t["systems"][s]["median"] for s in enough} for target, t in targets.items()}
    result = stats.friedman_nemenyi(table)
    left_out = [s for s in names if s not in enough]
    if left_out:
        result["left_out"] = {s: f"fewer than {protocol['min_trials']} counted cells on some target (or not run "
                                 "there)" for s in left_out}
    if "refused" in result:
        refusals.append({"target": None, "system": None, "claim": "critical difference", "reason": result["refused"]})
    return result


def analyze(protocol: dict, results: dict[str, dict | None], attempts: list[dict]) -> tuple[dict, dict]:
    """``(selection record, analysis record)`` of a study's complete cells (module docstring)."""
    selection, counted = select(protocol, results, attempts)
    refusals: list[dict] = []
    targets = {}
    for target in sorted(protocol["targets"]):
        systems = sorted(s for t, s in counted if t == target)
        targets[target] = _target(protocol, target, systems, counted, refusals)
    ranked = {}
    for t in targets.values():
        for s, rank in t["ranks"].items():
            ranked.setdefault(s, []).append(rank)
    analysis = {
        "format": FORMAT,
        "reference": protocol["reference"],
        "min_trials": protocol["min_trials"],
        "window_s": float(protocol["window_s"]),
        "targets": targets,
        "mean_rank": {s: sum(r) / len(r) for s, r in sorted(ranked.items())},
        "critical_difference": _critical_difference(protocol, targets, refusals),
        "refusals": refusals,
    }
    return selection, analysis



def _over_trials(summaries: list[dict]) -> dict:
    """The mechanism figures of one system's cells on one target, each described over the trials
    that have it (a single-kind cell has no ratio; a kind's figures where it ran)."""
    kinds = sorted({kind for summary in summaries for kind in summary["kinds"]})

    def over(values) -> dict:
        return stats.describe([v for v in values if v is not None])

    return {
        "cells": len(summaries),
        "hybrid_cells": sum(1 for summary in summaries if not summary["single_kind"]),
        "redundant_edge_ratio": over(summary["redundant_edge_ratio"] for summary in summaries),
        "handoff_median_s": {direction: over(summary["handoffs"].get(direction, {}).get("median_s")
                                             for summary in summaries) for direction in ("to_analysis", "to_fuzzers")},
        "kinds": {kind: {"family": next(s["kinds"][kind]["family"] for s in summaries if kind in s["kinds"]),
                         **{figure: over(s["kinds"][kind][figure] for s in summaries if kind in s["kinds"])
                            for figure in ("edges", "edges_first", "cpu_share", "edges_first_per_cpu_s")}}
                  for kind in kinds},
    }


def analyze_mechanism(protocol: dict, selection: dict, summaries: dict[str, dict | str]) -> dict:
    """The mechanism record of the counted campaign cells: ``summaries`` maps each to its
    ``evidence.mechanism`` summary, or to why there is none (module docstring)."""
    counted = set(selection["counted_cells"])
    grouped: dict[str, dict[str, list[dict]]] = {}
    cells, unreadable = {}, []
    for name in sorted(summaries, key=lambda n: (_sort_key(n), n)):
        if name not in counted:
            continue
        summary = summaries[name]
        if isinstance(summary, str):
            unreadable.append({"cell": name, "reason": summary})
            continue
        _, target, system = _CELL_NAME.fullmatch(name).groups()
        grouped.setdefault(target, {}).setdefault(system, []).append(summary)
        cells[name] = summary
    return {
        "format": MECHANISM_FORMAT,
        "systems": sorted(s for s, spec in protocol["systems"].items() if spec["kind"] == "campaign"),
        "targets": {target: {system: _over_trials(found) for system, found in sorted(systems.items())}
                    for target, systems in sorted(grouped.items())},
        "cells": cells,
        "unreadable": unreadable,
    }
