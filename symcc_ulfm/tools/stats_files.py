"""The AFL++-style statistics of a campaign: ``stats/fuzzer_stats`` and ``stats/plot_data``
(docs/status.md), rendered from :class:`.status.Tracker` snapshots and written by the host side
of a job (``launch``, the notebook), their only writer, through :class:`StatsWriter`."""

from __future__ import annotations

import os
from pathlib import Path

from .. import __version__
from ..store.atomic import write_replace
from ..store.dirs import ensure_dir
from ..store.reads import read_bytes
from .status import Tracker

PLOT_HEADER = ("# relative_time, cycles_done, cur_item, corpus_count, pending_total, pending_favs, map_size, "
               "saved_crashes, saved_hangs, max_depth, execs_per_sec, total_execs, edges_found")


def fuzzer_stats_text(snapshot: dict, pid: int, command_line: str) -> str:
    """``stats/fuzzer_stats``: ``key : value`` lines with AFL++'s names where the meaning matches
    (an "exec" is one target execution, of any worker kind; a crash is a unique finding of kind
    crash, exception or oom; ``last_crash`` the time the latest of them was first seen; an edge
    one index of the coverage map), then this campaign's own keys; see docs/status.md.
    ``command_line`` is written as given (one line): ``afl-whatsup`` skips that line before it
    sources the others."""
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
        ("cycles_done", 0), ("cur_item", 0), ("pending_favs", 0), ("pending_total", 0),
        ("bitmap_cvg", bitmap_cvg(t["edges"], t["map_size"])), ("edges_found", t["edges"]),
        ("total_edges", t["map_size"] or 0), ("afl_banner", Path(snapshot["state_dir"]).name),
        ("afl_version", f"symcc-ulfm {__version__}"), ("target_mode", f"mpi campaign ({snapshot['executor']})"),
        ("campaign_phase", snapshot["phase"]), ("campaign_outcome", snapshot["outcome"] or "-"),
        ("generation", snapshot["generation"] if snapshot["generation"] is not None else "-"),
        ("inputs_analyzed", t["analyzed"]), ("novel_inputs", t["novel"]), ("findings_unique", snapshot["findings"]["unique"]),
        ("execs_by_kind", ",".join(f"{kind}={n}" for kind, n in t["executions_by_kind"].items()) or "-"),
        ("deadline_left", int(snapshot["deadline_left_s"]) if snapshot["deadline_left_s"] is not None else 0),
    ]
    return "".join(f"{key:<18}: {_plain(value)}\n" for key, value in rows) + f"{'command_line':<18}: {_line(command_line)}\n"


def bitmap_cvg(edges: int, map_size: int | None) -> str:
    """AFL++'s ``bitmap_cvg``: the share of the coverage map's indices that some input hit, as a
    percentage with two decimals; 0.00% where no worker kind measures with a map (Python targets)."""
    return f"{100.0 * edges / map_size:.2f}%" if map_size else "0.00%"


def _line(value: str) -> str:
    """``value`` as one line: a control character (a newline in an argument) becomes ``?``."""
    return "".join("?" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in value)


def _plain(value: object) -> str:
    """A value as one line of harmless characters: ``afl-whatsup`` sources these lines as shell
    assignments (in double quotes), so a state directory named with ``$`` or a backquote would
    run code there."""
    return "".join(c if c.isalnum() or c in " ._/+-,=%()@" else "_" for c in str(value))


def plot_data_row(sample: dict, previous: dict | None) -> str:
    """One ``stats/plot_data`` line (:data:`PLOT_HEADER`'s columns; those with no counterpart here,
    cycles_done, cur_item, pending_total, pending_favs, max_depth, are 0; map_size is AFL++'s
    bitmap coverage, :func:`bitmap_cvg`);
    execs_per_sec over the interval since ``previous`` (the first line: since the start). Times
    are whole seconds since the campaign start and increase from line to line."""
    if previous is not None and sample["t"] > previous["t"]:
        rate = (sample["executions"] - previous["executions"]) / (sample["t"] - previous["t"])
    else:
        rate = sample["executions"] / sample["elapsed_s"] if sample["elapsed_s"] > 0 else 0.0
    coverage = bitmap_cvg(sample["edges"], sample["map_size"])
    return (f"{int(sample['elapsed_s'])}, 0, 0, {sample['corpus']}, 0, 0, {coverage}, {sample['crashes']}, "
            f"{sample['hangs']}, 0, {rate:.2f}, {sample['executions']}, {sample['edges']}\n")


class StatsWriter:
    """Keeps ``stats/fuzzer_stats`` and ``stats/plot_data`` of a state up to date from a Tracker's
    snapshots, each file replaced atomically; a plot line at most every ``interval_s`` (and one
    for the last snapshot, which replaces this job's lines of its second or later, so that the
    times still increase). Only samples taken while the campaign runs are plotted."""

    def __init__(self, tracker: Tracker, command_line: str, interval_s: float = 5.0, pid: int | None = None):
        self.tracker, self.command_line, self.interval_s = tracker, command_line, interval_s
        self.pid = os.getpid() if pid is None else pid
        self._rows = self._earlier_rows()  # a resumed campaign's plot goes on
        self._plotted: list[dict] = []  # the samples of this job's lines, in order

    def _earlier_rows(self) -> list[str]:
        try:
            text = read_bytes(self.tracker.state.plot_data).decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        return [line + "\n" for line in text.splitlines() if line and not line.startswith("#")]

    def write(self, snapshot: dict, final: bool = False) -> None:
        state = self.tracker.state
        sample = self.tracker.history[-1]
        if snapshot["started_at"] is not None and final:
            while self._plotted and int(self._plotted[-1]["elapsed_s"]) >= int(sample["elapsed_s"]):
                self._plotted.pop()
                self._rows.pop()
        last = self._plotted[-1] if self._plotted else None
        if snapshot["started_at"] is not None and (last is None or (
                int(sample["elapsed_s"]) > int(last["elapsed_s"])
                and (final or sample["t"] - last["t"] >= self.interval_s))):
            self._rows.append(plot_data_row(sample, last))
            self._plotted.append(sample)
        ensure_dir(state.stats, state.modes.snapshot_dir)
        write_replace(state.fuzzer_stats, fuzzer_stats_text(snapshot, self.pid, self.command_line).encode(),
                      state.modes.snapshot)
        write_replace(state.plot_data, (PLOT_HEADER + "\n" + "".join(self._rows)).encode(), state.modes.snapshot)
