"""Plot data from a state directory: membership over time, throughput, coverage, per-master work.

Everything here is computed from the files a run leaves (membership snapshots and layouts,
``logs/rank-*.jsonl``); :mod:`symcc_ulfm.plots` only draws the rows. Times are seconds since
the campaign start (``started_at`` of generation 0). A campaign that still runs is followed
by ``tools.status`` instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.limits import MAX_MEMBERSHIP_BYTES
from ..store.corpus import Corpus
from ..store.paths import StateDir
from ..store.reads import read_bytes
from ..store.runlog import Event, read_events
from ..store.wal import WorkWAL


def _membership(state: StateDir) -> list[dict[str, Any]]:
    """Generations in order (0, 1, ... while their snapshots are present), each with its snapshot
    and layout roles."""
    generations = []
    snapshots = state.snapshots()
    g = 0
    while g in snapshots:
        snap = _read(snapshots[g])
        layout = _read(state.layout(g))
        roles = {r: "spare" for r in snap["spares"]}
        for group in layout["groups"]:
            roles[group["master"]] = "master"
            roles.update({w: "worker" for w in group["workers"]})
        receipt = _read(state.receipt(g)) if g and state.receipt(g).exists() else None
        generations.append({"generation": g, "snapshot": snap, "roles": roles, "receipt": receipt})
        g += 1
    return generations


def _read(path: Path) -> dict[str, Any]:
    """A membership file, opened without following a link (``store.reads``)."""
    return json.loads(read_bytes(path, limit=MAX_MEMBERSHIP_BYTES))


def timeline(state_dir: str | Path, bin_s: float = 1.0) -> dict[str, list[dict[str, Any]]]:
    """All plot tables of one run: ``membership``, ``failures``, ``promotions``, ``throughput``, ``masters``."""
    state = StateDir(state_dir)
    generations = _membership(state)
    if not generations:
        return {"membership": [], "failures": [], "promotions": [], "throughput": [], "masters": []}
    events = read_events(state.logs)
    t0 = generations[0]["snapshot"]["started_at"]
    end = max([e["t"] for e in events] + [t0]) - t0
    starts = _generation_starts(events, generations, t0)
    deaths = {e["rank"]: e["t"] - t0 for e in events if e.get("event") == Event.INJECT}
    membership = []
    for index, gen in enumerate(generations):
        start = starts[gen["generation"]]
        stop = starts[generations[index + 1]["generation"]] if index + 1 < len(generations) else end
        for rank, role in sorted(gen["roles"].items()):
            until = min(stop, deaths.get(rank, stop))
            membership.append({"rank": rank, "generation": gen["generation"], "role": role,
                               "start": round(start, 4), "end": round(max(until, start), 4)})
    failures = [{"rank": e["rank"], "t": round(e["t"] - t0, 4), "spec": e.get("spec"), "phase": e.get("phase"),
                 "generation": e.get("generation")} for e in events if e.get("event") == Event.INJECT]
    promotions = [{"rank": rank, "t": round(starts[gen["generation"]], 4), "generation": gen["generation"]}
                  for gen in generations if gen["receipt"] for rank in gen["receipt"]["promoted"]]
    commits = [e for e in events if e.get("event") == Event.COMMIT]
    return {
        "membership": membership,
        "failures": failures,
        "promotions": promotions,
        "throughput": _throughput(commits, t0, end, bin_s),
        "masters": _per_master(commits),
    }


def _generation_starts(events: list[dict], generations: list[dict], t0: float) -> dict[int, float]:
    """A generation starts at its first ``generation-start`` event (generation 0 at the campaign start)."""
    starts = {0: 0.0}
    for event in events:
        if event.get("event") == Event.GENERATION_START:
            g = event["generation"]
            starts[g] = min(starts.get(g, float("inf")), event["t"] - t0)
    previous = 0.0
    for gen in generations:  # a generation nobody logged (a crash) starts where the previous one did
        previous = starts.setdefault(gen["generation"], previous)
    return starts


def _throughput(commits: list[dict], t0: float, end: float, bin_s: float) -> list[dict[str, Any]]:
    """Per time bin: inputs analyzed and candidates generated per second, cumulative novel and unique.

    A rate is given only for a complete bin (``complete``); the last bin, cut short by the end of
    the run, gets the cumulative counts and no rate (``None``): the commits of the final drain
    divided by a sliver of a bin would be drawn as a spike that no worker ever ran at."""
    bins = max(1, int(end // bin_s) + 1)
    analyzed, generated, novel, unique = [0] * bins, [0] * bins, [0] * bins, [0] * bins
    for event in commits:
        i = min(bins - 1, max(0, int((event["t"] - t0) // bin_s)))
        analyzed[i] += 1
        generated[i] += event.get("generated", 0)
        novel[i] += event.get("novel", 0)
        unique[i] += event.get("unique", 0)
    rows, total_novel, total_unique = [], 0, 0
    for i in range(bins):
        total_novel += novel[i]
        total_unique += unique[i]
        stop = min((i + 1) * bin_s, max(end, i * bin_s + 1e-3))  # the last bin is usually partial
        complete = stop >= (i + 1) * bin_s - 1e-9
        rows.append({"t": round(stop, 4), "complete": complete,
                     "analyzed_per_s": analyzed[i] / bin_s if complete else None,
                     "generated_per_s": generated[i] / bin_s if complete else None,
                     "novel_total": total_novel, "unique_total": total_unique})
    return rows


def _per_master(commits: list[dict]) -> list[dict[str, Any]]:
    """Committed work per (master, generation): the master is the rank that logged the commit."""
    table: dict[tuple[int, int], dict[str, Any]] = {}
    for event in commits:
        key = (event["rank"], event["generation"])
        row = table.setdefault(key, {"master": key[0], "generation": key[1], "analyzed": 0, "generated": 0,
                                     "unique": 0, "novel": 0})
        row["analyzed"] += 1
        for field in ("generated", "unique", "novel"):
            row[field] += event.get(field, 0)
    return [table[k] for k in sorted(table)]


def done_records(state: StateDir) -> list[dict]:
    """The done records of a state directory's WAL (a damaged record raises WalCorruption)."""
    wal = WorkWAL(state.wal, state.root, Corpus(state.corpus, 0o644, 0o600), 0o600)
    return [record for record in wal.records() if record["state"] == "done"]



