"""How a campaign's status (a :class:`.status.Tracker` snapshot) is shown: one block for
``symcc-ulfm status``, one line for ``launch`` on a terminal, an HTML table for a notebook, and
the notebook's live view (:class:`LiveView`)."""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from .stats_files import StatsWriter, bitmap_cvg
from .status import Tracker


def _left(snapshot: dict) -> str:
    left = snapshot["deadline_left_s"]
    return "-" if left is None else f"{left:.0f} s"


def _state_words(snapshot: dict) -> str:
    phase = snapshot["phase"]
    if phase == "starting":
        return f"starting: {snapshot['ranks_started']} of {snapshot['ranks']} ranks up"
    if phase == "finished":
        return f"finished: {snapshot['outcome']}"
    if phase == "stopped":
        return "stopped before it finished (resumable with launch --resume)"
    return phase


def render_line(snapshot: dict) -> str:
    """One line: what a terminal shows while ``launch`` runs."""
    if snapshot["phase"] in ("starting", "not started"):
        return f"[{snapshot['elapsed_s']:5.1f} s] {_state_words(snapshot)}"
    t, f, r = snapshot["totals"], snapshot["findings"], snapshot["rates"]
    rate = r.get("analyzed_per_s_now", r["analyzed_per_s"])
    execs = r.get("executions_per_s_now", r["executions_per_s"])
    return (f"[{snapshot['elapsed_s']:5.1f} s] gen {snapshot['generation']}  analyzed {t['analyzed']} ({rate:.1f}/s)  "
            f"execs {t['executions']} ({execs:.0f}/s)  corpus {t['corpus']}  novel {t['novel']}  edges {t['edges']}  "
            f"findings {f['unique']}  "
            f"left {_left(snapshot)}  {_state_words(snapshot) if snapshot['phase'] != 'running' else ''}").rstrip()


def render_block(snapshot: dict) -> str:
    """The human block of ``symcc-ulfm status``."""
    t, f, r, m = snapshot["totals"], snapshot["findings"], snapshot["rates"], snapshot["members"]
    lines = [f"campaign {snapshot['state_dir']}: {_state_words(snapshot)}",
             f"  executor    {snapshot['executor']}" + (f" on {snapshot['target']}" if snapshot["target"] else ""),
             f"  time        {snapshot['elapsed_s']:.1f} s of {snapshot['deadline_s']:g} s (left {_left(snapshot)})"]
    if snapshot["generation"] is not None:
        kinds = ", ".join(f"{k} {len(v)}" for k, v in m["workers_by_kind"].items()) or "-"
        lines += [f"  generation  {snapshot['generation']} (epoch {snapshot['epoch']})",
                  f"  members     masters {m['masters']}  workers {m['workers']} ({kinds})  spares {m['spares']}"
                  + (f"  failed {m['failed']}" if m["failed"] else "")]
        if snapshot["running"]:
            lines.append(f"  alive       {len(snapshot['ranks_alive'])} of {snapshot['ranks']} ranks beat")
    now = "" if "analyzed_per_s_now" not in r else f", {r['analyzed_per_s_now']:.1f}/s now"
    execs_now = "" if "executions_per_s_now" not in r else f", {r['executions_per_s_now']:.1f}/s now"
    by_kind = ", ".join(f"{kind} {n}" for kind, n in t["executions_by_kind"].items())
    lines += [f"  analyzed    {t['analyzed']} inputs ({r['analyzed_per_s']:.1f}/s overall{now}); {t['leased']} leases "
              + ("in flight" if snapshot["running"] else "open (a resume reclaims them)")
              + (f"; {t['slices']} fuzzer slices" if t["slices"] else ""),
              f"  executions  {t['executions']} ({r['executions_per_s']:.1f}/s overall{execs_now})"
              + (f": {by_kind}" if by_kind else ""),
              f"  corpus      {t['corpus']} inputs; {t['unique']} new, {t['novel']} novel; "
              f"{t['coverage_ids']} coverage ids, {t['edges']} edges"
              + (f" ({bitmap_cvg(t['edges'], t['map_size'])} of a map of {t['map_size']})" if t["map_size"] else "")
              + (f"; endpoint edges {snapshot['endpoint_edges']}" if snapshot["endpoint_edges"] is not None else ""),
              f"  findings    {f['unique']} unique, {f['hits']} hits"
              + (" (" + ", ".join(f"{k} {n}" for k, n in f["by_kind"].items()) + ")" if f["by_kind"] else "")]
    if snapshot["injected"]:
        lines.append(f"  injected    {', '.join(snapshot['injected'])}")
    if snapshot["unreadable_records"]:
        lines.append(f"  note        {snapshot['unreadable_records']} WAL records could not be read now")
    return "\n".join(lines)


