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