def failed_workers(state_dir: str | Path) -> dict[int, dict[str, Any]]:
    """The workers of a campaign none of whose leases succeeded (every done record of theirs holds
    a manifest ``error``), by rank: how many ``leases``, their ``kinds`` and one of the errors. A
    campaign can pass its oracle with such a worker (its failures are accounted for), while what
    it found is the other workers' alone."""
    manifests: dict[int, list[dict]] = {}
    for record in done_records(StateDir(state_dir)):
        if "quarantine" not in record["manifest"]:
            manifests.setdefault(record["lease"]["worker"], []).append(record["manifest"])
    return {worker: {"leases": len(held), "kinds": sorted({m["kind"] for m in held}), "error": str(held[0]["error"])[:500]}
            for worker, held in sorted(manifests.items()) if all(m.get("error") for m in held)}

def handoffs(state_dir: str | Path) -> dict[str, list[float]]:
    """:func:`handoffs_of` the WAL and the logs of ``state_dir``."""
    state = StateDir(state_dir)
    return handoffs_of(done_records(state), read_events(state.logs))


def handoffs_of(records: list[dict], events: list[dict]) -> dict[str, list[float]]:
    """Seconds from an input's publication to its first use by a worker of another kind, in a
    hybrid campaign, from its done ``records`` and its log ``events`` (:func:`read_events`):
    ``to_analysis`` (an analysis worker begins a lease on an input a fuzzer found),
    ``to_fuzzers`` (a fuzzer, also one an idle analysis worker is lent to, is handed an input a
    worker of another kind found; afl-fuzz then imports it at its next sync). Publication is the
    master's ``commit`` line of the record that claimed the input; seeds are nobody's find and
    not counted."""
    found_by: dict[str, tuple[str, str]] = {}  # input -> (its record's work hash, the finder's kind)
    for record in records:
        for name in record["done"]["claimed"]:
            found_by[name] = (record["work_hash"], record["manifest"]["kind"])
    published = {e["work_hash"]: e["t"] for e in events if e["event"] == Event.COMMIT}
    kinds = {(e["rank"], e["generation"]): e.get("kind") for e in events if e["event"] == Event.GENERATION_START}
    out: dict[str, list[float]] = {"to_analysis": [], "to_fuzzers": []}
    first: set[tuple[str, str]] = set()
    for event in sorted(events, key=lambda e: e["t"]):
        if event["event"] == Event.LEASE_START:
            names, direction = [event["input_hash"]], "to_analysis"
        elif event["event"] == Event.OFFERED:
            names, direction = event["inputs"], "to_fuzzers"
        else:
            continue
        mine = event.get("kind") or kinds.get((event["rank"], event["generation"]))  # OFFERED names its fuzzer
        for name in names:
            work, finder = found_by.get(name, (None, None))
            if work in published and finder != mine and (name, direction) not in first:
                first.add((name, direction))
                out[direction].append(max(0.0, event["t"] - published[work]))
    return out
