"""Altair figures of one run. Draws only: the rows come from :func:`symcc_ulfm.evidence.timeline.timeline`.

Saved as SVG and PNG with vl-convert (offline). In notebooks use the ``svg`` or ``png``
renderer: the default mimetype renderer broke papermill's output validation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt

ROLE_COLORS = alt.Scale(domain=["master", "worker", "spare"], range=["#1f77b4", "#7fb3d5", "#d5d8dc"])
WIDTH = 640


def membership_chart(data: dict[str, list[dict[str, Any]]]) -> alt.LayerChart:
    """Who held which role in which generation; red crosses are failures, green triangles promotions."""
    y = alt.Y("rank:O", title="stable rank")
    spans = alt.Chart(alt.Data(values=data["membership"])).mark_bar(height=14).encode(
        x=alt.X("start:Q", title="seconds since generation 0"),
        x2="end:Q",
        y=y,
        color=alt.Color("role:N", scale=ROLE_COLORS),
        tooltip=["rank:O", "generation:O", "role:N", "start:Q", "end:Q"],
    )
    layers = [spans]
    if data["failures"]:
        layers.append(alt.Chart(alt.Data(values=data["failures"])).mark_point(
            shape="cross", size=160, color="#c0392b", filled=True).encode(
            x="t:Q", y=y, tooltip=["spec:N", "phase:N", "t:Q"]))
    if data["promotions"]:
        layers.append(alt.Chart(alt.Data(values=data["promotions"])).mark_point(
            shape="triangle-up", size=120, color="#27ae60", filled=True).encode(
            x="t:Q", y=y, tooltip=["rank:O", "generation:O", "t:Q"]))
    return alt.layer(*layers).properties(width=WIDTH, title="membership and generations")


def throughput_chart(data: dict[str, list[dict[str, Any]]]) -> alt.VConcatChart:
    """Inputs analyzed per second, and cumulative novel (and unique) candidates over time."""
    rows = alt.Data(values=data["throughput"])
    x = alt.X("t:Q", title="seconds since generation 0")
    rate = alt.Chart(rows).transform_fold(["analyzed_per_s", "generated_per_s"], as_=["series", "per_s"]).mark_line(
        point=True).encode(x=x, y=alt.Y("per_s:Q", title="per second"), color="series:N").properties(
        width=WIDTH, height=160, title="throughput")
    total = alt.Chart(rows).transform_fold(["novel_total", "unique_total"], as_=["series", "count"]).mark_line().encode(
        x=x, y=alt.Y("count:Q", title="cumulative"), color="series:N").properties(
        width=WIDTH, height=160, title="novel coverage")
    return alt.vconcat(rate, total).resolve_scale(color="independent")


def master_work_chart(data: dict[str, list[dict[str, Any]]]) -> alt.Chart:
    """Inputs each master committed, split by generation."""
    return alt.Chart(alt.Data(values=data["masters"])).mark_bar().encode(
        x=alt.X("master:O", title="master (stable rank)"),
        y=alt.Y("analyzed:Q", title="inputs analyzed"),
        color=alt.Color("generation:O"),
        tooltip=["master:O", "generation:O", "analyzed:Q", "generated:Q", "unique:Q", "novel:Q"],
    ).properties(width=320, title="work per master")


def status_chart(history: list[dict[str, Any]]) -> alt.Chart:
    """Corpus size and coverage ids over campaign seconds, from ``tools.status.Tracker.history``
    (the notebook's live view redraws it while the campaign runs)."""
    rows = [{"t": h["elapsed_s"], "corpus": h["corpus"], "coverage ids": h["coverage_ids"]}
            for h in history if h["elapsed_s"] > 0]
    return alt.Chart(alt.Data(values=rows)).transform_fold(["corpus", "coverage ids"], as_=["series", "count"]).mark_line(
        point=True).encode(x=alt.X("t:Q", title="seconds since generation 0"), y=alt.Y("count:Q", title="count"),
                           color="series:N").properties(width=WIDTH // 2, height=120, title="campaign so far")


def all_charts(data: dict[str, list[dict[str, Any]]]) -> dict[str, alt.TopLevelMixin]:
    return {"membership": membership_chart(data), "throughput": throughput_chart(data),
            "masters": master_work_chart(data)}


def save_chart(chart: alt.TopLevelMixin, directory: str | Path, name: str) -> list[Path]:
    """Write ``name.svg`` and ``name.png`` into ``directory``; returns both paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.svg", directory / f"{name}.png"]
    for path in paths:
        chart.save(str(path))
    return paths


# -- scaling study: rows from symcc_ulfm.experiment.views.chart_rows --------------------------------------

SCALE_WIDTH = 260
_USED_COLORS = alt.Scale(domain=["performance", "excluded"], range=["#7f8c8d", "#e67e22"])


def _only(rows: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    return [row for row in rows if row["metric"] == metric]


def _tier_panel(rows: dict[str, Any], metric: str, title: str, y_format: str | None = None) -> alt.LayerChart:
    """Per-cell points, tier means with 95% CI bars and, where fitted, the model curve in the measured range."""
    tier_scale = alt.Scale(domain=[0, rows["tiers"][-1] * 1.05], nice=False)
    x = alt.X("tier:Q", scale=tier_scale, title="workers", axis=alt.Axis(values=rows["tiers"]))
    y_axis = alt.Axis(format=y_format) if y_format else alt.Axis()
    points = alt.Chart(alt.Data(values=_only(rows["points"], metric))).mark_circle(size=40, opacity=0.6).encode(
        x=x, y=alt.Y("value:Q", title=metric, axis=y_axis, scale=alt.Scale(zero=False)),
        color=alt.Color("used:N", scale=_USED_COLORS, title="cell"), tooltip=["tier:Q", "block:O", "value:Q", "used:N"])
    means = alt.Data(values=_only(rows["means"], metric))
    bars = alt.Chart(means).mark_rule(strokeWidth=2, color="#1f77b4").encode(x=x, y="low:Q", y2="high:Q")
    centres = alt.Chart(means).mark_tick(thickness=2, size=14, color="#1f77b4").encode(
        x=x, y="mean:Q", tooltip=["tier:Q", "mean:Q", "low:Q", "high:Q"])
    layers = [points, bars, centres]
    curve = _only(rows["curves"], metric)
    if curve:
        layers.append(alt.Chart(alt.Data(values=curve)).mark_line(color="#c0392b").encode(
            x=alt.X("n:Q", scale=tier_scale), y="fitted:Q"))
    return alt.layer(*layers).properties(width=SCALE_WIDTH, height=200, title=alt.TitleParams(title, fontSize=11))


def scale_throughput_chart(rows: dict[str, Any]) -> alt.HConcatChart:
    """Throughput per tier (mean and normal 95% CI over the performance blocks) with the fitted USL curve."""
    panels = [_tier_panel(rows, metric, rows["labels"].get(metric, metric))
              for metric in ("generated_per_s", "unique_per_s", "novel_per_s")]
    return alt.hconcat(*panels).properties(title="throughput per tier")


def scale_retention_chart(rows: dict[str, Any]) -> alt.LayerChart:
    """Retention (unique / generated) per tier."""
    return _tier_panel(rows, "retention", "retention = unique / generated", y_format="%")


def scale_coverage_chart(rows: dict[str, Any]) -> alt.LayerChart:
    """Endpoint edges per tier with the saturation curve where it was fitted (its refusal otherwise)."""
    return _tier_panel(rows, "endpoint_edges", rows["labels"].get("endpoint_edges", "endpoint edges"))


def scale_paired_chart(rows: dict[str, Any]) -> alt.FacetChart:
    """Paired relative change of every metric against the lowest tier: Student-t 95% CI, in percent."""
    data = alt.Data(values=rows["changes"])
    y = alt.Y("metric:N", title=None)
    rules = alt.Chart(data).mark_rule(strokeWidth=2).encode(x=alt.X("low:Q", title="change vs "
                                                             f"{rows['baseline_tier']} workers (%)"), x2="high:Q", y=y)
    centres = alt.Chart(data).mark_point(filled=True, size=60).encode(
        x="mean:Q", y=y, color=alt.Color("metric:N", legend=None), tooltip=["tier:Q", "metric:N", "mean:Q", "low:Q",
                                                                            "high:Q"])
    zero = alt.Chart(data).mark_rule(color="#7f8c8d", strokeDash=[4, 4]).encode(x=alt.datum(0))
    return alt.layer(rules, centres, zero).properties(width=WIDTH - 120, height=110).facet(
        row=alt.Row("tier:O", title="workers")).properties(title="paired change against the lowest tier")


def scale_charts(rows: dict[str, Any]) -> dict[str, alt.TopLevelMixin]:
    return {"scale_throughput": scale_throughput_chart(rows), "scale_paired": scale_paired_chart(rows),
            "scale_retention": scale_retention_chart(rows), "scale_coverage": scale_coverage_chart(rows)}


# -- comparison study: rows from symcc_ulfm.compare.tables.chart_rows -------------------------------------

COMPARE_WIDTH = 420


def compare_coverage_chart(rows: dict[str, Any]) -> alt.FacetChart:
    """Coverage over time per target: each system's median across trials, its q1-q3 band shaded."""
    base = alt.Chart(alt.Data(values=rows["curves"])).encode(
        x=alt.X("t:Q", title="seconds into the window"), color=alt.Color("system:N"))
    band = base.mark_area(opacity=0.2, interpolate="step-after").encode(y=alt.Y("q1:Q", title="coverage"), y2="q3:Q")
    line = base.mark_line(interpolate="step-after").encode(y="median:Q", tooltip=["system:N", "t:Q", "median:Q",
                                                                                   "q1:Q", "q3:Q"])
    return alt.layer(band, line).properties(width=COMPARE_WIDTH, height=160).facet(
        row=alt.Row("target:N")).resolve_scale(y="independent").properties(
        title="coverage over time: median and q1-q3 across trials")


def compare_final_chart(rows: dict[str, Any]) -> alt.FacetChart:
    """Final coverage of every counted trial (points) over each system's box plot, per target."""
    base = alt.Chart(alt.Data(values=rows["finals"])).encode(
        y=alt.Y("system:N", title=None), x=alt.X("final:Q", title="final coverage", scale=alt.Scale(zero=False)))
    box = base.mark_boxplot(extent="min-max", opacity=0.4).encode(color=alt.Color("system:N", legend=None))
    points = base.mark_circle(size=40, color="#2c3e50").encode(tooltip=["system:N", "trial:O", "final:Q"])
    return alt.layer(box, points).properties(width=COMPARE_WIDTH, height=100).facet(
        row=alt.Row("target:N")).resolve_scale(x="independent").properties(title="final coverage per trial")


def compare_survival_chart(rows: dict[str, Any]) -> alt.FacetChart:
    """Kaplan-Meier curves of "no finding yet", censored at the window, per target."""
    return alt.Chart(alt.Data(values=rows["survival"])).mark_line(interpolate="step-after").encode(
        x=alt.X("t:Q", title="seconds into the window"), y=alt.Y("survival:Q", title="P(no finding yet)",
                                                                 scale=alt.Scale(domain=[0, 1])),
        color="system:N", tooltip=["system:N", "t:Q", "survival:Q"]).properties(
        width=COMPARE_WIDTH, height=120).facet(row=alt.Row("target:N")).properties(
        title="time to first finding (Kaplan-Meier)")


def compare_ranks_chart(rows: dict[str, Any]) -> alt.Chart:
    """Mean rank of each system across targets (1 = best)."""
    return alt.Chart(alt.Data(values=rows["ranks"])).mark_bar().encode(
        x=alt.X("mean_rank:Q", title="mean rank across targets (1 = best)"),
        y=alt.Y("system:N", sort="x", title=None), tooltip=["system:N", "mean_rank:Q"]).properties(
        width=COMPARE_WIDTH, title="mean rank")


def compare_charts(rows: dict[str, Any]) -> dict[str, alt.TopLevelMixin]:
    return {"compare-coverage": compare_coverage_chart(rows), "compare-final": compare_final_chart(rows),
            "compare-survival": compare_survival_chart(rows), "compare-ranks": compare_ranks_chart(rows)}
