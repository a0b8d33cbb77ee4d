"""``symcc-ulfm analyze DIR``: the statistics of a scaling matrix (DESIGN.md §10).

Reads the matrix directory in the format documented in :mod:`.selection` (``protocol.json``,
``cells/<block>-<tier>/result.json`` and the ``COMPLETE`` marker written last) and writes, each
atomically (temp file, fsync, rename) as JSON with sorted keys:

``selection.json``
    every accept/exclude rule and exactly what it excluded.
``analysis/summary.json``
    per tier over the performance blocks: ``n`` and, per metric, the mean with normal 95% CI.
``analysis/paired_comparisons.json``
    each higher tier against the lowest, per metric: Student-t 95% CI of the per-block relative
    change (fractions).
``analysis/reliability.json``
    per tier over the reliability blocks: failed cells / trials with the Wilson 95% interval.
``analysis/models.json``
    USL on ``unique_per_s`` (effective throughput) and on ``generated_per_s``, coverage
    saturation on ``endpoint_edges`` (each fitted to one value per performance cell), the
    ceiling with the protocol's ``cores`` as physical limit, and every refusal.
``analysis/findings.json``
    per tier the time to first finding of each performance cell (censored at the window when
    nothing was found) and the share of cells that found something; every pair of tiers
    compared with the two-sided Mann-Whitney U test and Vargha-Delaney A12 (``stats.effect``).

A statistic that cannot be computed (one block, a zero baseline) is written with an ``error``
naming the reason instead of numbers; nothing is dropped silently.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..stats import effect
from ..stats.ceiling import recommend_ceiling
from ..stats.common import StatsInputError
from ..stats.intervals import mean_normal_ci, model_wilson, paired_relative_change
from ..stats.saturation import fit_saturation
from ..stats.usl import model_usl
from ..store.atomic import write_replace
from ..store.dirs import ensure_dir
from .selection import METRICS, Selection, is_failed, load_protocol, read_cells, select

ANALYSIS_DIR = "analysis"
SELECTION_FILE = "selection.json"
_FILE_MODE = 0o644
_DIR_MODE = 0o755


def _values(selection: Selection, tier: int, metric: str, blocks: list[int]) -> list[float]:
    return [float(selection.cells[(block, tier)][metric]) for block in blocks]


def _mean_ci(values: list[float]) -> dict:
    try:
        return mean_normal_ci(values)
    except StatsInputError as exc:
        return {"n": len(values), "mean": sum(values) / len(values) if values else None, "error": str(exc)}


def summarize(selection: Selection, tiers: list[int]) -> dict:
    blocks = selection.performance_blocks
    return {
        "blocks": blocks,
        "interval": "normal 95% CI of the mean, z=1.959964, sample sd (ddof=1)",
        "tiers": [
            {
                "tier": tier,
                "n": len(blocks),
                "metrics": {m: _mean_ci(_values(selection, tier, m, blocks)) for m in METRICS},
            }
            for tier in tiers
        ],
    }


def _relative_change(values: list[float], baselines: list[float]) -> dict:
    try:
        return paired_relative_change(values, baselines)
    except StatsInputError as exc:
        return {"n": len(values), "error": str(exc)}


def compare_paired(selection: Selection, tiers: list[int]) -> dict:
    blocks = selection.performance_blocks
    base = tiers[0]
    return {
        "baseline_tier": base,
        "blocks": blocks,
        "interval": "Student-t 95% CI of the mean per-block relative change (x - base) / base",
        "comparisons": [
            {
                "tier": tier,
                "metrics": {
                    m: _relative_change(
                        _values(selection, tier, m, blocks), _values(selection, base, m, blocks)
                    )
                    for m in METRICS
                },
            }
            for tier in tiers[1:]
        ],
    }


def _failure_rate(failures: int, trials: int) -> dict:
    try:
        return {**model_wilson(failures, trials), "interval": "Wilson 95%"}
    except StatsInputError as exc:
        return {"failures": failures, "trials": trials, "error": str(exc)}


def assess_reliability(selection: Selection, tiers: list[int]) -> dict:
    blocks = selection.reliability_blocks
    rows = []
    for tier in tiers:
        results = [selection.cells[(block, tier)] for block in blocks]
        failures = sum(1 for result in results if is_failed(result))
        rows.append({"tier": tier, **_failure_rate(failures, len(results))})
    return {"blocks": blocks, "tiers": rows}


def fit_models(selection: Selection, tiers: list[int], cores: int) -> dict:
    blocks = selection.performance_blocks
    workers = [tier for tier in tiers for _ in blocks]

    def observations(metric: str) -> list[float]:
        return [value for tier in tiers for value in _values(selection, tier, metric, blocks)]

    models = {
        "usl_unique_per_s": model_usl(workers, observations("unique_per_s")),
        "usl_generated_per_s": model_usl(workers, observations("generated_per_s")),
        "coverage_endpoint_edges": fit_saturation(workers, observations("endpoint_edges")),
    }
    ceiling = recommend_ceiling(models["usl_unique_per_s"], models["coverage_endpoint_edges"], cores)
    refusals = [f"{name}: {fit['refused']}" for name, fit in models.items() if fit["refused"]]
    refusals += [f"ceiling: {reason}" for reason in ceiling["refusals"]]
    return {
        **models,
        "ceiling": ceiling,
        "observations": f"one value per cell of the {len(blocks)} performance blocks",
        "refusals": refusals,
    }


def compare_findings(selection: Selection, tiers: list[int], window_s: float) -> dict:
    blocks = selection.performance_blocks
    times = {tier: [selection.cells[(block, tier)].get("first_finding_s") for block in blocks] for tier in tiers}
    rows = [{"tier": tier, "first_finding_s": times[tier], "found": sum(t is not None for t in times[tier]),
             "n": len(blocks)} for tier in tiers]
    pairs = []
    for i, x in enumerate(tiers):
        for y in tiers[i + 1:]:
            try:
                stats = effect.compare(effect.censored(times[x], window_s), effect.censored(times[y], window_s))
            except StatsInputError as exc:
                stats = {"error": str(exc)}
            pairs.append({"x": x, "y": y, **stats})
    return {"blocks": blocks, "window_s": window_s, "censoring": "no finding in the window counts as the window",
            "test": "two-sided Mann-Whitney U; A12 = P(x later than y) + ties/2 (below 0.5: x finds sooner)",
            "tiers": rows, "pairs": pairs}


def _write_json(path: Path, value: dict) -> None:
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_replace(path, text.encode("utf-8"), _FILE_MODE)


OUTPUTS = ("summary", "paired_comparisons", "reliability", "models", "findings")


def compute(protocol: dict, selection: Selection) -> dict:
    """Every analysis output (``analysis/<name>.json``) of the selected cells, by name."""
    tiers = sorted(protocol["tiers"])
    return {
        "summary": summarize(selection, tiers),
        "paired_comparisons": compare_paired(selection, tiers),
        "reliability": assess_reliability(selection, tiers),
        "models": fit_models(selection, tiers, protocol["cores"]),
        "findings": compare_findings(selection, tiers, float(protocol["window_s"])),
    }


def analyze(matrix_dir: Path) -> dict:
    """Select, analyse and write every output file; returns their contents by name."""
    matrix_dir = Path(matrix_dir)
    protocol = load_protocol(matrix_dir)
    selection = select(protocol, read_cells(matrix_dir))
    outputs = compute(protocol, selection)
    _write_json(matrix_dir / SELECTION_FILE, selection.record)
    analysis_dir = ensure_dir(matrix_dir / ANALYSIS_DIR, _DIR_MODE)
    for name, value in outputs.items():
        _write_json(analysis_dir / f"{name}.json", value)
    return {"selection": selection.record, **outputs}
