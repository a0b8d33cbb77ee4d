"""What the comparison report shows: a study directory loaded, its tables and the rows its figures draw.

:func:`load_study` reads ``protocol.json``, the complete cells' ``result.json`` as the runner
reads them, ``selection.json`` and ``analysis/compare.json``. :func:`markdown_tables` and :func:`chart_rows` compute nothing
new: they lay out the analysis record (:mod:`.analyze`) for the notebook and for
:func:`symcc_ulfm.plots.compare_charts`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..experiment.jsonfile import read_json
from . import design
from .cell_run import PROTOCOL_FILE
from .study_files import ANALYSIS_DIR, ANALYSIS_FILE, MECHANISM_FILE, SELECTION_FILE, complete_results

FIGURES_DIR = "figures"


def load_study(path: str | Path) -> dict[str, Any]:
    """``{protocol, plan, results, selection, analysis, mechanism}`` of a study directory: the results
    of its complete cells as the runner reads them (:func:`.study_files.complete_results`); ``mechanism``
    is None for a study made before ``analysis/mechanism.json`` was recorded."""
    root = Path(path)
    protocol = design.validate(read_json(root / PROTOCOL_FILE))
    plan = design.plan(protocol)
    mechanism = root / ANALYSIS_DIR / MECHANISM_FILE
    return {"protocol": protocol, "plan": plan, "results": complete_results(root, plan),
            "selection": read_json(root / SELECTION_FILE), "analysis": read_json(root / ANALYSIS_DIR / ANALYSIS_FILE),
            "mechanism": read_json(mechanism) if mechanism.is_file() else None}


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def _pair_cells(pair: dict | None) -> list[str]:
    """A12, p and the ratio of medians, or the refusal."""
    if pair is None:
        return ["(reference)", "", ""]
    if "refused" in pair:
        return [f"refused: {pair['refused']}", "", ""]
    note = f" ({pair['note']})" if "note" in pair else ""
    return [f"{pair['a12']:.3f} {pair['magnitude']}{note}", f"{pair['p_value']:.3g}",
            _num(pair.get("ratio_of_medians"), 3)]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows])


def target_table(analysis: dict, target: str) -> str:
    """Final coverage per system: n, median, IQR, range, rank and the comparison against the reference."""
    record = analysis["targets"][target]
    rows = []
    for system, summary in record["systems"].items():
        mark = " *" if summary["below_min_trials"] else ""
        rows.append([system, f"{summary['n']}{mark}", _num(summary["median"]),
                     f"{_num(summary['q1'])} – {_num(summary['q3'])}", f"{_num(summary['min'])} – {_num(summary['max'])}",
                     _num(record["ranks"].get(system), 3), *_pair_cells(record["against_reference"].get(system))])
    header = ["system", "n", f"median {record['unit'] or ''}".rstrip(), "IQR", "range", "rank",
              f"A12 vs {record['reference']}", "p (two-sided U)", "ratio of medians"]
    return _table(header, rows) + f"\n\n\\* fewer than {analysis['min_trials']} counted trials: no claim"


def survival_table(analysis: dict) -> str:
    rows = []
    for target, record in analysis["targets"].items():
        survival = record["survival"]
        for system, km in survival["systems"].items():
            rows.append([target, system, f"{km['events']}/{km['n']}", _num(km["median_s"]), record["reference"],
                         *_pair_cells(survival["against_reference"].get(system))[:2]])
    return _table(["target", "system", "found", "median time to first finding (s)", "reference",
                   "A12 vs the reference (> 0.5: later)", "p (two-sided U)"], rows)


def findings_table(analysis: dict) -> str:
    rows = [[target, system, found["distinct"],
             ", ".join(f"`{sig}` ({entry['trials']} trials)" for sig, entry in found["signatures"].items())]
            for target, record in analysis["targets"].items() for system, found in record["findings"].items()]
    return _table(["target", "system", "distinct signatures", "signature (trials that found it)"], rows)


def ranks_table(analysis: dict) -> str:
    cd = analysis["critical_difference"]
    rows = [[system, f"{rank:.3g}"] for system, rank in sorted(analysis["mean_rank"].items(), key=lambda kv: kv[1])]
    if "refused" in cd:
        verdict = f"Friedman test and critical difference refused: {cd['refused']}"
    else:
        verdict = (f"Friedman chi2 = {cd['statistic']:.3g}, p = {cd['p_value']:.3g} over {cd['n']} targets; "
                   f"Nemenyi critical difference at alpha {cd['alpha']}: {cd['critical_difference']:.3g}")
    return _table(["system", "mean rank (1 = best)"], rows) + f"\n\n{verdict}"


def selection_table(selection: dict) -> str:
    rows = []
    for rule in selection["rules"]:
        listed = rule.get("excluded", rule.get("attempts", []))
        names = ", ".join(entry if isinstance(entry, str) else str(entry.get("cell")) for entry in listed)
        rows.append([rule["rule"], rule["accept"], len(listed), names or "–"])
    return (_table(["rule", "accept", "listed", "cells"], rows)
            + f"\n\n{len(selection['counted_cells'])} of {selection['planned_cells']} planned cells counted")


def refusals_table(analysis: dict) -> str:
    rows = [[r["target"] or "all", r["system"] or "all", r["claim"], r["reason"]] for r in analysis["refusals"]]
    return _table(["target", "system", "claim", "refused because"], rows) if rows else "no refusals"


def markdown_tables(study: dict) -> dict[str, str]:
    """The report's tables by name (``target:<name>`` one per target)."""
    analysis = study["analysis"]
    return {**{f"target:{t}": target_table(analysis, t) for t in analysis["targets"]},
            "survival": survival_table(analysis), "findings": findings_table(analysis),
            "ranks": ranks_table(analysis), "selection": selection_table(study["selection"]),
            "refusals": refusals_table(analysis)}


