"""The oracle's check of the adaptive mix of kinds (policy ``mix`` ``adaptive``).

Written from docs/worker-kinds.md ("The mix of kinds") without the runtime's code. A slice that
the mix lent to an analysis worker has its decision in its manifest (``mix``) and that decision's
SHA-256 in its slice descriptor (whose SHA-256 is the record's input hash: the decision was fixed
when the slice was leased). For each such done record the oracle checks that

* the policy's mix is adaptive, and the decision is the one the descriptor names;
* its inputs match the WAL: the group's analysis and fuzzer slot counts are those of the layout
  rule; every record of its windows (at most ``WINDOW`` a kind) is a done record of that kind, of
  that generation or an older one, other than the slice itself, with the new edges and CPU seconds
  the decision says (``new_edges``, else the novel objects; ``stats.cpu_seconds``, else
  ``stats.seconds``);
* the decision follows from them by the rule, computed again here, and the worker is one of the
  last ``lent`` analysis workers of its group.

What the WAL cannot show is taken from the decision as recorded: the slots the master's previous
decision lent (``previous``), whether inputs that added coverage were queued (``novel_queued``) and
how many fuzzer records had been counted since the last analysis record (``stale``).
"""

from __future__ import annotations

from .rules import canonical, expected_groups, kind_in, sha256

RULE = "symcc-ulfm-mix/1"
WINDOW = 8
MIN_SAMPLES = 2
STALE_AFTER = 16
MARGIN = 0.25
MIN_CPU_S = 0.01
_DECISION_KEYS = {"rule", "analysis", "fuzzer", "slots", "previous", "novel_queued", "stale", "window", "lent",
                  "reason"}


def measured(manifest: dict) -> tuple[int, float]:
    """A done record's new edges and CPU seconds, as the mix counts them."""
    edges = manifest.get("new_edges")
    if edges is None:
        edges = sum(1 for o in manifest["objects"] if o["novel"])
    stats = manifest["stats"]
    return int(edges), float(stats["cpu_seconds"] if "cpu_seconds" in stats else stats.get("seconds", 0.0))


def rate(entries: list) -> float:
    """New edges per CPU-second of a window's ``[work, edges, cpu]`` entries."""
    cpu = 0.0
    for entry in entries:
        cpu += entry[2]
    return sum(entry[1] for entry in entries) / max(cpu, MIN_CPU_S)


def _wanted(decision: dict, analyzing: int, slots: int) -> tuple[int, str]:
    """The analysis slots the yields ask for, before the floor, and why."""
    mine, theirs = decision["window"][decision["analysis"]], decision["window"][decision["fuzzer"]]
    if len(mine) < MIN_SAMPLES or decision["stale"] >= STALE_AFTER:
        return max(analyzing, 1), "explore"
    if len(theirs) < MIN_SAMPLES:
        return analyzing, "unmeasured"
    ours, other = rate(mine), rate(theirs)
    if ours + other == 0:
        return analyzing, "no-yield"
    share = slots * ours / (ours + other)
    if abs(share - analyzing) <= 0.5 + MARGIN:
        return analyzing, "band"
    return int(share + 0.5), "yield"


def expected(decision: dict) -> tuple[int, str]:
    """``(lent, reason)`` the rule gives for a decision's inputs."""
    analysis_slots, fuzzer_slots = decision["slots"]
    analyzing = analysis_slots - min(max(decision["previous"], 0), analysis_slots)
    wanted, reason = _wanted(decision, analyzing, analysis_slots + fuzzer_slots)
    if decision["novel_queued"] and wanted < 1:
        wanted, reason = 1, "floor"
    return analysis_slots - min(wanted, analysis_slots), reason


class MixChecks:
    """Mixin of the oracle's judge: needs ``fail``, ``slots`` and ``lent_kind``."""

    def mix(self, policy: dict, done: dict, snaps: list[dict]) -> int:
        """Check every decision of the adaptive mix; the number of slices it lent."""
        adaptive = policy.get("mix", "fixed") == "adaptive"
        groups = {s["generation"]: expected_groups(s["active"], s["workers_per_master"]) for s in snaps}
        lent = 0
        for work, record in sorted(done.items()):
            manifest = record["manifest"]
            decision, sliced = manifest.get("mix"), manifest.get("slice")
            named = isinstance(sliced, dict) and "mix" in sliced
            if decision is None and not named:
                continue
            if not adaptive:
                self.fail(f"WAL record {work}: a slice lent by the adaptive mix, but the policy's mix is fixed")
            elif decision is None or not named or sha256(canonical(decision)) != sliced["mix"]:
                self.fail(f"WAL record {work}: its mix decision is not the one its slice descriptor names "
                          "(written or changed after the lease)")
            else:
                group = next((g for g in groups.get(manifest["generation"], [])
                              if g[0] == manifest["master"] and manifest["worker"] in g[1:]), None)
                problem = self._decision_problem(work, manifest, decision, group, policy["executor"], done)
                if problem is not None:
                    self.fail(f"WAL record {work}: mix decision {problem}")
                else:
                    lent += 1
        return lent

    def _decision_problem(self, work: str, manifest: dict, decision: dict, group: list[int] | None,
                          executor: str, done: dict) -> str | None:
        """What is wrong with one decision, or None."""
        if not isinstance(decision, dict) or set(decision) != _DECISION_KEYS or decision["rule"] != RULE:
            return f"is not a decision of {RULE}"
        if decision["analysis"] != executor or decision["fuzzer"] != manifest["kind"] \
                or decision["fuzzer"] != self.lent_kind:
            return (f"lends {decision['analysis']!r} slots to {decision['fuzzer']!r}; the campaign lends "
                    f"{executor!r} slots to {self.lent_kind!r}")
        if group is None:
            return "names no group of the layout"
        analysts = [w for w in group[1:] if kind_in(group, w, self.slots, executor) == executor]
        if decision["slots"] != [len(analysts), len(group) - 1 - len(analysts)]:
            return f"counts slots {decision['slots']}; the group has {len(analysts)} analysis of {len(group) - 1}"
        for kind in (decision["analysis"], decision["fuzzer"]):
            entries = decision["window"].get(kind, [])
            if len(entries) > WINDOW or set(decision["window"]) != {decision["analysis"], decision["fuzzer"]}:
                return f"has a window of {len(entries)} {kind!r} records (at most {WINDOW} of each of its two kinds)"
            for entry in entries:
                other = done.get(entry[0]) if isinstance(entry, list) and len(entry) == 3 else None
                if other is None or entry[0] == work or "quarantine" in other["manifest"]:
                    return f"names {str(entry)[:80]} in its window: not a done record of the WAL it could measure"
                fact = other["manifest"]
                if fact["kind"] != kind or fact["generation"] > manifest["generation"] \
                        or [entry[1], entry[2]] != list(measured(fact)):
                    return (f"says {entry[0][:12]} ({kind}) added {entry[1]} edges in {entry[2]} CPU-s; the WAL "
                            f"says {fact['kind']} {list(measured(fact))}, generation {fact['generation']}")
        lent, reason = expected(decision)
        if (decision["lent"], decision["reason"]) != (lent, reason):
            return (f"lends {decision['lent']} ({decision['reason']}); its inputs give {lent} ({reason})")
        if manifest["worker"] not in analysts[len(analysts) - lent:]:
            return f"lends the last {lent} analysis workers of {analysts}, not worker {manifest['worker']}"
        return None
