"""The oracle's checks of the per-rank logs: logged commits against the WAL, capabilities.

A rank log is a file of JSON lines written by one rank. A last line without its newline is a
write that a crash or a full disk cut short: like a torn WAL append it never happened, and it
is noted, never a failure; any other line that is not a JSON object fails the run.
"""

from __future__ import annotations

import json

from .rules import lines


class LogChecks:
    """Mixin of the oracle's judge: needs ``fail``, ``notes`` and ``root``."""

    def logs(self, done: dict, failed: set[int], restarted_before: int, finished: bool) -> dict:
        """Logged commits against the WAL.

        A done record may lack its log line only when its master died right after marking it
        done: a failed master, a master killed with its whole job before a resume, or any
        master of a job that never finished (which fails the run anyway, for its outcome).
        """
        logged: dict[str, dict] = {}
        injected = []
        # inputs a master gave up on (rejected results, refused leases) or, choosing by uncovered edges,
        # skipped because every edge of their paths had been analyzed
        dropped: set[str] = set()
        capabilities: dict[int, dict] = {}
        torn = []
        for path in sorted((self.root / "logs").glob("rank-*.jsonl")):
            for line, complete in lines(path):
                if not complete:  # a last write cut short (a full disk, a crash): never a logged event
                    torn.append(path.name)
                    continue
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    self.fail(f"{path.name}: a line is not JSON")
                    continue
                if not isinstance(event, dict):
                    self.fail(f"{path.name}: a line is not a JSON object")
                    continue
                if event.get("event") == "commit":
                    if event["work_hash"] in logged:
                        self.fail(f"work {event['work_hash'][:12]} logged as committed twice")
                    logged[event["work_hash"]] = event
                elif event.get("event") == "inject":
                    injected.append(event)
                elif event.get("event") in ("input-dropped", "lease-refused", "input-skipped"):
                    dropped.add(event.get("input_hash"))
                elif event.get("event") == "capability":
                    capabilities[event["rank"]] = event["facts"]
        for work, event in logged.items():
            record = done.get(work)
            if record is None:
                self.fail(f"work {work[:12]} logged as committed but not done in the WAL")
            elif event["generated"] != record["manifest"]["generated"]:
                self.fail(f"work {work[:12]}: logged generated {event['generated']} != WAL {record['manifest']['generated']}")
        unlogged = [w for w in done if w not in logged]
        for work in unlogged:
            killed_with_its_job = done[work]["done"]["generation"] < restarted_before or not finished
            if done[work]["done"]["master"] not in failed and not killed_with_its_job:
                self.fail(f"work {work[:12]} is done in the WAL but its (surviving) master never logged it")
        if unlogged:
            self.notes.append(f"{len(unlogged)} done records were committed by masters that died before logging")
        if torn:
            self.notes.append(f"{', '.join(torn)} end in a torn line (a write cut short; ignored)")
        return {
            "capabilities": capabilities,
            "logged_analyzed": len(logged),
            "logged_generated": sum(e["generated"] for e in logged.values()),
            "injected": injected,
            "dropped": dropped,
        }




def check_capabilities(j: LogChecks, policy: dict, capabilities: dict[int, dict]) -> None:
    """Every rank must have logged working ULFM, enabled at runtime, when the policy asks for it."""
    if sorted(capabilities) != list(range(policy["ranks"])):
        j.fail(f"capability records from ranks {sorted(capabilities)}, expected all {policy['ranks']}")
    if not policy["ulfm"]:
        return
    lacking = sorted(r for r, f in capabilities.items() if not all(f.get(k) for k in ("ft_enabled", "revoke",
                                                                                       "shrink", "agree")))
    if lacking:
        j.fail(f"ranks {lacking} ran without working ULFM (mpiexec --with-ft ulfm missing?)")