def _median_iqr(described: dict, digits: int = 3) -> str:
    if not described["n"]:
        return "–"
    return f"{_num(described['median'], digits)} ({_num(described['q1'], digits)} – {_num(described['q3'], digits)})"


def mechanism_table(record: dict) -> str:
    """Per target and campaign system, over its trials: median (IQR) of the redundant-edge ratio, of
    the median hand-off time each way, and of each kind's CPU share and edges first per CPU second."""
    rows = []
    for target, systems in record["targets"].items():
        for system, figures in systems.items():
            kinds = figures["kinds"]
            rows.append([target, system, f"{figures['hybrid_cells']}/{figures['cells']}",
                         _median_iqr(figures["redundant_edge_ratio"]),
                         _median_iqr(figures["handoff_median_s"]["to_analysis"]),
                         _median_iqr(figures["handoff_median_s"]["to_fuzzers"]),
                         "; ".join(f"{kind} ({row['family']}) {_median_iqr(row['cpu_share'])}"
                                   for kind, row in kinds.items()),
                         "; ".join(f"{kind} {_median_iqr(row['edges_first_per_cpu_s'])}" for kind, row in kinds.items())])
    header = ["target", "system", "hybrid / cells", "redundant-edge ratio", "hand-off to analysis (s)",
              "hand-off to fuzzers (s)", "CPU share per kind", "edges first per CPU s"]
    unreadable = "".join(f"\n\nnot summarised: {u['cell']}: {u['reason']}" for u in record["unreadable"])
    note = ("\n\nmedian (q1 – q3) over the trials; the hand-off columns are each trial's median. Definitions and "
            "limits: docs/worker-kinds.md, \"What each kind adds\"")
    return (_table(header, rows) if rows else "no counted campaign cell") + note + unreadable


def chart_rows(study: dict) -> dict[str, list[dict]]:
    """Rows for :func:`symcc_ulfm.plots.compare_charts`: coverage bands, counted finals, survival, ranks."""
    analysis, counted = study["analysis"], set(study["selection"]["counted_cells"])
    curves = [{"target": t, "system": s, "t": row[0], "median": row[1], "q1": row[2], "q3": row[3]}
              for t, record in analysis["targets"].items() for s, band in record["curves"].items() for row in band]
    finals = [{"target": r["target"], "system": r["system"], "trial": r["trial"], "final": r["measure"]["final"]}
              for name, r in sorted(study["results"].items()) if name in counted]
    survival = [{"target": t, "system": s, "t": point[0], "survival": point[1]}
                for t, record in analysis["targets"].items()
                for s, km in record["survival"]["systems"].items() for point in km["curve"]]
    ranks = [{"system": s, "mean_rank": r} for s, r in analysis["mean_rank"].items()]
    return {"curves": curves, "finals": finals, "survival": survival, "ranks": ranks}
