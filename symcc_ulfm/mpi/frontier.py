"""A master's view of the campaign's frontier: what to analyze next, what counted, where it goes.

At the start of each generation (DESIGN.md §6.8) the new master first replays the WAL's
``committing`` records it owns, then reclaims lapsed leases (records leased in an older
generation are not settled: their inputs are queued again, ahead of everything else, unless
they killed too many workers, ``core.poison``), then rebuilds its queue from the corpus: every
object it owns under rendezvous ownership and no done record analyzed. Priorities, hints and
coverage come back from the done manifests, so nothing depends on the memory of a master that
died. Inputs of a ``crash``, ``hang`` or ``oom`` finding are never queued (``core.finding``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core import envelope
from ..core.finding import TERMINAL_KINDS
from ..core.frontier import (
    PRIORITY_NOVEL,
    PRIORITY_RECLAIMED,
    PRIORITY_SEED,
    PRIORITY_UNIQUE,
    FrontierQueue,
)
from ..errors import FenceError, IntegrityError, ProtocolError
from .context import RankContext


class Frontier:
    def __init__(self, ctx: RankContext, masters: tuple[int, ...]):
        self.ctx = ctx
        self.masters = masters
        self.sched = FrontierQueue(ctx.stable, masters)
        self.priority: dict[str, int] = {}
        self.hints: dict[str, dict | None] = {}
        self.totals = {"analyzed": 0, "generated": 0, "unique": 0, "novel": 0, "findings": 0}
        self.outgoing: list[tuple[int, bytes]] = []  # FRONTIER messages of replays, sent by the loop
        self.items_sent = 0  # FRONTIER messages that carried inputs, sent and received (core.termination)
        self.items_received = 0

    def prepare(self, committer: dict, quarantine: Callable[[list[dict]], set[str]]) -> None:
        """Replay committing records, reclaim lapsed leases (``quarantine`` settles the poison
        ones and returns their inputs), rebuild the frontier (in that order)."""
        mark = time.monotonic()
        records = self._trusted_records()
        replayed = 0
        for record in records:
            if record["state"] == "committing" and self.sched.owns(record["input_hash"]):
                replayed += self.replay(record["work_hash"], committer)
        records = self._trusted_records() if replayed else records
        settled: set[str] = set()
        lapsed = []
        for record in records:
            if record["state"] == "done":
                settled.add(record["input_hash"])
                settled |= self._learn(record)
            elif record["state"] == "leased" and record["lease"]["generation"] < committer["generation"]:
                if self.sched.owns(record["input_hash"]):
                    lapsed.append(record)
        quarantined = quarantine(lapsed)
        settled |= quarantined
        for name in settled:
            self.sched.forget(name)
        for record in lapsed:  # work that was in flight goes first
            self.sched.offer(record["input_hash"], PRIORITY_RECLAIMED)
        corpus = self.ctx.corpus
        for name in corpus.names():
            if name not in settled:
                default = PRIORITY_SEED if corpus.is_seed(name) else PRIORITY_UNIQUE
                self.sched.offer(name, self.priority.get(name, default))
        self.ctx.log.event("master-ready", replayed=replayed, reclaimed=len(lapsed) - len(quarantined),
                           quarantined=len(quarantined), frontier=self.sched.pending,
                           seconds=time.monotonic() - mark, masters=list(self.masters))

    def _trusted_records(self) -> list[dict]:
        records = []
        for work, record, problem in self.ctx.wal.scan():
            if problem is not None:
                self.ctx.log.event("integrity-error", work_hash=work, error=str(problem))
            else:
                records.append(record)
        return records

    def _learn(self, record: dict) -> set[str]:
        """Priorities, hints and coverage of a done record; the inputs it says must not be queued."""
        claimed = set(record["done"]["claimed"])
        for obj in record["manifest"]["objects"]:
            if obj["sha256"] in claimed:
                self.priority[obj["sha256"]] = PRIORITY_NOVEL if obj["novel"] else PRIORITY_UNIQUE
                self.hints[obj["sha256"]] = obj["hint"]
                self.sched.absorb(obj["coverage"])
        return terminal(record["manifest"])

    def replay(self, work: str, committer: dict) -> int:
        """Replay one committing record; an integrity error leaves it committing (never overwritten)."""
        try:
            done = self.ctx.wal.replay_commit_once(work, committer)
        except IntegrityError as exc:
            self.ctx.log.event("integrity-error", work_hash=work, error=str(exc))
            return 0
        if {k: done["done"][k] for k in ("generation", "master")} != committer:
            return 0  # another master marked it done first and counts it
        # peers may have scanned the corpus before these objects existed: tell their owners
        self.outgoing += self.account(done, limit=self.ctx.policy.max_message_bytes)
        return 1

    def account(self, record: dict, limit: int) -> list[tuple[int, bytes]]:
        """Count a durable done record, learn its coverage, route its new objects.

        Returns the FRONTIER messages for peer masters (their new inputs and the new coverage).
        A record is a replay when it was marked done by another master or generation than the
        one that wrote its manifest.
        """
        manifest, done = record["manifest"], record["done"]
        replayed = (manifest["master"], manifest["generation"]) != (done["master"], done["generation"])
        claimed = set(done["claimed"])
        objects = [o for o in manifest["objects"] if o["sha256"] in claimed]
        novel = [o for o in objects if o["novel"]]
        stopped = terminal(manifest)
        for name in stopped:
            self.sched.forget(name)
        new_coverage: set[int] = set()
        for obj in objects:
            new_coverage |= self.sched.absorb(obj["coverage"])
            self.hints[obj["sha256"]] = obj["hint"]
            self.priority[obj["sha256"]] = PRIORITY_NOVEL if obj["novel"] else PRIORITY_UNIQUE
        self.sched.forget(record["input_hash"])
        self.totals["analyzed"] += 1
        self.totals["generated"] += manifest["generated"]
        self.totals["unique"] += len(objects)
        self.totals["novel"] += len(novel)
        self.totals["findings"] += len(manifest["findings"])
        self.ctx.log.event(
            "commit", work_hash=record["work_hash"], worker=manifest["worker"], generated=manifest["generated"],
            unique=len(objects), novel=len(novel), replayed=replayed, findings=len(manifest["findings"]),
            executions=manifest["stats"].get("executions", 0), edges=len(self.sched.coverage),
        )
        forward = self.sched.route([(o["sha256"], self.priority[o["sha256"]]) for o in objects
                                    if o["sha256"] not in stopped])
        out = []
        for m in self.masters:
            if m == self.ctx.stable or (m not in forward and not new_coverage):
                continue
            items = [{"input_hash": h, "priority": p, "hint": self.hints.get(h)} for h, p in forward.get(m, [])]
            self.items_sent += bool(items)
            out.append((m, envelope.encode("FRONTIER", limit, generation=self.ctx.generation, master=self.ctx.stable,
                                           items=items, coverage=sorted(new_coverage))))
        return out

    def on_frontier(self, source: int, raw: bytes, generation: int, limit: int) -> None:
        try:
            message = envelope.decode(raw, limit)
            if message["type"] != "FRONTIER" or message["generation"] != generation or message["master"] != source:
                raise FenceError(f"{message['type']} of generation {message['generation']} from master {source}")
        except (ProtocolError, FenceError) as exc:
            self.ctx.log.limited("message-rejected", source, source=source, reason=str(exc))
            return
        self.sched.absorb(message["coverage"])
        self.items_received += bool(message["items"])
        for item in message["items"]:
            self.hints[item["input_hash"]] = item["hint"]
            self.sched.offer(item["input_hash"], item["priority"])


def terminal(manifest: dict) -> set[str]:
    """Inputs of the manifest's ``crash``, ``hang`` and ``oom`` findings: never expanded further."""
    return {f["sha256"] for f in manifest["findings"] if f["kind"] in TERMINAL_KINDS}