def render_html(snapshot: dict | None, waiting: str | None = None) -> str:
    """A small HTML table for a notebook's live view; ``waiting`` says what start-up waits for."""
    rows: list[tuple[str, str]] = []
    if waiting is not None or snapshot is None:
        rows.append(("state", waiting or "preparing"))
    else:
        t, f = snapshot["totals"], snapshot["findings"]
        rate = snapshot["rates"].get("analyzed_per_s_now", snapshot["rates"]["analyzed_per_s"])
        rows += [("state", _state_words(snapshot)),
                 ("time", f"{snapshot['elapsed_s']:.1f} s of {snapshot['deadline_s']:g} s (left {_left(snapshot)})")]
        if snapshot["generation"] is not None:
            rows += [("generation", str(snapshot["generation"])),
                     ("members", f"masters {snapshot['members']['masters']}, workers {snapshot['members']['workers']}, "
                                 f"spares {snapshot['members']['spares']}")]
        rows += [("analyzed", f"{t['analyzed']} ({rate:.1f}/s)"), ("corpus", f"{t['corpus']} ({t['novel']} novel)"),
                 ("coverage ids", str(t["coverage_ids"])), ("findings", f"{f['unique']} unique, {f['hits']} hits")]
        if snapshot["injected"]:
            rows.append(("injected", ", ".join(snapshot["injected"])))
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
                   f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"



class LiveView:
    """A notebook's live view of a campaign run on engines: ``show`` gets the HTML of what start-up
    waits for (:meth:`waiting`, ``launch.engines``' ``startup``), then of the status, redrawn at
    most every ``every_s`` (:meth:`__call__`, its ``progress``); ``draw`` gets a small chart of
    corpus and coverage over time (``plots.status_chart``) at most every ``chart_every_s``. The
    stats files are written as ``launch`` writes them. :meth:`finish` draws the final state, once
    the engines have returned: only then does the view say the campaign finished."""

    def __init__(self, tracker: Tracker, writer: StatsWriter, show: Callable[[str], Any],
                 draw: Callable[[Any], Any] | None = None, every_s: float = 1.0, chart_every_s: float = 3.0,
                 clock: Callable[[], float] = time.monotonic):
        self.tracker, self.writer, self.show, self.draw = tracker, writer, show, draw
        self.every_s, self.chart_every_s, self.clock = every_s, chart_every_s, clock
        self._shown: float | None = None
        self._drawn: float | None = None
        self.snapshot: dict | None = None

    def waiting(self, words: str) -> None:
        self.show(render_html(None, words))

    def __call__(self) -> None:
        now = self.clock()
        if self._shown is None or now - self._shown >= self.every_s:
            self._shown = now
            self._update(final=False)

    def finish(self) -> dict:
        """The final status (also returned)."""
        self._update(final=True)
        return self.snapshot

    def _update(self, final: bool) -> None:
        self.snapshot = self.tracker.poll(job_running=not final)
        self.writer.write(self.snapshot, final=final)
        if self.snapshot["phase"] == "starting":
            self.show(render_html(None, f"campaign starting: {self.snapshot['ranks_started']} of "
                                        f"{self.snapshot['ranks']} ranks up, waiting for generation 0"))
        else:
            self.show(render_html(self.snapshot))
        now = self.clock()
        if self.draw is not None and (final or self._drawn is None or now - self._drawn >= self.chart_every_s):
            from .. import plots

            self._drawn = now
            self.draw(plots.status_chart(self.tracker.history))
