"""The oracle's findings checks: every finding of a done manifest, quarantines, and the recount.

Written from DESIGN.md §8 without the runtime's code: a finding record is ``{kind, signature,
detail, sha256, time}`` with kind ``exception``, ``crash``, ``hang``, ``oom`` or ``protocol`` (a
sandbox child that answered out of protocol), and must name the
record's input or one of its manifest's objects, which must be in the corpus. A unique finding
is a ``(kind, signature)`` pair; its hits are the distinct inputs that produced it. A quarantine
(a poison input settled without running it) must be backed by ``poison_deaths`` leases of the
record that ended with their worker in the missing set of the recovery closing their
generation, each named by that worker's running marker.
"""

from __future__ import annotations

import math
import os
import re
import stat
from typing import Any

_KINDS = ("exception", "crash", "hang", "oom", "protocol")
TERMINAL = ("crash", "hang", "oom", "protocol")  # kinds whose inputs the search never expands
_KEYS = {"kind", "signature", "detail", "sha256", "time"}
_SHA = re.compile(r"[0-9a-f]{64}")


class FindingChecks:
    """Mixin of the oracle's judge: needs ``fail`` and ``root``."""

    def findings(self, policy: dict, done: dict, receipts: list[dict], corpus_names: set[str]) -> dict:
        occurrences: set[tuple[str, str, str]] = set()
        died = {r["generation"] - 1: set(r["missing"]) for r in receipts if r.get("kind", "recovery") == "recovery"}
        for work, record in done.items():
            manifest = record["manifest"]
            items = manifest.get("findings", [])  # records written before findings existed have none
            if not isinstance(items, list):
                self.fail(f"WAL record {work}: findings is not a list")
                continue
            inputs = {o["sha256"] for o in manifest["objects"]} | {record["input_hash"]}
            for item in items:
                if not self._finding_ok(work, item):
                    continue
                if item["sha256"] not in inputs:
                    self.fail(f"WAL record {work}: a {item['kind']} finding names {item['sha256'][:12]}, "
                              "neither the record's input nor one of its objects")
                elif item["sha256"] not in corpus_names:
                    self.fail(f"WAL record {work}: the input of a {item['kind']} finding is not in the corpus")
                occurrences.add((item["kind"], item["signature"], item["sha256"]))
            if "quarantine" in manifest:
                self._quarantine(work, record, policy.get("poison_deaths", 2), died)
        unique = sorted({(k, s) for k, s, _ in occurrences})
        return {"unique": len(unique), "hits": len(occurrences),
                "list": [{"kind": k, "signature": s, "hits": sum(1 for o in occurrences if o[:2] == (k, s))}
                         for k, s in unique]}

    def _finding_ok(self, work: str, item: Any) -> bool:
        ok = (isinstance(item, dict) and set(item) == _KEYS and item["kind"] in _KINDS
              and isinstance(item["signature"], str) and item["signature"]
              and isinstance(item["detail"], str) and isinstance(item["sha256"], str) and _SHA.fullmatch(item["sha256"])
              and type(item["time"]) in (int, float) and math.isfinite(item["time"]))
        if not ok:
            self.fail(f"WAL record {work}: a finding record is malformed: {str(item)[:200]}")
        return bool(ok)

    def _quarantine(self, work: str, record: dict, needed: int, died: dict[int, set[int]]) -> None:
        manifest = record["manifest"]
        strikes = manifest["quarantine"].get("strikes") if isinstance(manifest["quarantine"], dict) else None
        findings = manifest.get("findings", [])
        if manifest["worker"] != manifest["master"] or manifest["objects"] or manifest["generated"] != 0:
            self.fail(f"WAL record {work}: a quarantine must be settled by its master alone, with no objects")
        if len(findings) != 1 or findings[0].get("kind") != "crash" or findings[0].get("sha256") != record["input_hash"]:
            self.fail(f"WAL record {work}: a quarantine must record one crash finding of its input")
        if not isinstance(strikes, list) or len(strikes) < needed:
            self.fail(f"WAL record {work}: quarantined with fewer than {needed} worker deaths")
            return
        held = {(h.get("generation"), h.get("worker"), h.get("token")) for h in record["history"]}
        for strike in strikes:
            key = (strike.get("generation"), strike.get("worker"), strike.get("token"))
            if key not in held:
                self.fail(f"WAL record {work}: quarantine strike {key} is not a lease of the record")
            elif key[1] not in died.get(key[0], set()):
                self.fail(f"WAL record {work}: worker {key[1]} did not die in generation {key[0]}")
            elif self._marker(key[1], key[0]) != key[2]:
                self.fail(f"WAL record {work}: worker {key[1]}'s running marker of generation {key[0]} "
                          "does not name the struck lease")

    def _marker(self, worker: int, generation: int) -> str | None:
        path = self.root / "staging" / f"worker-{worker}" / f"running-{generation}"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return os.read(fd, 256).decode("ascii", "replace").strip() or None
        finally:
            os.close(fd)
