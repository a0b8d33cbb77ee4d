"""A campaign's status, running or finished, from its durable files only (``symcc-ulfm status``).

:class:`Tracker` reads a state directory (or the ``state/`` of a run directory) without taking
a lock and without writing: the WAL records (each done record is read once: it never changes
again), the corpus listing, the membership snapshots and layouts, the rank logs (incrementally,
complete lines only), the heartbeats and ``outcome.json``. A record or a log line being
written at that moment is not an error: a torn last line is not a state yet (``store.record``,
``store.runlog``), and a record that cannot be read now is counted as ``unreadable`` and read
again at the next poll. Whether the campaign runs is asked of ``/proc/locks``
(``store.joblock.running``), which takes no lock.

:meth:`Tracker.poll` returns a *snapshot*, a plain dict of :data:`STATUS_FORMAT` (the schema
that ``status --json`` prints and the tests read); :func:`render_block`, :func:`render_line` and
:func:`render_html` draw it for a terminal, a status line and a notebook. The AFL++-style files
``stats/fuzzer_stats`` and ``stats/plot_data`` are rendered here too (:func:`fuzzer_stats_text`,
:func:`plot_data_row`); :class:`StatsWriter` keeps them up to date from a Tracker, for the
host side of a job (``launch``, the notebook), which is the only writer.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.budget import epoch_deadline
from ..core.modes import FileModes
from ..core.policy import Policy
from ..errors import SymccUlfmError
from ..store.atomic import write_replace
from ..store.deadline_file import read_deadlines
from ..store.dirs import ensure_dir
from ..store.findings import state_of
from ..store.joblock import running
from ..store.paths import StateDir
from ..store.reads import read_bytes
from ..store.record import parse_record_file
from ..store.runlog import Event, LogFollower

STATUS_FORMAT = "symcc-ulfm-status/1"
RATE_WINDOW_S = 10.0  # the "now" rates are taken over the samples of this window
ALIVE_S = 3.0  # a heartbeat older than this is no sign of life
PLOT_HEADER = ("# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, "
               "saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found")
CRASH_KINDS = ("crash", "exception", "oom")  # counted as AFL++'s saved_crashes; "hang" as saved_hangs


@dataclass
class _Totals:
    analyzed: int = 0  # done records that settled an input (not a fuzzer's slice)
    slices: int = 0
    executions: int = 0
    generated: int = 0
    unique: int = 0  # objects first published by a done record
    novel: int = 0  # of them, those that added coverage
    last_novel: float | None = None  # wall time of the last done record that published a novel input
    coverage: set[int] = field(default_factory=set)
    findings: dict[tuple[str, str], dict] = field(default_factory=dict)  # (kind, signature) -> first, inputs


class Tracker:
    """Incremental reader of one campaign's status (see the module docstring)."""

    def __init__(self, path: str | Path, modes: FileModes | None = None):
        self.state: StateDir = state_of(path, modes or FileModes())
        self.policy = json.loads(read_bytes(self.state.policy))
        self._totals = _Totals()
        self._done: set[str] = set()
        self._logs = LogFollower(self.state.logs)
        self._startups: dict[int, float] = {}  # rank -> its last startup event
        self._injected: list[str] = []
        self.history: list[dict[str, Any]] = []  # one sample per poll: what plot_data and the live chart draw

    # -- reading ---------------------------------------------------------------------------------

    def poll(self, now: float | None = None, job_running: bool | None = None) -> dict[str, Any]:
        """Read what changed since the last poll; the snapshot (:data:`STATUS_FORMAT`).

        Whether the campaign runs is asked of ``/proc/locks`` unless the caller knows it
        (``job_running``: the host side of the job, which holds ``launch.lock`` itself)."""
        now = time.time() if now is None else now
        is_running = running(self.state.root) is not None if job_running is None else job_running
        leased, unreadable = self._read_wal()
        for event in self._logs.poll():
            if event.get("event") == Event.STARTUP:
                self._startups[int(event["rank"])] = float(event["t"])
            elif event.get("event") == Event.INJECT:
                self._injected.append(str(event.get("spec")))
        snapshot = self._snapshot(now, is_running, leased, unreadable)
        totals = snapshot["totals"]
        self.history.append({"t": now, "elapsed_s": snapshot["elapsed_s"], "analyzed": totals["analyzed"],
                             "executions": totals["executions"], "corpus": totals["corpus"],
                             "coverage_ids": totals["coverage_ids"], "novel": totals["novel"],
                             "crashes": snapshot["saved_crashes"], "hangs": snapshot["saved_hangs"]})
        snapshot["rates"] = self._rates(snapshot)
        return snapshot

    def _read_wal(self) -> tuple[int, int]:
        """Fold in the records that became done; (records leased or committing now, unreadable). Once
        the campaign is over, those leased are the leases it returned or abandoned at its end."""
        leased = unreadable = 0
        try:
            entries = list(os.scandir(self.state.wal / "records"))
        except FileNotFoundError:
            return 0, 0
        for entry in entries:
            name = entry.name
            if not name.endswith(".json") or name.startswith(".") or name[:-5] in self._done:
                continue
            try:
                record = parse_record_file(read_bytes(entry.path), expected_work=name[:-5])
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except FileNotFoundError:
                continue
            except SymccUlfmError:  # torn or damaged now: read again next time (findings names damage)
                unreadable += 1
                continue
            if record["state"] != "done":
                leased += 1
                continue
            self._done.add(name[:-5])
            self._fold(record, mtime)
        return leased, unreadable

    def _fold(self, record: dict, mtime: float) -> None:
        totals, manifest = self._totals, record["manifest"]
        claimed = set(record["done"]["claimed"])
        if manifest.get("slice") is not None:
            totals.slices += 1
        else:
            totals.analyzed += 1
        totals.executions += int(manifest.get("stats", {}).get("executions", 0))
        totals.generated += int(manifest.get("generated", 0))
        totals.unique += len(claimed)
        for obj in manifest["objects"]:
            if obj["sha256"] in claimed:
                totals.coverage.update(obj.get("coverage", ()))
                if obj.get("novel"):
                    totals.novel += 1
                    totals.last_novel = max(totals.last_novel or 0.0, mtime)
        for item in manifest["findings"]:
            row = totals.findings.setdefault((item["kind"], item["signature"]), {"first": item["time"], "inputs": set()})
            row["first"] = min(row["first"], item["time"])
            row["inputs"].add(item["sha256"])

    def _json(self, path: Path) -> dict | None:
        try:
            return json.loads(read_bytes(path))
        except (FileNotFoundError, ValueError):
            return None

    def _membership(self) -> tuple[dict | None, dict | None]:
        """The snapshot and layout of the latest generation (None, None before generation 0)."""
        try:
            names = os.listdir(self.state.membership)
        except FileNotFoundError:
            return None, None
        generations = [int(n[len("generation-"):-len("-snapshot.json")]) for n in names
                       if n.startswith("generation-") and n.endswith("-snapshot.json")
                       and n[len("generation-"):-len("-snapshot.json")].isdigit()]
        if not generations:
            return None, None
        g = max(generations)
        return (self._json(self.state.membership / f"generation-{g}-snapshot.json"),
                self._json(self.state.membership / f"generation-{g}-layout.json"))

    def _alive(self, now: float) -> list[int]:
        alive = []
        try:
            entries = list(os.scandir(self.state.logs))
        except FileNotFoundError:
            return []
        for entry in entries:
            if entry.name.startswith("heartbeat-") and entry.name[len("heartbeat-"):].isdigit():
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime <= ALIVE_S:
                        alive.append(int(entry.name[len("heartbeat-"):]))
                except FileNotFoundError:
                    continue
        return sorted(alive)

    def _corpus_size(self) -> int:
        try:
            return sum(1 for name in os.listdir(self.state.corpus / "objects") if not name.startswith("."))
        except FileNotFoundError:
            return 0

    # -- the snapshot ------------------------------------------------------------------------------

    def _snapshot(self, now: float, is_running: bool, leased: int, unreadable: int) -> dict[str, Any]:
        policy, totals = self.policy, self._totals
        snap, layout = self._membership()
        outcome = self._json(self.state.outcome)
        epoch = snap["epoch"] if snap else None
        finished = outcome is not None and not is_running and (epoch is None or outcome.get("epoch") == epoch)
        if is_running:
            phase = "running" if snap is not None and snap.get("epoch_started_at", 0) <= now else "starting"
            if snap is not None and outcome is not None and outcome.get("epoch") == epoch:
                phase = "ending"  # the ranks wrote the outcome; the host side concludes
        else:
            phase = "finished" if finished else ("stopped" if snap is not None else "not started")
        started = self._started_at()
        deadlines = read_deadlines(self.state, Policy.from_json(policy))  # a resume may have extended it
        deadline_s = deadlines.of_epoch(epoch) if snap else deadlines.latest
        deadline_at = epoch_deadline(snap["epoch_started_at"], snap["consumed_s"], deadline_s) if snap else None
        if finished:
            elapsed = outcome["ended_at"] - (started or outcome["ended_at"])
        else:
            elapsed = max(0.0, now - started) if started is not None else 0.0
        members = _members(snap, layout, policy) if snap else {}
        since = outcome["ended_at"] if outcome is not None and not finished else 0.0
        by_kind: dict[str, int] = {}
        for (kind, _), _row in totals.findings.items():
            by_kind[kind] = by_kind.get(kind, 0) + 1
        return {
            "format": STATUS_FORMAT,
            "state_dir": str(self.state.root),
            "phase": phase,
            "running": is_running,
            "outcome": outcome.get("status") if finished else None,
            "now": round(now, 3),
            "started_at": started,
            "elapsed_s": round(elapsed, 3),
            "deadline_s": deadline_s,
            "deadline_left_s": None if deadline_at is None or finished else round(max(0.0, deadline_at - now), 3),
            "generation": snap["generation"] if snap else None,
            "epoch": epoch,
            "ranks": policy["ranks"],
            "ranks_started": sum(1 for t in self._startups.values() if t >= since),
            "ranks_alive": self._alive(now) if is_running else [],
            "members": members,
            "executor": policy["executor"],
            "target": policy.get("target"),
            "totals": {"analyzed": totals.analyzed, "slices": totals.slices, "executions": totals.executions,
                       "generated": totals.generated, "unique": totals.unique, "novel": totals.novel,
                       "coverage_ids": len(totals.coverage), "corpus": self._corpus_size(), "leased": leased},
            "findings": {"unique": len(totals.findings), "hits": sum(len(r["inputs"]) for r in totals.findings.values()),
                         "by_kind": dict(sorted(by_kind.items()))},
            "saved_crashes": sum(n for k, n in by_kind.items() if k in CRASH_KINDS),
            "saved_hangs": by_kind.get("hang", 0),
            "last_crash": max((r["first"] for (k, _), r in totals.findings.items() if k in CRASH_KINDS), default=None),
            "last_hang": max((r["first"] for (k, _), r in totals.findings.items() if k == "hang"), default=None),
            "last_novel_s": None if totals.last_novel is None or started is None
            else round(totals.last_novel - started, 3),
            "endpoint_edges": (self._json(self.state.endpoint) or {}).get("edges") if finished else None,
            "injected": list(self._injected),
            "unreadable_records": unreadable,
        }

    def _started_at(self) -> float | None:
        snap0 = self._json(self.state.membership / "generation-0-snapshot.json")
        return float(snap0["started_at"]) if snap0 else None

    def _rates(self, snapshot: dict) -> dict[str, float]:
        """Per second: over the whole campaign, and over the last :data:`RATE_WINDOW_S` of samples."""
        elapsed = snapshot["elapsed_s"]
        totals = snapshot["totals"]
        rates = {"analyzed_per_s": totals["analyzed"] / elapsed if elapsed > 0 else 0.0,
                 "executions_per_s": totals["executions"] / elapsed if elapsed > 0 else 0.0}
        last = self.history[-1]
        earlier = [s for s in self.history if last["t"] - s["t"] >= RATE_WINDOW_S]
        base = earlier[-1] if earlier else self.history[0]
        span = last["t"] - base["t"]
        if span > 0 and snapshot["phase"] == "running":
            rates["analyzed_per_s_now"] = (last["analyzed"] - base["analyzed"]) / span
            rates["executions_per_s_now"] = (last["executions"] - base["executions"]) / span
        return {k: round(v, 3) for k, v in rates.items()}


