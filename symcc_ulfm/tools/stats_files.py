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
