"""What each worker kind of a campaign added: edges, who reached them first, re-explored edges,
hand-off latencies and CPU time, from a state directory's WAL and logs.

A hybrid campaign's claim to beat a fuzzer alone rests on its analysis side reaching what the
fuzzers do not; the re-evaluation of hybrid fuzzers (ICSE 2023) found that at equal CPU the two
sides mostly re-explore the same edges (a redundant-edge ratio of 0.47-0.95). These figures say
how it went in one campaign. Every figure is of the done WAL records (their manifests), ordered
by the masters' ``commit`` log lines:

* **kind**: a manifest's ``kind``; a *fuzzer* kind is one whose leases are time slices (a slice
  descriptor in the manifest: ``afl``, ``havoc``; a slice an idle analysis worker was lent to is
  its fuzzer kind's), an *analysis* kind any other (``symcc``, ``concolic``, ``native``).
* **edges reached** by a kind: the edges (``core.coverage.edge_of`` of each coverage id, hit
  classes merged) of every object its manifests carry, claimed by it or not (an input another
  record published first still shows the kind reached its edges). Branch-direction ids
  (``core.coverage.is_branch_coverage``: which way a solved branch went) are not edges: they are
  counted apart (``branch_directions``).
* **edges first**: the edges whose earliest record (in commit order) carrying them is the kind's.
* **redundancy** of an analysis kind A against the fuzzer side F (the union of every fuzzer
  kind's edges): ``ratio = |A ∩ F| / |A|``, the share of A's edges the fuzzers reached too;
  ``fuzzer_ratio = |A ∩ F| / |F|`` the same from the fuzzers' side; and of the shared edges, how
  many each side reached first (``shared_first_by_analysis``, ``shared_first_by_fuzzers``).
  ``analysis_side`` is the same for the union of all analysis kinds; it is the campaign's
  ``redundant_edge_ratio``. A campaign with one kind, or without an analysis or a fuzzer kind
  among its records, has none (``single_kind``).
* **hand-offs**: :func:`.timeline.handoffs_of`'s seconds from an input's publication to its first
  use by a worker of another kind, per direction: count, median and 90th percentile (numpy's
  linear quantiles).
* **CPU**: the sum of the manifests' ``cpu_seconds`` (the CPU of the worker's processes since its
  previous lease ended, ``runtime.worker_loop``) per kind, its share of all kinds' CPU, and
  ``edges_first_per_cpu_s``: edges first per CPU second. None where a record has no
  ``cpu_seconds`` (a campaign without worker kinds, or run before it was measured).

Limits. These are figures of what the campaign *kept*: a fuzzer keeps an input only for bits new to
its own map (AFL++: hit counts included), and under ``--keep novel`` an analysis worker's test
case that added nothing to the campaign's coverage is dropped unmeasured, so an edge a side
executed again without keeping an input for it is not seen: the redundancy is a lower bound of
the re-exploration. The seeds' own coverage is not recorded in the state, so an edge the seeds
already reached counts as first reached by whichever kind first kept an input through it. The
commit order of two masters is that of their hosts' clocks. CPU is the workers' for committed
leases only: the masters' CPU, a lease lost with its worker, a slice that lapsed, and a worker's
time after its last lease are in no kind's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..core.coverage import edge_of, is_branch_coverage
from ..store.paths import StateDir
from ..store.runlog import Event, read_events
from .timeline import done_records, handoffs_of

FORMAT = "symcc-ulfm-mechanism/1"
FUZZER, ANALYSIS = "fuzzer", "analysis"


def mechanism(state_dir: str | Path) -> dict[str, Any]:
    """The mechanism summary of a campaign's state directory (module docstring)."""
    state = StateDir(state_dir)
    records, events = done_records(state), read_events(state.logs)
    return summarize(leases_of(records, events), handoffs_of(records, events))