def _members(snap: dict, layout: dict | None, policy: dict) -> dict[str, Any]:
    """Stable ranks by role, and the workers by kind (the campaign's executor unless the slot has one)."""
    masters, workers, kinds = [], [], {}
    for group in (layout or {}).get("groups", []):
        masters.append(group["master"])
        for i, worker in enumerate(group["workers"]):
            workers.append(worker)
            kind = (group.get("kinds") or [None] * len(group["workers"]))[i] or policy["executor"]
            kinds.setdefault(kind, []).append(worker)
    return {"masters": masters, "workers": workers, "spares": list(snap.get("spares", [])),
            "failed": list(snap.get("failed", [])), "workers_by_kind": kinds}


# -- rendering -------------------------------------------------------------------------------------


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
    return (f"[{snapshot['elapsed_s']:5.1f} s] gen {snapshot['generation']}  analyzed {t['analyzed']} ({rate:.1f}/s)  "
            f"corpus {t['corpus']}  novel {t['novel']}  edges {t['coverage_ids']}  findings {f['unique']}  "
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
    lines += [f"  analyzed    {t['analyzed']} inputs ({r['analyzed_per_s']:.1f}/s overall{now}); "
              f"{t['executions']} executions; {t['leased']} leases "
              + ("in flight" if snapshot["running"] else "open (a resume reclaims them)")
              + (f"; {t['slices']} fuzzer slices" if t["slices"] else ""),
              f"  corpus      {t['corpus']} inputs; {t['unique']} new, {t['novel']} novel; "
              f"{t['coverage_ids']} coverage ids" + (f"; endpoint edges {snapshot['endpoint_edges']}"
                                                      if snapshot["endpoint_edges"] is not None else ""),
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


# -- AFL++-style stats files -------------------------------------------------------------------------


def fuzzer_stats_text(snapshot: dict, pid: int, command_line: str) -> str:
    """``stats/fuzzer_stats``: ``key : value`` lines with AFL++'s names where the meaning matches
    (an "exec" is one target execution; a crash is a unique finding of kind crash, exception or
    oom; ``last_crash`` the time the latest of them was first seen),
    then this campaign's own keys; see docs/status.md."""
    t, started = snapshot["totals"], snapshot["started_at"] or snapshot["now"]
    rows = [
        ("start_time", int(started)), ("last_update", int(snapshot["now"])), ("run_time", int(snapshot["elapsed_s"])),
        ("fuzzer_pid", pid), ("execs_done", t["executions"]),
        ("execs_per_sec", f"{snapshot['rates']['executions_per_s']:.2f}"), ("corpus_count", t["corpus"]),
        ("corpus_found", t["unique"]), ("saved_crashes", snapshot["saved_crashes"]),
        ("saved_hangs", snapshot["saved_hangs"]),
        ("last_find", int(started + snapshot["last_novel_s"]) if snapshot["last_novel_s"] is not None else 0),
        ("last_crash", int(snapshot["last_crash"] or 0)), ("last_hang", int(snapshot["last_hang"] or 0)),
        # AFL++'s queue cycle and favourites have no counterpart in a campaign: 0, as in a fresh AFL++ run
        ("cycles_done", 0), ("cur_item", 0), ("pending_favs", 0), ("pending_total", 0), ("bitmap_cvg", "0.00%"),
        ("edges_found", t["coverage_ids"]), ("afl_banner", Path(snapshot["state_dir"]).name),
        ("afl_version", f"symcc-ulfm {__version__}"), ("target_mode", f"mpi campaign ({snapshot['executor']})"),
        ("campaign_phase", snapshot["phase"]), ("campaign_outcome", snapshot["outcome"] or "-"),
        ("generation", snapshot["generation"] if snapshot["generation"] is not None else "-"),
        ("inputs_analyzed", t["analyzed"]), ("novel_inputs", t["novel"]), ("findings_unique", snapshot["findings"]["unique"]),
        ("deadline_left", int(snapshot["deadline_left_s"]) if snapshot["deadline_left_s"] is not None else 0),
        ("command_line", command_line),
    ]
    return "".join(f"{key:<18}: {_plain(value)}\n" for key, value in rows)


def _plain(value: object) -> str:
    """A value as one line of harmless characters: ``afl-whatsup`` sources these lines as shell
    assignments (in double quotes), so a state directory named with ``$`` or a backquote would
    run code there."""
    return "".join(c if c.isalnum() or c in " ._/+-,=%()@" else "_" for c in str(value))


def plot_data_row(sample: dict, previous: dict | None) -> str:
    """One ``stats/plot_data`` line (:data:`PLOT_HEADER`'s columns; those with no counterpart here,
    cycles_done, cur_item, pending_total, pending_favs, max_depth, are 0 and map_size 0.00%);
    execs_per_sec over the interval since ``previous`` (the first line: since the start). Times
    are whole seconds since the campaign start and increase from line to line."""
    if previous is not None and sample["t"] > previous["t"]:
        rate = (sample["executions"] - previous["executions"]) / (sample["t"] - previous["t"])
    else:
        rate = sample["executions"] / sample["elapsed_s"] if sample["elapsed_s"] > 0 else 0.0
    return (f"{int(sample['elapsed_s'])}, 0, 0, {sample['corpus']}, 0, 0, 0.00%, {sample['crashes']}, "
            f"{sample['hangs']}, 0, {rate:.2f}, {sample['executions']}, {sample['coverage_ids']}\n")


class StatsWriter:
    """Keeps ``stats/fuzzer_stats`` and ``stats/plot_data`` of a state up to date from a Tracker's
    snapshots, each file replaced atomically; a plot line at most every ``interval_s`` (and one
    for the last snapshot). Only samples taken while the campaign runs are plotted."""

    def __init__(self, tracker: Tracker, command_line: str, interval_s: float = 5.0, pid: int | None = None):
        self.tracker, self.command_line, self.interval_s = tracker, command_line, interval_s
        self.pid = os.getpid() if pid is None else pid
        self._rows = self._earlier_rows()  # a resumed campaign's plot goes on
        self._plotted: dict | None = None

    def _earlier_rows(self) -> list[str]:
        try:
            text = read_bytes(self.tracker.state.plot_data).decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        return [line + "\n" for line in text.splitlines() if line and not line.startswith("#")]

    def write(self, snapshot: dict, final: bool = False) -> None:
        state = self.tracker.state
        sample = self.tracker.history[-1]
        if snapshot["started_at"] is not None and (self._plotted is None or (
                int(sample["elapsed_s"]) > int(self._plotted["elapsed_s"])
                and (final or sample["t"] - self._plotted["t"] >= self.interval_s))):
            self._rows.append(plot_data_row(sample, self._plotted))
            self._plotted = sample
        ensure_dir(state.stats, state.modes.snapshot_dir)
        write_replace(state.fuzzer_stats, fuzzer_stats_text(snapshot, self.pid, self.command_line).encode(),
                      state.modes.snapshot)
        write_replace(state.plot_data, (PLOT_HEADER + "\n" + "".join(self._rows)).encode(), state.modes.snapshot)


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
