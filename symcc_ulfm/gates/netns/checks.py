"""What the cross-node gate asserts, read back from the state directory after the job.

The rank logs are read with the log format's reader (``store.runlog``); snapshots and corpus
objects with plain JSON and hashlib (the oracle, run by the gate as well, re-reads everything
with its own parser). Each check returns ``(facts, problems)``; facts go into ``gate.json``,
problems fail the gate.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...core.hosts import host_of_rank, parse_hosts
from ...core.modes import SNAPSHOT_MODE_VAR
from ...store.paths import StateDir
from ...store.runlog import Event, read_log
from .topology import Host

# The single-host reference run (10 ranks, 2 spares, 3 workers per master, schedule 0:2,1:3).
EXPECTED = {"final_generation": 2, "promoted": [8, 9], "final_active": [0, 1, 4, 5, 6, 7, 8, 9], "surviving_hosts": 2}
READ_EVENT = Event.CORPUS_READ_VERIFIED


def check_oracle(verdict: dict, state: Path) -> tuple[dict, list[str]]:
    """The oracle passed with the reference membership, and the campaign ended by its budget (not
    at its deadline, which only bounds a run that went wrong)."""
    problems = [] if verdict.get("passed") else [f"oracle: {p}" for p in verdict.get("problems", [])] or ["oracle failed"]
    for key, want in EXPECTED.items():
        if verdict.get(key) != want:
            problems.append(f"{key} is {verdict.get(key)!r}; the single-host reference run gives {want!r}")
    outcome_path = StateDir(state).outcome
    outcome = json.loads(outcome_path.read_text())["status"] if outcome_path.exists() else None
    if outcome != "budget-reached":
        problems.append(f"the campaign ended {outcome!r}, not by its budget (budget-reached)")
    keys = ("passed", "result_sha256", "final_generation", "receipts", "promoted", "final_active", "masters",
            "workers", "surviving_hosts", "surviving_host_names", "wal_analyzed", "public_objects")
    return {**{k: verdict.get(k) for k in keys}, "outcome": outcome}, problems


def rank_hosts(state: Path) -> list[str]:
    """The host of each stable rank, as the generation-0 snapshot recorded it (empty without one)."""
    path = StateDir(state).snapshot(0)
    return json.loads(path.read_text())["hosts"] if path.exists() else []


def check_placement(state: Path, spec: str, hosts: tuple[Host, ...]) -> tuple[list[dict], list[str]]:
    """Each rank ran on the host the spec maps it to, as that host's user (owner of its log file)."""
    recorded = rank_hosts(state)
    parsed = parse_hosts(spec)
    by_name = {h.name: h for h in hosts}
    facts: list[dict] = []
    problems = [] if recorded else ["no generation-0 snapshot: the hosts of the ranks were never recorded"]
    for rank, name in enumerate(recorded):
        log = StateDir(state).rank_log(rank)
        uid = log.stat().st_uid if log.exists() else None
        facts.append({"rank": rank, "host": name, "log_uid": uid})
        if name != host_of_rank(parsed, rank):
            problems.append(f"rank {rank} recorded host {name!r}; {spec} maps it to {host_of_rank(parsed, rank)!r}")
        elif uid != by_name[name].uid:
            problems.append(f"rank {rank} on {name}: its log is owned by uid {uid}, not {by_name[name].uid}")
    return facts, problems


def check_remote_reads(state: Path, remote: Host) -> tuple[list[dict], list[str]]:
    """A rank of ``remote`` read a corpus object back and verified it; recompute its digest here too."""
    facts, problems = [], []
    for rank, name in enumerate(rank_hosts(state)):
        log = StateDir(state).rank_log(rank)
        if name != remote.name or not log.exists():
            continue
        for event in (row for row in read_log(log) if row.get("event") == READ_EVENT):
            path = state / "corpus" / "objects" / event["sha256"]
            data = path.read_bytes() if path.is_file() else None
            recomputed = hashlib.sha256(data).hexdigest() if data is not None else None
            facts.append({"rank": rank, "host": name, "generation": event["generation"], "sha256": event["sha256"],
                          "length": event["length"], "object": path.relative_to(state).as_posix(),
                          "recomputed_sha256": recomputed, "recomputed_length": None if data is None else len(data)})
            if recomputed != event["sha256"] or len(data or b"") != event["length"]:
                problems.append(f"rank {rank} read {event['sha256']} but the corpus holds {recomputed} "
                                f"({facts[-1]['recomputed_length']} bytes)")
    if not facts:
        problems.append(f"no rank on {remote.name} logged {READ_EVENT}: host B never read a corpus object back")
    return facts, problems


def check_wrong_mode(job: Any, state: Path, verdict: dict, startup_s: float) -> tuple[dict, list[str]]:
    """With the default 0600 the host-B rank cannot read the state: a quick, clear, non-zero failure."""
    output = job.output_path.read_text(errors="replace") if job.output_path.exists() else ""
    # The host-B rank's own message, then the one every other rank relays ("another rank could not start").
    messages = sorted({line.strip() for line in output.splitlines() if SNAPSHOT_MODE_VAR in line}, key=len)
    accepted = [p.name for p in (StateDir(state).snapshot(0), StateDir(state).outcome)
                if p.exists()]
    facts = {"returncode": job.returncode, "seconds": round(job.seconds, 3), "timed_out": job.timed_out,
             "message": messages[0] if messages else None, "messages": messages, "oracle_passed": verdict.get("passed"),
             "written": accepted}
    problems = []
    if job.returncode == 0:
        problems.append("wrong mode: the launch exited 0")
    if job.timed_out or job.seconds >= startup_s:
        problems.append(f"wrong mode: the launch took {job.seconds:.1f} s (timed out: {job.timed_out}), not a quick failure")
    if not messages:
        problems.append(f"wrong mode: no message naming {SNAPSHOT_MODE_VAR} in the job output")
    unexpected = [line.strip() for line in output.splitlines() if "rank error (exit 70)" in line]
    if unexpected:  # a rank stranded in the start-up exchange by a peer that left too soon
        problems.append(f"wrong mode: {len(unexpected)} rank(s) ended with an unexpected error: {unexpected[0]}")
    if accepted or verdict.get("passed"):
        problems.append(f"wrong mode: something was accepted ({accepted}, oracle passed {verdict.get('passed')})")
    return facts, problems
