"""The independent oracle: re-reads a state directory with its own parser and judges the run.

It imports nothing from ``symcc_ulfm.core`` or ``symcc_ulfm.store``: canonical JSON, the
layout rule, the promotion rule and the WAL record checks are implemented again here, from
DESIGN.md, so a bug in the runtime cannot hide in the checker.

``judge(state_dir)`` returns a dict with the keys other tools read (DESIGN.md §12) plus
``problems`` (why it failed), ``notes`` and ``summary`` (what ``result_sha256`` is taken over).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .finding_checks import TERMINAL, FindingChecks
from .log_checks import LogChecks, check_capabilities
from .membership_checks import MembershipChecks
from .mix_checks import MixChecks
from .rules import (
    MAX_JSON_BYTES,
    canonical,
    expected_groups,
    parse_json,
    read_file,
    sha256,
)
from .wal_checks import KINDS_FORMAT, WalChecks, attribution

_EVENT = re.compile(r"(\d+):(\d+)(?:@([a-z]+))?(!)?")


def locate_state(path: str | Path) -> Path:
    """Accept a state directory or a run directory holding ``state/``."""
    path = Path(path)
    if os.path.lexists(path / "policy.json"):
        return path
    if os.path.lexists(path / "state" / "policy.json"):
        return path / "state"
    raise FileNotFoundError(f"{path} holds no policy.json (neither a state nor a run directory)")


class _Judge(MembershipChecks, FindingChecks, LogChecks, WalChecks, MixChecks):
    def __init__(self, root: Path):
        self.root = root
        self.problems: list[str] = []
        self.notes: list[str] = []

    def fail(self, message: str) -> None:
        self.problems.append(message)

    def read_json(self, rel: str) -> Any:
        data = read_file(self.root / rel, MAX_JSON_BYTES)
        return parse_json(data, rel), data


def check_exhausted(j: _Judge, policy: dict, records: dict, names: list[str], dropped: set[str], outcome: dict,
                    final: dict) -> None:
    """An early end is only right when nothing was left: every corpus object analyzed (a done
    record), the input of a finding never expanded, or logged as dropped or skipped; no record in flight."""
    if not policy.get("stop_when_exhausted", False):
        j.fail("outcome.json says exhausted, but the policy runs to the deadline")
        return
    unsettled = sorted(w for w, r in records.items() if r["state"] != "done")
    if unsettled:
        j.fail(f"outcome.json says exhausted, but {len(unsettled)} WAL records are not done, e.g. {unsettled[0][:12]}")
    analyzed = {r["input_hash"] for r in records.values() if r["state"] == "done"}
    stopped = {f["sha256"] for r in records.values() if r["state"] == "done"
               for f in r["manifest"].get("findings", []) if f["kind"] in TERMINAL}
    left = sorted(set(names) - analyzed - stopped - dropped)
    if left:
        j.fail(f"outcome.json says exhausted, but {len(left)} corpus objects were never analyzed, e.g. {left[0][:12]}")
    deadline = final["epoch_started_at"] + max(0.0, j.deadline_of(final["epoch"]) - final["consumed_s"])
    j.notes.append(f"the search was exhausted {max(0.0, deadline - outcome.get('ended_at', deadline)):.1f} s "
                   "before the deadline")


def check_budget(j: _Judge, policy: dict, done: dict, final: dict, groups: list) -> None:
    """An end by the budget is only right when the policy has one, the final generation counts it (at
    or after ``stop_from``, no scheduled failure still to come) and every worker of that generation
    has ``stop_after`` done records that its master leased it in it."""
    need, schedule = policy.get("stop_after", 0), parse_schedule(policy["failure_schedule"])
    if not need:
        j.fail("outcome.json says budget-reached, but the policy has no budget (stop_after)")
        return
    generation = final["generation"]
    if generation < policy.get("stop_from", 0) or any(g >= generation for g, _, _ in schedule):
        j.fail(f"outcome.json says budget-reached in generation {generation}, which the budget does not count "
               f"(stop_from {policy.get('stop_from', 0)}, schedule {policy['failure_schedule']!r})")
    for master, *workers in groups:
        for worker in workers:
            results = sum(1 for r in done.values() if (r["manifest"]["master"], r["manifest"]["worker"],
                                                       r["manifest"]["generation"]) == (master, worker, generation))
            if results < need:
                j.fail(f"outcome.json says budget-reached, but worker {worker} has {results} results committed in "
                       f"generation {generation}, fewer than stop_after {need}")
    j.notes.append(f"the budget of {need} results per worker was spent in generation {generation}")


def parse_schedule(text: str) -> list[tuple[int, int, str]]:
    events = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = _EVENT.fullmatch(part)
        if not m:
            raise ValueError(f"failure schedule event {part!r}")
        events.append((int(m[1]), int(m[2]), m[3] or "work"))
    return events


def judge(state_dir: str | Path, minimum_hosts: int | None = None) -> dict[str, Any]:
    root = locate_state(state_dir)
    j = _Judge(root)
    result: dict[str, Any] = {"passed": False, "policy_sha256": None}
    try:
        return _judge(j, result, minimum_hosts)
    except _UNREADABLE as exc:
        j.fail(f"state directory unreadable: {type(exc).__name__}: {exc}")
        result.update(problems=j.problems, notes=j.notes, result_sha256=None)
        return result


# what a malformed file of the judged directory raises while it is checked (a file that is not a
# regular file or is too large raises UnsafeFile instead: exit 4, never a verdict)
_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError)


def _judge(j: _Judge, result: dict[str, Any], minimum_hosts: int | None) -> dict[str, Any]:
    root = j.root
    policy_raw = read_file(root / "policy.json", MAX_JSON_BYTES)
    policy = parse_json(policy_raw, "policy.json")
    policy_sha = result["policy_sha256"] = sha256(policy_raw)
    if policy_raw != canonical(policy):
        j.fail("policy.json is not canonical JSON")
    members = j.membership(policy, policy_sha)
    snaps, receipts = members["snapshots"], members["receipts"]
    final = snaps[-1]
    failed = {r for s in snaps for r in s["failed"]}
    resumes = [r["generation"] for r in receipts if r.get("kind") == "resume"]
    wal = j.wal(snaps, policy["executor"])
    mix_slices = j.mix(policy, wal["done"], snaps)
    corpus = j.corpus(wal["done"], wal["records"])
    findings = j.findings(policy, wal["done"], receipts, set(corpus["names"]))
    logs = j.logs(wal["done"], failed, max(resumes, default=0), (root / "outcome.json").exists())

    kinds = {r["generation"]: r.get("kind") for r in receipts}
    for generation, rank, _phase in parse_schedule(policy["failure_schedule"]):
        hit = [r for r in receipts if r["generation"] > generation and rank in r["missing"]]
        if kinds.get(generation + 1) == "resume":
            j.notes.append(f"scheduled failure {generation}:{rank} not reached: the job was lost and resumed")
        elif not hit:
            j.fail(f"scheduled failure {generation}:{rank} is in no receipt")
    scheduled = {rank for _, rank, _ in parse_schedule(policy["failure_schedule"])}
    unscheduled = sorted(failed - scheduled)
    if unscheduled:
        j.notes.append(f"ranks {unscheduled} failed without being scheduled")

    check_capabilities(j, policy, logs["capabilities"])
    for work, record in wal["done"].items():
        if record["manifest"]["generation"] > final["generation"]:
            j.fail(f"WAL record {work}: committed in generation {record['manifest']['generation']} > final")
    groups = expected_groups(final["active"], final["workers_per_master"])
    live = sorted(set(final["active"]) | set(final["spares"]))
    hosts = final["hosts"]
    surviving_hosts = sorted({hosts[r] for r in live}) if hosts else []
    minimum = policy["minimum_hosts"] if minimum_hosts is None else minimum_hosts
    if len(surviving_hosts) < minimum:
        j.fail(f"{len(surviving_hosts)} surviving hosts {surviving_hosts} < minimum {minimum}")
    done = wal["done"]
    wal_generated = sum(r["manifest"]["generated"] for r in done.values())
    if len(final["active"]) < final["budget"]:
        j.notes.append(f"continued with {len(final['active'])} active endpoints, below the budget of {final['budget']}")
    outcome_path = root / "outcome.json"
    outcome = parse_json(read_file(outcome_path), "outcome.json") if outcome_path.exists() else {}
    if outcome.get("status") not in ("deadline-reached", "exhausted", "budget-reached"):
        j.fail(f"campaign outcome is {outcome.get('status')!r}, not 'deadline-reached', 'exhausted' or 'budget-reached'")
    elif outcome.get("final_generation") != final["generation"] or outcome.get("policy_sha256") != policy_sha:
        j.fail("outcome.json names another final generation or policy than the membership files")
    elif outcome["status"] == "exhausted":
        check_exhausted(j, policy, wal["records"], corpus["names"], logs["dropped"], outcome, final)
    elif outcome["status"] == "budget-reached":
        check_budget(j, policy, done, final, groups)
    else:
        # an epoch ends at its start plus what is left of the deadline budget, never earlier
        deadline = final["epoch_started_at"] + max(0.0, j.deadline_of(final["epoch"]) - final["consumed_s"])
        if outcome.get("ended_at", 0.0) < deadline - 0.5:
            j.fail(f"outcome.json says deadline-reached {deadline - outcome.get('ended_at', 0.0):.1f} s "
                   "before the deadline")
    if logs["logged_analyzed"] > len(done) or logs["logged_generated"] > wal_generated:
        j.fail("logged totals exceed the WAL totals")
    public = corpus["names"]
    unique = len(corpus["claimed"])
    if unique + len(corpus["seeds"]) + len(corpus["pending"]) != len(public):
        j.fail(
            f"public objects {len(public)} != seeds {len(corpus['seeds'])} + counted unique {unique} "
            f"+ pending {len(corpus['pending'])}"
        )
    novel = sum(
        1 for r in done.values() for o in r["manifest"]["objects"] if o["novel"] and o["sha256"] in r["done"]["claimed"]
    )
    slices = [w for w, r in done.items() if r["format"] == KINDS_FORMAT and r["manifest"].get("slice") is not None]
    endpoint_path = root / "endpoint.json"
    endpoint = parse_json(read_file(endpoint_path), "endpoint.json") if endpoint_path.exists() else {}
    if "error" in endpoint:
        j.notes.append(f"endpoint coverage not measured: {endpoint['error']}")
    summary = {
        "policy_sha256": policy_sha,
        "final_generation": final["generation"],
        "receipts": [{"generation": r["generation"], "missing": r["missing"]} for r in receipts],
        "promoted": [p for r in receipts for p in r["promoted"]],
        "final_active": final["active"],
        "masters": [g[0] for g in groups],
        "workers": [w for g in groups for w in g[1:]],
        "surviving_hosts": len(surviving_hosts),
        "wal_analyzed": len(done) - len(slices),
        "wal_generated": wal_generated,
        "wal_unique": unique,
        "wal_novel": novel,
        "public_objects": len(public),
        "corpus_sha256": sha256("\n".join(public).encode()),
        "endpoint_edges": endpoint.get("edges"),
        "findings_unique": findings["unique"],
        "findings_hits": findings["hits"],
    }
    if any(r["format"] == KINDS_FORMAT for r in done.values()):
        summary.update(wal_slices=len(slices), attribution=attribution(done))
    passed = not j.problems
    summary["passed"] = passed
    result.update(summary)
    result.update(
        passed=passed,
        result_sha256=sha256(canonical(summary)),
        surviving_host_names=surviving_hosts,
        epochs=final["epoch"] + 1,
        lost_objects=len(set(corpus["claimed"]) - set(public)),
        double_counted=corpus["double_counted"],
        logged_analyzed=logs["logged_analyzed"],
        logged_generated=logs["logged_generated"],
        injected=[e.get("spec") for e in logs["injected"]],
        findings=findings["list"],
        lent_slices=j.lent,  # done slices of analysis workers lent to a fuzzer kind (part of its attribution)
        mix_slices=mix_slices,  # of them, lent by the adaptive mix while inputs were queued (each decision checked)
        problems=j.problems,
        notes=j.notes,
        summary=summary,
    )
    return result
