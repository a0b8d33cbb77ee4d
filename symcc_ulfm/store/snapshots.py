"""The membership snapshot store: generation-0 snapshot, prepare, receipts, layouts.

Snapshots, layouts and receipts are deterministic bytes computed by the pure core, so a write
is create-only: an existing file must hold exactly the same bytes (an idempotent retry), any
difference is a state fork and fails closed. The current generation is the highest receipt
whose snapshot and layout are present and consistent; generation 0 needs no receipt.

Order of a commit (each step a durable boundary): layout, snapshot, receipt. Until the receipt
exists, the new snapshot is not authoritative.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.canonical import parse_canonical
from ..core.limits import MAX_MEMBERSHIP_BYTES
from ..core.membership import (
    PREPARE_FORMAT,
    RECEIPT_FORMAT,
    RECEIPT_KINDS,
    Membership,
    Prepare,
    Receipt,
    commit,
    plan,
    resume,
)
from ..errors import MembershipConflict, SnapshotCorruption, StoreError
from .atomic import write_new, write_replace
from .crashpoints import crash_point
from .paths import LAYOUT, PREPARE, RECEIPT, SNAPSHOT
from .reads import read_bytes

_RECEIPT = re.compile(r"receipt-(\d+)\.json")
class SnapshotStore:
    def __init__(self, root: Path, mode: int):
        self.root = Path(root)
        self.mode = mode

    def snapshot_path(self, generation: int) -> Path:
        return self.root / SNAPSHOT.format(generation)

    def layout_path(self, generation: int) -> Path:
        return self.root / LAYOUT.format(generation)

    def prepare_path(self, generation: int) -> Path:
        return self.root / PREPARE.format(generation)

    def receipt_path(self, generation: int) -> Path:
        return self.root / RECEIPT.format(generation)

    # -- writing -------------------------------------------------------------------------

    def write_generation0(self, membership: Membership) -> None:
        if membership.generation != 0:
            raise ValueError("only generation 0 has no receipt")
        self._create_or_same(self.layout_path(0), membership.layout.to_bytes())
        self._create_or_same(self.snapshot_path(0), membership.to_bytes())

    def prepare(self, previous: Membership, missing: tuple[int, ...]) -> Prepare:
        """Durable, idempotent plan; an existing one must be compatible (see ``core.membership.plan``)."""
        existing = self.read_prepare(previous.generation + 1)
        prepared = plan(previous, missing, existing)
        if existing != prepared:
            write_replace(self.prepare_path(prepared.generation), prepared.to_bytes(), self.mode)
        crash_point("membership.prepared")
        return prepared

    def commit(self, nxt: Membership, receipt: Receipt) -> None:
        self._create_or_same(self.layout_path(nxt.generation), nxt.layout.to_bytes())
        crash_point("membership.layout")
        self._create_or_same(self.snapshot_path(nxt.generation), nxt.to_bytes())
        crash_point("membership.snapshot")
        self._create_or_same(self.receipt_path(receipt.generation), receipt.to_bytes())
        crash_point("membership.receipt")

    def _create_or_same(self, path: Path, data: bytes) -> None:
        if not write_new(path, data, self.mode) and self._read(path) != data:
            raise MembershipConflict(f"{path.name} exists with different content: state fork, failing closed")

    # -- reading -------------------------------------------------------------------------

    def _read(self, path: Path) -> bytes:
        return read_bytes(path, limit=MAX_MEMBERSHIP_BYTES)

    def _json(self, path: Path) -> dict:
        try:
            value = parse_canonical(self._read(path))
        except ValueError as exc:
            raise SnapshotCorruption(f"{path.name} is not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise SnapshotCorruption(f"{path.name} is not a JSON object")
        return value

    def read_prepare(self, generation: int) -> Prepare | None:
        try:
            value = self._json(self.prepare_path(generation))
        except FileNotFoundError:
            return None
        if value.get("format") != PREPARE_FORMAT or value.get("generation") != generation:
            raise SnapshotCorruption(f"{PREPARE.format(generation)} is not a prepare record of generation {generation}")
        try:
            return Prepare(generation, value["previous_sha256"], tuple(value["missing"]))
        except (KeyError, TypeError) as exc:
            raise SnapshotCorruption(f"{PREPARE.format(generation)} lacks or mistypes a field: {exc}") from None

    def load(self, generation: int) -> Membership:
        """The snapshot of ``generation``, checked against its layout file."""
        path = self.snapshot_path(generation)
        value = self._json(path)
        try:
            membership = Membership.from_json(value)
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotCorruption(f"{path.name}: {exc}") from None
        if membership.generation != generation or membership.to_bytes() != self._read(path):
            raise SnapshotCorruption(f"{path.name} is not the canonical snapshot of generation {generation}")
        if self._read(self.layout_path(generation)) != membership.layout.to_bytes():
            raise SnapshotCorruption(f"{LAYOUT.format(generation)} does not match its snapshot")
        return membership

    def receipts(self) -> list[Receipt]:
        try:
            names = sorted(
                (int(m[1]), p) for p in self.root.iterdir() if (m := _RECEIPT.fullmatch(p.name))
            )
        except OSError as exc:
            raise StoreError(f"cannot list {self.root}: {exc.strerror or exc}") from exc
        receipts = []
        for expected, (generation, path) in enumerate(names, start=1):
            if generation != expected:
                raise SnapshotCorruption(f"{RECEIPT.format(expected)} is missing before {path.name}")
            value = self._json(path)
            if value.get("format") != RECEIPT_FORMAT or value.get("generation") != generation:
                raise SnapshotCorruption(f"{path.name} is not a receipt of generation {generation}")
            try:
                receipt = Receipt(
                    generation=generation,
                    previous_sha256=value["previous_sha256"],
                    missing=tuple(value["missing"]),
                    promoted=tuple(value["promoted"]),
                    snapshot_sha256=value["snapshot_sha256"],
                    layout_sha256=value["layout_sha256"],
                    kind=value["kind"],
                    resumed_at=value["resumed_at"],
                    consumed_s=value["consumed_s"],
                )
            except (KeyError, TypeError) as exc:
                raise SnapshotCorruption(f"{path.name} lacks or mistypes a field: {exc}") from None
            if receipt.kind not in RECEIPT_KINDS:
                raise SnapshotCorruption(f"{path.name} has unknown kind {receipt.kind!r}")
            if receipt.to_bytes() != self._read(path):
                raise SnapshotCorruption(f"{path.name} is not canonical")
            receipts.append(receipt)
        return receipts

    def current(self) -> Membership:
        """The latest committed generation, with the whole receipt chain verified."""
        membership = self.load(0)
        for receipt in self.receipts():
            try:
                nxt = self.load(receipt.generation)
            except FileNotFoundError as exc:
                raise SnapshotCorruption(f"{RECEIPT.format(receipt.generation)} has no {Path(exc.filename).name}") from None
            if receipt.previous_sha256 != membership.sha256 or receipt.snapshot_sha256 != nxt.sha256:
                raise SnapshotCorruption(f"{RECEIPT.format(receipt.generation)} does not chain to its snapshots")
            # Deterministic transition: the receipt and snapshot must be exactly what applying the
            # receipt's missing set to the previous snapshot gives (catches an edited missing/promoted).
            try:
                if receipt.kind == "resume":
                    expected_nxt, expected = resume(membership, receipt.resumed_at, receipt.consumed_s, nxt.hosts)
                else:
                    expected_nxt, expected = commit(
                        membership, Prepare(receipt.generation, membership.sha256, receipt.missing)
                    )
            except (TypeError, ValueError) as exc:
                raise SnapshotCorruption(f"{RECEIPT.format(receipt.generation)}: {exc}") from None
            if expected != receipt or expected_nxt.to_bytes() != nxt.to_bytes():
                raise SnapshotCorruption(f"{RECEIPT.format(receipt.generation)} is not the transition from generation "
                                         f"{membership.generation} with missing {list(receipt.missing)}")
            membership = nxt
        return membership
