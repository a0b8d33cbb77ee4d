"""The public corpus: immutable objects named ``SHA-256(content)``, and publication claims.

Publishing a name that exists requires byte-identical content, otherwise it is an integrity
error and nothing is overwritten. A *claim* (``claims/<sha>``, created once, holding the work
hash of the record that published the object first) makes "who counted this object" a
durable fact, so replays after a crash never count an object twice.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..core.canonical import is_sha256_hex
from ..errors import CorpusIntegrityError, StoreError
from .atomic import Barrier, read_bytes, write_new
from .crashpoints import crash_point

SEED_OWNER = "seed"


class Corpus:
    def __init__(self, root: Path, object_mode: int, claim_mode: int):
        self.root = Path(root)
        self.objects = self.root / "objects"
        self.claims = self.root / "claims"
        self.object_mode = object_mode
        self.claim_mode = claim_mode

    def path(self, sha256: str) -> Path:
        if not is_sha256_hex(sha256):
            raise CorpusIntegrityError(f"{sha256!r} is not a SHA-256 object name")
        return self.objects / sha256

    def has(self, sha256: str) -> bool:
        return self.path(sha256).exists()

    def read(self, sha256: str) -> bytes:
        """The object's bytes, verified against its name."""
        data = read_bytes(self.path(sha256))
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise CorpusIntegrityError(f"corpus object {sha256} holds content with SHA-256 {actual}")
        return data

    def put(self, data: bytes, barrier: Barrier | None = None) -> tuple[str, bool]:
        """Publish ``data``; returns its name and whether this call created it."""
        sha256 = hashlib.sha256(data).hexdigest()
        path = self.path(sha256)
        if path.exists():
            self._require_identical(sha256, data)
            return sha256, False
        created = write_new(path, data, self.object_mode, barrier)
        if not created:
            self._require_identical(sha256, data)
        return sha256, created

    def _require_identical(self, sha256: str, data: bytes) -> None:
        existing = read_bytes(self.path(sha256))
        if existing != data:
            raise CorpusIntegrityError(
                f"corpus object {sha256} exists with different content ({len(existing)} bytes, "
                f"SHA-256 {hashlib.sha256(existing).hexdigest()}); refusing to overwrite"
            )

    def claim(self, sha256: str, owner: str, barrier: Barrier | None = None) -> str:
        """Record ``owner`` as the first publisher of ``sha256``; returns whoever holds the claim."""
        path = self.claims / self.path(sha256).name
        if write_new(path, owner.encode("ascii"), self.claim_mode, barrier):
            crash_point("commit.claimed")
            return owner
        return self.claim_owner(sha256)

    def claim_owner(self, sha256: str) -> str | None:
        try:
            text = read_bytes(self.claims / self.path(sha256).name, limit=128).decode("ascii")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise CorpusIntegrityError(f"claim of {sha256} is not ASCII") from None
        if text != SEED_OWNER and not is_sha256_hex(text):
            raise CorpusIntegrityError(f"claim of {sha256} names {text!r}, not a work hash")
        return text

    def names(self) -> Iterator[str]:
        try:
            entries = os.listdir(self.objects)
        except OSError as exc:
            raise StoreError(f"cannot list {self.objects}: {exc.strerror or exc}") from exc
        return iter(sorted(n for n in entries if not n.startswith(".")))

    def publish_seed(self, data: bytes) -> str:
        sha256, _ = self.put(data)
        self.claim(sha256, SEED_OWNER)
        return sha256

    def verify(self) -> list[str]:
        """Problems found by re-hashing every object (empty when the corpus is intact)."""
        problems = []
        for name in self.names():
            if not is_sha256_hex(name):
                problems.append(f"corpus/objects/{name}: not a SHA-256 name")
                continue
            try:
                self.read(name)
            except CorpusIntegrityError as exc:
                problems.append(str(exc))
        return problems