def leases_of(records: list[dict], events: list[dict]) -> list[dict[str, Any]]:
    """The done records as rows in commit order (the first ``commit`` line of each, records without
    one after all others, by work hash): ``kind``, ``slice`` (a fuzzer's), ``edges`` and
    ``branches`` of its objects, ``cpu_seconds`` (None when not measured), ``seconds``, ``committed``
    (whether a commit line orders it). A quarantine manifest (the master settling a poison input)
    is not a lease and not a row."""
    position: dict[str, int] = {}
    for index, event in enumerate(events):
        if event["event"] == Event.COMMIT:
            position.setdefault(event["work_hash"], index)
    rows = []
    for record in records:
        manifest = record["manifest"]
        if "quarantine" in manifest:
            continue
        ids = {cov for obj in manifest["objects"] for cov in obj["coverage"]}
        stats = manifest["stats"]
        rows.append({"work_hash": record["work_hash"], "kind": manifest["kind"], "slice": manifest["slice"] is not None,
                     "edges": {edge_of(c) for c in ids if not is_branch_coverage(c)},
                     "branches": {edge_of(c) for c in ids if is_branch_coverage(c)},
                     "cpu_seconds": stats.get("cpu_seconds"), "seconds": stats.get("seconds", 0.0),
                     "committed": record["work_hash"] in position})
    return sorted(rows, key=lambda row: (position.get(row["work_hash"], math.inf), row["work_hash"]))


def latency(times: list[float]) -> dict[str, Any]:
    """``{n, median_s, p90_s}`` of hand-off times (None when there are none)."""
    if not times:
        return {"n": 0, "median_s": None, "p90_s": None}
    median, p90 = (round(float(q), 3) for q in np.quantile(np.asarray(times, dtype=float), [0.5, 0.9]))
    return {"n": len(times), "median_s": median, "p90_s": p90}


def _ratio(part: float, whole: float | None) -> float | None:
    return None if not whole else round(part / whole, 4)


def _side(first: dict[str, dict[int, int]], kinds: list[str]) -> dict[int, int]:
    """edge -> the earliest position at which any of ``kinds`` reached it."""
    out: dict[int, int] = {}
    for kind in kinds:
        for edge, at in first[kind].items():
            out[edge] = min(at, out.get(edge, at))
    return out


def _redundancy(analysis: dict[int, int], fuzzers: dict[int, int]) -> dict[str, Any]:
    shared = analysis.keys() & fuzzers.keys()
    by_analysis = sum(1 for edge in shared if analysis[edge] < fuzzers[edge])
    return {"analysis_edges": len(analysis), "fuzzer_edges": len(fuzzers), "shared": len(shared),
            "ratio": _ratio(len(shared), len(analysis)), "fuzzer_ratio": _ratio(len(shared), len(fuzzers)),
            "shared_first_by_analysis": by_analysis, "shared_first_by_fuzzers": len(shared) - by_analysis}


def summarize(leases: list[dict], handoffs: dict[str, list[float]]) -> dict[str, Any]:
    """The summary of :func:`leases_of`'s rows (in commit order) and :func:`.timeline.handoffs_of`'s times."""
    first: dict[str, dict[int, int]] = {}  # kind -> edge -> position of its first record carrying it
    owner: dict[int, str] = {}  # edge -> the kind that reached it first
    rows: dict[str, dict[str, Any]] = {}
    for at, lease in enumerate(leases):
        kind = lease["kind"]
        row = rows.setdefault(kind, {"family": ANALYSIS, "leases": 0, "branches": set(), "cpu": 0.0, "cpu_known": True,
                                     "seconds": 0.0})
        row["leases"] += 1
        row["family"] = FUZZER if lease["slice"] else row["family"]
        row["branches"] |= lease["branches"]
        row["seconds"] += lease["seconds"]
        if lease["cpu_seconds"] is None:
            row["cpu_known"] = False
        else:
            row["cpu"] += lease["cpu_seconds"]
        reached = first.setdefault(kind, {})
        for edge in lease["edges"]:
            reached.setdefault(edge, at)
            owner.setdefault(edge, kind)
    cpu_total = sum(row["cpu"] for row in rows.values()) if all(r["cpu_known"] for r in rows.values()) else None
    kinds = {}
    for kind, row in sorted(rows.items()):
        firsts = sum(1 for who in owner.values() if who == kind)
        cpu = round(row["cpu"], 3) if row["cpu_known"] else None
        kinds[kind] = {"family": row["family"], "leases": row["leases"], "edges": len(first[kind]),
                       "edges_first": firsts, "branch_directions": len(row["branches"]),
                       "cpu_seconds": cpu, "cpu_share": _ratio(row["cpu"], cpu_total) if cpu is not None else None,
                       "edges_first_per_cpu_s": _ratio(firsts, cpu), "wall_seconds": round(row["seconds"], 3)}
    fuzzer_kinds = [k for k, row in kinds.items() if row["family"] == FUZZER]
    analysis_kinds = [k for k, row in kinds.items() if row["family"] == ANALYSIS]
    redundancy = None
    if fuzzer_kinds and analysis_kinds:
        fuzzers = _side(first, fuzzer_kinds)
        redundancy = {"fuzzer_kinds": fuzzer_kinds, "analysis_kinds": analysis_kinds,
                      "by_analysis_kind": {k: _redundancy(first[k], fuzzers) for k in analysis_kinds},
                      "analysis_side": _redundancy(_side(first, analysis_kinds), fuzzers)}
    return {
        "format": FORMAT,
        "leases": len(leases),
        "leases_without_commit_line": sum(1 for lease in leases if not lease["committed"]),
        "edges": len(owner),
        "kinds": kinds,
        "single_kind": redundancy is None,
        "redundancy": redundancy,
        "redundant_edge_ratio": redundancy["analysis_side"]["ratio"] if redundancy else None,
        "handoffs": {direction: latency(times) for direction, times in sorted(handoffs.items())},
        "cpu_seconds": round(cpu_total, 3) if cpu_total is not None else None,
    }


