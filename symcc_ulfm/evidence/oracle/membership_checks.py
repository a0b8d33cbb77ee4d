"""The oracle's membership checks: snapshot chain, receipts, prepares, layouts, resumes, and the
deadline in force for each epoch.

A campaign's deadline is the policy's ``deadline_s`` unless a resume extended it: then
``deadline.json`` (canonical JSON ``{format: "symcc-ulfm-deadline/1", policy_sha256, extensions:
[{from_epoch, deadline_s}, ...]}``) names the policy and lists the extensions, each from a later
epoch and longer than the deadline before it; the deadline of epoch ``e`` is the last extension
from an epoch ``<= e``. A resume charges the epoch it follows at most that epoch's deadline.
"""

from __future__ import annotations

import math
import os
import re

from .rules import canonical, expected_groups, expected_kinds, kind_in, lent_kind, sha256


class MembershipChecks:
    """Mixin of the oracle's judge: needs ``fail``, ``read_json``, ``notes`` and ``root``."""

    # -- membership ----------------------------------------------------------------------

    def membership(self, policy: dict, policy_sha: str) -> dict:
        self.policy_deadline_s = policy["deadline_s"]
        self.extensions = self.read_deadlines(policy, policy_sha)
        wpm = policy["workers_per_master"]
        self.slots = expected_kinds(policy)
        self.lent_kind = lent_kind(policy, self.slots)
        self.lent: dict[str, int] = {}  # slices run by analysis workers lent to a fuzzer kind, per kind
        snaps: list[dict] = []
        snap0, raw0 = self.read_json("membership/generation-0-snapshot.json")
        if raw0 != canonical(snap0):
            self.fail("generation-0 snapshot is not canonical JSON")
        if snap0.get("policy_sha256") != policy_sha:
            self.fail("generation-0 snapshot names another policy")
        budget = policy["ranks"] - policy["warm_spares"]
        if (snap0["active"] != list(range(budget)) or snap0["spares"] != list(range(budget, policy["ranks"]))
                or snap0["failed"] != []):
            self.fail("generation 0 does not start with the lowest ranks active and the highest as spares")
        self.check_layout(0, snap0, wpm)
        snaps.append(snap0)
        receipts = []
        names = sorted(
            int(m[1]) for p in (self.root / "membership").iterdir() if (m := re.fullmatch(r"receipt-(\d+)\.json", p.name))
        )
        if names != list(range(1, len(names) + 1)):
            self.fail(f"receipts are not consecutive from 1: {names}")
        previous, previous_raw = snap0, raw0
        for g in names:
            receipt, raw = self.read_json(f"membership/receipt-{g}.json")
            snap, snap_raw = self.read_json(f"membership/generation-{g}-snapshot.json")
            if raw != canonical(receipt) or snap_raw != canonical(snap):
                self.fail(f"generation {g}: receipt or snapshot is not canonical JSON")
            if receipt["previous_sha256"] != sha256(previous_raw) or snap.get("previous_sha256") != sha256(previous_raw):
                self.fail(f"receipt-{g} does not chain to the snapshot of generation {g - 1}")
            if receipt["snapshot_sha256"] != sha256(snap_raw):
                self.fail(f"receipt-{g} names a snapshot other than generation-{g}-snapshot.json")
            if receipt["layout_sha256"] != snap.get("layout_sha256"):
                self.fail(f"receipt-{g} and its snapshot name different layouts")
            self.check_transition(g, previous, snap, receipt)
            self.check_layout(g, snap, wpm)
            receipts.append(receipt)
            snaps.append(snap)
            previous, previous_raw = snap, snap_raw
        return {"snapshots": snaps, "receipts": receipts}

    def read_deadlines(self, policy: dict, policy_sha: str) -> list[tuple[int, float]]:
        """The extensions of ``deadline.json`` as ``(from_epoch, deadline_s)``; none without the file
        or when it is wrong (a problem then)."""
        if not os.path.lexists(self.root / "deadline.json"):
            return []
        value, raw = self.read_json("deadline.json")
        if not isinstance(value, dict) or raw != canonical(value) \
                or set(value) != {"format", "policy_sha256", "extensions"} \
                or value["format"] != "symcc-ulfm-deadline/1" or not isinstance(value["extensions"], list):
            self.fail("deadline.json is not a canonical deadline record")
            return []
        if value["policy_sha256"] != policy_sha:
            self.fail("deadline.json names another policy")
            return []
        extensions, epoch, seconds = [], -1, policy["deadline_s"]
        for item in value["extensions"]:
            ok = (isinstance(item, dict) and set(item) == {"from_epoch", "deadline_s"}
                  and type(item["from_epoch"]) is int and item["from_epoch"] > epoch
                  and type(item["deadline_s"]) in (int, float) and math.isfinite(item["deadline_s"])
                  and item["deadline_s"] > seconds)
            if not ok:
                self.fail(f"deadline.json: extension {item} does not follow a later epoch with a longer deadline")
                return []
            epoch, seconds = item["from_epoch"], item["deadline_s"]
            extensions.append((epoch, seconds))
        return extensions

    def deadline_of(self, epoch: int) -> float:
        """The deadline (seconds of budget) in force for ``epoch``."""
        in_force = [seconds for start, seconds in self.extensions if start <= epoch]
        return in_force[-1] if in_force else self.policy_deadline_s

    def check_layout(self, g: int, snap: dict, wpm: int) -> None:
        layout, raw = self.read_json(f"membership/generation-{g}-layout.json")
        if sha256(raw) != snap.get("layout_sha256"):
            self.fail(f"generation-{g}-layout.json does not match the SHA-256 in its snapshot")
        if raw != canonical(layout) or layout.get("generation") != g:
            self.fail(f"generation-{g}-layout.json is not the canonical layout of generation {g}")
        expected = expected_groups(snap["active"], wpm)
        got = [[grp["master"], *grp["workers"]] for grp in layout.get("groups", [])]
        if got != expected:
            self.fail(f"generation {g}: layout groups {got} are not the rule's {expected}")
        if snap.get("worker_kinds", []) != self.slots:
            self.fail(f"generation {g}: snapshot worker kinds {snap.get('worker_kinds', [])} are not the policy's "
                      f"{self.slots}")
        for grp, members in zip(layout.get("groups", []), expected, strict=False):
            kinds = [kind_in(members, w, self.slots, "") for w in members[1:]] if self.slots else None
            if grp.get("kinds") != kinds:
                self.fail(f"generation {g}: group of master {grp['master']} names worker kinds {grp.get('kinds')}, "
                          f"the slots give {kinds}")

    def check_transition(self, g: int, prev: dict, snap: dict, receipt: dict) -> None:
        if snap["generation"] != g or snap["started_at"] != prev["started_at"]:
            self.fail(f"generation {g}: snapshot generation or campaign start time changed")
        if receipt.get("kind") == "resume":
            self.check_resume(g, prev, snap, receipt)
            return
        if receipt.get("kind") != "recovery":
            self.fail(f"receipt-{g}: unknown kind {receipt.get('kind')!r}")
        if (snap["epoch"], snap["epoch_started_at"], snap["consumed_s"]) != (
            prev["epoch"], prev["epoch_started_at"], prev["consumed_s"]
        ):
            self.fail(f"generation {g}: a recovery changed the epoch or its deadline budget")
        missing = set(receipt["missing"])
        live = set(prev["active"]) | set(prev["spares"])
        if not missing or not missing <= live:
            self.fail(f"receipt-{g}: missing {sorted(missing)} is not a non-empty subset of the live {sorted(live)}")
        active = [r for r in prev["active"] if r not in missing]
        spares = [r for r in prev["spares"] if r not in missing]
        need = max(0, prev["budget"] - len(active))
        promoted = spares[:need]
        if receipt["promoted"] != promoted:
            self.fail(f"receipt-{g}: promoted {receipt['promoted']}, the lowest-spare rule gives {promoted}")
        if snap["active"] != sorted(active + promoted) or snap["spares"] != spares[len(promoted):]:
            self.fail(f"generation {g}: active/spares do not follow from generation {g - 1} and the receipt")
        if snap["failed"] != sorted(set(prev["failed"]) | missing):
            self.fail(f"generation {g}: failed {snap['failed']} is not generation {g - 1}'s plus the receipt's missing")
        self.check_prepare(g, receipt)

    def check_prepare(self, g: int, receipt: dict) -> None:
        """DESIGN.md §6.4: a recovery receipt commits exactly the plan that was prepared for it."""
        try:
            plan, _ = self.read_json(f"membership/prepare-{g}.json")
        except FileNotFoundError:
            self.fail(f"receipt-{g} has no prepare-{g}.json (a receipt without a prepared plan)")
            return
        if plan.get("missing") != receipt["missing"] or plan.get("previous_sha256") != receipt["previous_sha256"]:
            self.fail(f"prepare-{g}.json plans another transition than receipt-{g}")

    def check_resume(self, g: int, prev: dict, snap: dict, receipt: dict) -> None:
        """A new job re-admits every stable rank in the initial split and opens the next epoch."""
        budget, ranks = prev["budget"], prev["ranks"]
        if receipt["missing"] or receipt["promoted"] or snap["failed"]:
            self.fail(f"receipt-{g}: a resume receipt names missing or promoted ranks")
        if snap["active"] != list(range(budget)) or snap["spares"] != list(range(budget, ranks)):
            self.fail(f"generation {g}: a resume does not restore the initial active/spare split")
        if snap["epoch"] != prev["epoch"] + 1 or snap["epoch_started_at"] != receipt["resumed_at"]:
            self.fail(f"generation {g}: resume receipt and snapshot disagree on the new epoch")
        if snap["consumed_s"] != receipt["consumed_s"] or snap["consumed_s"] < prev["consumed_s"]:
            self.fail(f"generation {g}: the deadline budget used went backwards or differs from the receipt")
        before, after = self.deadline_of(prev["epoch"]), self.deadline_of(snap["epoch"])
        if receipt["consumed_s"] > before:
            self.fail(f"generation {g}: {receipt['consumed_s']:.1f} s of budget used, more than the deadline of "
                      f"{before:g} s of epoch {prev['epoch']}")
        self.notes.append(
            f"generation {g} resumed the campaign in a new job "
            f"({receipt['consumed_s']:.1f} s of the deadline budget used before"
            + (f"; deadline extended from {before:g} s to {after:g} s)" if after != before else ")")
        )
