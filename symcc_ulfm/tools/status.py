"""A campaign's status, running or finished, from its durable files only (``symcc-ulfm status``).

:class:`Tracker` reads a state directory (or the ``state/`` of a run directory) without taking
a lock and without writing: its policy, deadline and membership files through their owners
(``store.state_files``: a damaged one is refused by name, exit 2), the WAL records (each done
record is read once: it never changes again), the corpus listing, the rank logs
(incrementally, complete lines only), the heartbeats and ``outcome.json``. A record or a log line being
written at that moment is not an error: a torn last line is not a state yet (``store.record``,
``store.runlog``), and a record that cannot be read now is counted as ``unreadable`` and read
again at the next poll. Whether the campaign runs is asked of ``/proc/locks``
(``store.joblock.running``), which takes no lock.

:meth:`Tracker.poll` returns a *snapshot*, a plain dict of :data:`STATUS_FORMAT` (the schema
that ``status --json`` prints and the tests read). :mod:`.status_views` draws it for a terminal,
a status line and a notebook; :mod:`.stats_files` writes the AFL++-style ``stats/fuzzer_stats``
and ``stats/plot_data`` from it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.budget import epoch_deadline
from ..core.coverage import edge_of, is_branch_coverage
from ..core.membership import Membership
from ..core.modes import FileModes
from ..errors import SymccUlfmError
from ..store.heartbeat import last_sign_of_life
from ..store.joblock import running
from ..store.paths import StateDir
from ..store.reads import read_bytes, read_json_object
from ..store.record import parse_record_file
from ..store.runlog import Event, LogFollower
from ..store.state_files import open_state

STATUS_FORMAT = "symcc-ulfm-status/1"
RATE_WINDOW_S = 10.0  # the "now" rates are taken over the samples of this window
ALIVE_S = 3.0  # a heartbeat older than this is no sign of life
CRASH_KINDS = ("crash", "exception", "oom", "protocol")  # counted as AFL++'s saved_crashes; "hang" as saved_hangs


@dataclass
class _Totals:
    analyzed: int = 0  # done records that settled an input (not a fuzzer's slice)
    slices: int = 0
    executions: int = 0
    executions_by_kind: dict[str, int] = field(default_factory=dict)  # the manifest's kind -> its executions
    generated: int = 0
    unique: int = 0  # objects first published by a done record
    novel: int = 0  # of them, those that added coverage
    last_novel: float | None = None  # wall time of the last done record that published a novel input
    coverage: set[int] = field(default_factory=set)
    edges: set[int] = field(default_factory=set)  # of the coverage ids: the edges (AFL's map indices), no branches
    map_size: int = 0  # the largest coverage map a worker reported measuring with (0: none has a map)
    findings: dict[tuple[str, str], dict] = field(default_factory=dict)  # (kind, signature) -> first, inputs


class Tracker:
    """Incremental reader of one campaign's status (see the module docstring)."""

    def __init__(self, path: str | Path, modes: FileModes | None = None):
        files = open_state(path, modes or FileModes())
        self.state: StateDir = files.state
        self.policy = files.policy
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
                             "coverage_ids": totals["coverage_ids"], "edges": totals["edges"],
                             "map_size": totals["map_size"], "novel": totals["novel"],
                             "crashes": snapshot["saved_crashes"], "hangs": snapshot["saved_hangs"]})
        snapshot["rates"] = self._rates(snapshot)
        return snapshot

    def _read_wal(self) -> tuple[int, int]:
        """Fold in the records that became done; (records leased or committing now, unreadable). Once
        the campaign is over, those leased are the leases it returned or abandoned at its end."""
        leased = unreadable = 0
        for work in self.state.works():
            if work in self._done:
                continue
            path = self.state.record(work)
            try:
                record = parse_record_file(read_bytes(path), expected_work=work)
                mtime = os.lstat(path).st_mtime
            except FileNotFoundError:
                continue
            except SymccUlfmError:  # torn or damaged now: read again next time (findings names damage)
                unreadable += 1
                continue
            if record["state"] != "done":
                leased += 1
                continue
            self._done.add(work)
            self._fold(record, mtime)
        return leased, unreadable

    def _fold(self, record: dict, mtime: float) -> None:
        totals, manifest = self._totals, record["manifest"]
        claimed = set(record["done"]["claimed"])
        if manifest.get("slice") is not None:
            totals.slices += 1
        else:
            totals.analyzed += 1
        stats = manifest.get("stats", {})
        executions = int(stats.get("executions", 0))
        totals.executions += executions
        totals.executions_by_kind[manifest["kind"]] = totals.executions_by_kind.get(manifest["kind"], 0) + executions
        totals.map_size = max(totals.map_size, int(stats.get("map_size", 0)))
        totals.generated += int(manifest.get("generated", 0))
        totals.unique += len(claimed)
        for obj in manifest["objects"]:
            if obj["sha256"] in claimed:
                coverage = obj.get("coverage", ())
                totals.coverage.update(coverage)
                totals.edges.update(edge_of(c) for c in coverage if not is_branch_coverage(c))
                if obj.get("novel"):
                    totals.novel += 1
                    totals.last_novel = max(totals.last_novel or 0.0, mtime)
        for item in manifest["findings"]:
            row = totals.findings.setdefault((item["kind"], item["signature"]), {"first": item["time"], "inputs": set()})
            row["first"] = min(row["first"], item["time"])
            row["inputs"].add(item["sha256"])

    def _json(self, path: Path) -> dict | None:
        """``outcome.json`` or ``endpoint.json``: None until it is written; a damaged one is
        an :class:`IntegrityError` naming it."""
        return read_json_object(path)

    def _alive(self, now: float) -> list[int]:
        alive = []
        for rank, path in self.state.heartbeats().items():
            try:
                if now - os.lstat(path).st_mtime <= ALIVE_S:
                    alive.append(rank)
            except FileNotFoundError:
                continue
        return alive

    def _corpus_size(self) -> int:
        try:
            return sum(1 for name in os.listdir(self.state.corpus / "objects") if not name.startswith("."))
        except FileNotFoundError:
            return 0

    # -- the snapshot ------------------------------------------------------------------------------

    def _snapshot(self, now: float, is_running: bool, leased: int, unreadable: int) -> dict[str, Any]:
        policy, totals = self.policy, self._totals
        files = open_state(self.state.root, self.state.modes)  # since the last poll: a resume, a commit
        snap = files.membership  # the latest committed generation
        outcome = self._json(self.state.outcome)
        epoch = snap.epoch if snap else None
        finished = outcome is not None and not is_running and (epoch is None or outcome.get("epoch") == epoch)
        if is_running:
            phase = "running" if snap is not None and snap.epoch_started_at <= now else "starting"
            if snap is not None and outcome is not None and outcome.get("epoch") == epoch:
                phase = "ending"  # the ranks wrote the outcome; the host side concludes
        else:
            phase = "finished" if finished else ("stopped" if snap is not None else "not started")
        started = snap.started_at if snap else None
        deadlines = files.deadlines  # a resume may have extended it
        deadline_s = deadlines.of_epoch(epoch) if snap else deadlines.latest
        deadline_at = epoch_deadline(snap.epoch_started_at, snap.consumed_s, deadline_s) if snap else None
        elapsed = self._campaign_time(snap, outcome, now, is_running)
        members = _members(snap, policy.executor) if snap else {}
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
            "generation": snap.generation if snap else None,
            "epoch": epoch,
            "ranks": policy.ranks,
            "ranks_started": sum(1 for t in self._startups.values() if t >= since),
            "ranks_alive": self._alive(now) if is_running else [],
            "members": members,
            "executor": policy.executor,
            "target": policy.target,
            "totals": {"analyzed": totals.analyzed, "slices": totals.slices, "executions": totals.executions,
                       "executions_by_kind": dict(sorted(totals.executions_by_kind.items())),
                       "generated": totals.generated, "unique": totals.unique, "novel": totals.novel,
                       "coverage_ids": len(totals.coverage), "edges": len(totals.edges),
                       "map_size": totals.map_size or None, "corpus": self._corpus_size(), "leased": leased},
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

    def _campaign_time(self, snap: Membership | None, outcome: dict | None, now: float, is_running: bool) -> float:
        """Seconds the campaign has run, over all its jobs and without the gaps between them (as
        AFL++'s ``run_time``): what earlier epochs consumed (the snapshot's ``consumed_s``) plus this
        epoch's time, up to its outcome, else up to now while it runs, else (a job killed before it
        wrote one) up to the last sign of life in its logs, which a resume charges it (``mpi.campaign``)."""
        if snap is None:
            return 0.0
        begun = float(snap.epoch_started_at)
        if outcome is not None and outcome.get("epoch") == snap.epoch:
            end = float(outcome["ended_at"])
        elif is_running:
            end = now
        else:
            end = last_sign_of_life(self.state.logs, before=now) or begun
        return float(snap.consumed_s) + max(0.0, end - begun)

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


def _members(snap: Membership, executor: str) -> dict[str, Any]:
    """Stable ranks by role, and the workers by kind (the campaign's executor unless the slot has one)."""
    kinds: dict[str, list[int]] = {}
    for worker in snap.layout.workers:
        kinds.setdefault(snap.layout.kind_of(worker) or executor, []).append(worker)
    return {"masters": list(snap.layout.masters), "workers": list(snap.layout.workers), "spares": list(snap.spares),
            "failed": list(snap.failed), "workers_by_kind": kinds}