def table_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kind for a table: the kind's figures with its redundancy against the fuzzers
    (an analysis kind's) or the fuzzers' side against all analysis kinds (a fuzzer kind's)."""
    redundancy = summary["redundancy"] or {}
    rows = []
    for kind, row in summary["kinds"].items():
        if row["family"] == ANALYSIS and redundancy:
            pair = redundancy["by_analysis_kind"][kind]
            shared, ratio = pair["shared"], pair["ratio"]
            first_here, first_there = pair["shared_first_by_analysis"], pair["shared_first_by_fuzzers"]
        elif redundancy:
            pair = redundancy["analysis_side"]
            shared, ratio = pair["shared"], pair["fuzzer_ratio"]
            first_here, first_there = pair["shared_first_by_fuzzers"], pair["shared_first_by_analysis"]
        else:
            shared = ratio = first_here = first_there = None
        rows.append({"kind": kind, **row, "shared_edges": shared, "redundant_ratio": ratio,
                     "shared_first_here": first_here, "shared_first_other_side": first_there})
    return rows


def _shown(value: Any) -> str:
    return "–" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def markdown(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table per kind, then the hand-offs and the campaign's ratio
    (``symcc-ulfm mechanism`` prints it; the run notebook shows it)."""
    header = ["kind", "family", "leases", "edges", "edges first", "shared with the other side", "redundant ratio",
              "shared: first here / other side", "branch directions", "CPU s", "CPU share", "edges first per CPU s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table_rows(summary):
        firsts = ("–" if row["shared_first_here"] is None
                  else f"{row['shared_first_here']} / {row['shared_first_other_side']}")
        cells = [row["kind"], row["family"], row["leases"], row["edges"], row["edges_first"], row["shared_edges"],
                 row["redundant_ratio"], firsts, row["branch_directions"], row["cpu_seconds"], row["cpu_share"],
                 row["edges_first_per_cpu_s"]]
        lines.append("| " + " | ".join(_shown(c) if not isinstance(c, str) else c for c in cells) + " |")
    handed = "; ".join(f"{direction.replace('_', ' ')}: " + (f"{h['n']} inputs, median {h['median_s']:g} s, p90 "
                                                             f"{h['p90_s']:g} s" if h["n"] else "none")
                       for direction, h in summary["handoffs"].items())
    ratio = ("single kind: no redundant-edge ratio" if summary["single_kind"] else
             f"redundant-edge ratio (analysis side against the fuzzers): {_shown(summary['redundant_edge_ratio'])}")
    return "\n".join(lines) + f"\n\n{summary['edges']} edges in all; {ratio}\n\nhand-offs: {handed}"
