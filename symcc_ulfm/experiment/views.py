"""What the scale notebook shows, computed from a loaded study (:func:`.study.load_study`).

:func:`chart_rows` gives the rows :mod:`symcc_ulfm.plots` draws (the plots compute nothing):
per-cell points, tier means with their 95% CIs, paired relative changes with their CIs, and the
fitted USL / saturation curves sampled **only inside the measured range** (a curve is never
drawn where there is no data). :func:`markdown_tables` gives the notebook's tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..stats.saturation import saturation
from ..stats.usl import usl
from .selection import METRICS

USL_MODELS = {"generated_per_s": "usl_generated_per_s", "unique_per_s": "usl_unique_per_s"}
COVERAGE_MODEL = "coverage_endpoint_edges"
_CURVE_POINTS = 64


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _grid(fit: dict) -> np.ndarray:
    low, high = fit["measured_range"]
    return np.geomspace(low, high, _CURVE_POINTS)  # tiers are >= 1; dense where a curve bends most


def _model_label(name: str, fit: dict) -> str:
    if fit.get("refused"):
        return f"{name}: refused ({fit['refused']})"
    r2 = "n/a" if fit["r2"] is None else f"{fit['r2']:.3f}"
    if fit["model"] == "usl":
        label = f"{name}: USL sigma={fit['sigma']:.3g} kappa={fit['kappa']:.3g} R2={r2}"
    else:
        label = f"{name}: saturation G_inf={fit['g_inf']:.3g} rho={fit['rho']:.3g} R2={r2}"
    label += f" threshold={fit['threshold']}"
    return label + (" (extrapolated: not used)" if fit.get("extrapolated") else "")


def _curves(models: dict) -> list[dict]:
    rows = []
    for metric, name in USL_MODELS.items():
        fit = models[name]
        if not fit.get("refused"):
            grid = _grid(fit)
            values = usl(grid, fit["gamma"], fit["sigma"], fit["kappa"])
            rows += [{"metric": metric, "n": float(n), "fitted": float(v)} for n, v in zip(grid, values, strict=True)]
    fit = models[COVERAGE_MODEL]
    if not fit.get("refused"):
        grid = _grid(fit)
        values = saturation(grid, fit["e_b"], fit["n_b"], fit["g_inf"], fit["rho"])
        rows += [{"metric": "endpoint_edges", "n": float(n), "fitted": float(v)} for n, v in zip(grid, values, strict=True)]
    return rows


def chart_rows(study: dict) -> dict[str, Any]:
    """Rows for :func:`symcc_ulfm.plots.scale_charts`."""
    counted = set(study["selection"]["counted_cells"])
    performance = set(study["selection"]["performance_blocks"])
    points = []
    for name, result in sorted(study["results"].items()):
        if name not in counted:
            continue
        used = result["block"] in performance
        for metric in METRICS:
            if _number(result.get(metric)):
                points.append({"metric": metric, "tier": result["tier"], "block": result["block"],
                               "value": result[metric], "used": "performance" if used else "excluded"})
    means = [
        {"metric": metric, "tier": row["tier"], "mean": stat["mean"], "low": stat["low"], "high": stat["high"]}
        for row in study["summary"]["tiers"]
        for metric, stat in row["metrics"].items()
        if all(_number(stat.get(k)) for k in ("mean", "low", "high"))
    ]
    changes = [
        {"metric": metric, "tier": row["tier"], "mean": 100 * stat["mean"], "low": 100 * stat["low"],
         "high": 100 * stat["high"]}
        for row in study["paired_comparisons"]["comparisons"]
        for metric, stat in row["metrics"].items()
        if all(_number(stat.get(k)) for k in ("mean", "low", "high"))
    ]
    models = study["models"]
    labels = {metric: _model_label(name, models[name]) for metric, name in USL_MODELS.items()}
    labels["endpoint_edges"] = _model_label(COVERAGE_MODEL, models[COVERAGE_MODEL])
    return {
        "points": points,
        "means": means,
        "changes": changes,
        "curves": _curves(models),
        "labels": labels,
        "baseline_tier": study["paired_comparisons"]["baseline_tier"],
        "tiers": sorted(study["protocol"]["tiers"]),
    }


def _fmt(value: Any, percent: bool = False) -> str:
    if not _number(value):
        return "–"
    return f"{100 * value:+.2f}%" if percent else f"{value:.4g}"


def _interval(stat: dict, percent: bool = False) -> str:
    if stat.get("error"):
        return f"{_fmt(stat.get('mean'), percent)} ({stat['error']})"
    return f"{_fmt(stat['mean'], percent)} [{_fmt(stat['low'], percent)}, {_fmt(stat['high'], percent)}]"


def markdown_tables(study: dict) -> dict[str, str]:
    """``summary``, ``paired``, ``reliability``, ``models``, ``selection`` and ``findings`` (time to
    first finding per tier, censored at the window, and the tier comparisons) as Markdown."""
    head = "| workers | n | " + " | ".join(METRICS) + " |\n|" + "---:|" * (len(METRICS) + 2)
    summary = head + "".join(
        f"\n| {row['tier']} | {row['n']} | " + " | ".join(_interval(row["metrics"][m]) for m in METRICS) + " |"
        for row in study["summary"]["tiers"])
    base = study["paired_comparisons"]["baseline_tier"]
    paired = "| comparison | " + " | ".join(METRICS) + " |\n|---|" + "---:|" * len(METRICS) + "".join(
        f"\n| {row['tier']} vs {base} | " + " | ".join(_interval(row["metrics"][m], percent=True) for m in METRICS)
        + " |" for row in study["paired_comparisons"]["comparisons"])
    reliability = "| workers | failed / trials | Wilson 95% |\n|---:|---:|---:|" + "".join(
        f"\n| {row['tier']} | {row.get('failures')} / {row.get('trials')} | "
        + (row["error"] if row.get("error") else f"[{100 * row['low']:.2f}%, {100 * row['high']:.2f}%]") + " |"
        for row in study["reliability"]["tiers"])
    models = study["models"]
    ceiling = models["ceiling"]
    lines = [f"- {_model_label(name, models[name])}" + (f" — {models[name]['detail']}" if models[name].get("detail")
                                                         else "")
             for name in (*USL_MODELS.values(), COVERAGE_MODEL)]
    lines.append(f"- recommended ceiling: **{ceiling['ceiling']}** workers, over {', '.join(ceiling['used']) or 'nothing'}"
                 + (" (partial)" if ceiling["partial"] else ""))
    lines += [f"- refused: `{reason}`" for reason in models["refusals"]]
    rules = study["selection"]["rules"]
    selection = "| rule | excluded |\n|---|---|" + "".join(
        f"\n| {rule['rule']} | {rule.get('excluded', rule.get('excluded_blocks')) or '–'} |" for rule in rules)
    found = study["findings"]
    findings = "| workers | found / cells | first finding (s) per cell |\n|---:|---:|---|" + "".join(
        f"\n| {row['tier']} | {row['found']} / {row['n']} | "
        + ", ".join("–" if t is None else f"{t:.1f}" for t in row["first_finding_s"]) + " |" for row in found["tiers"])
    findings += "\n\n| tiers | Mann-Whitney U | p | A12 | effect |\n|---|---:|---:|---:|---|" + "".join(
        f"\n| {p['x']} vs {p['y']} | " + (f"– | – | – | {p['error']}" if p.get("error") else
                                           f"{p['u']:.1f} | {p['p_value']:.3g} | {p['a12']:.2f} | {p['magnitude']}")
        + " |" for p in found["pairs"])
    return {"summary": summary, "paired": paired, "reliability": reliability, "models": "\n".join(lines),
            "selection": selection, "findings": findings}
