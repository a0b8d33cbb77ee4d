"""The public corpus: immutable objects named ``SHA-256(content)``, and publication claims.

Publishing a name that exists requires byte-identical content, otherwise it is an integrity
error and nothing is overwritten. A *claim* (``claims/<sha>``, created once) makes "who counted
this object" a durable fact, so replays after a crash never count an object twice. The claim
of a published object is a hard link to the ``committing`` WAL record that published it first
(no new inode per object, and the claim carries the manifest that names the object); a seed's
claim holds ``seed``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ..core.canonical import is_sha256_hex
from ..core.limits import MAX_RECORD_BYTES
from ..errors import CorpusIntegrityError, StoreError
from .atomic import link_new, link_open_file, write_new
from .crashpoints import crash_point
from .durability import Barrier
from .reads import read_bytes
from .record import record_lines
from .staging import Staged

SEED_OWNER = "seed"
_EUID = os.geteuid()  # this process's user: its own staged files can be adopted, others are copied


class Corpus:
    def __init__(self, root: Path, object_mode: int, claim_mode: int):
        self.root = Path(root)
        self.objects = self.root / "objects"
        self.claims = self.root / "claims"
        self.object_mode = object_mode
        self.claim_mode = claim_mode
        self._objects = str(self.objects)
        self._claims = str(self.claims)

    def path(self, sha256: str) -> Path:
        return self.objects / _name(sha256)

    def _object(self, sha256: str) -> str:
        """``path`` as a string (the hot path of publication builds no Path objects)."""
        return f"{self._objects}/{_name(sha256)}"

    def has(self, sha256: str) -> bool:
        return os.path.exists(self._object(sha256))

    def read(self, sha256: str) -> bytes:
        """The object's bytes, verified against its name."""
        data = read_bytes(self.path(sha256))
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise CorpusIntegrityError(f"corpus object {sha256} holds content with SHA-256 {actual}")
        return data

    def put(self, data: bytes, barrier: Barrier | None = None, inode: int | None = None) -> tuple[str, bool]:
        """Publish ``data``; returns its name and whether this call created it.

        ``inode`` is an open file holding exactly ``data`` (a staged candidate the caller read
        ``data`` from): when this process owns it and it has no other name, the object becomes
        that file (a hard link, no copy and no new inode; it gets the object mode first).
        A same-user writer could change such a file later, but a same-user process can write
        the corpus directly anyway; a file of another user is always copied.
        """
        sha256 = hashlib.sha256(data).hexdigest()
        if self.path(sha256).exists():
            self._require_identical(sha256, data)
            return sha256, False
        return sha256, self._publish(sha256, data, inode, barrier)

    def adopt(self, staged: Staged, barrier: Barrier | None = None) -> bool:
        """Publish a verified staged object (see :meth:`put`); True when this call created it."""
        return self._publish(staged.sha256, staged.data, staged.fd, barrier, staged.info)

    def _publish(self, sha256: str, data: bytes, inode: int | None, barrier: Barrier | None,
                 info: os.stat_result | None = None) -> bool:
        path = self._object(sha256)
        created = self._adopt(inode, path, barrier, info) if inode is not None else None
        if created is None:
            created = write_new(path, data, self.object_mode, barrier)
        if not created:
            self._require_identical(sha256, data)
        return created

    def _adopt(self, fd: int, path: str, barrier: Barrier | None, info: os.stat_result | None = None) -> bool | None:
        """Link the open file ``fd`` (``info``: its fstat just taken, if any) as ``path``; None when
        it cannot be adopted (see :meth:`put`)."""
        try:
            info = info or os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != _EUID or info.st_nlink != 1:
                return None
            if stat.S_IMODE(info.st_mode) != self.object_mode:
                os.fchmod(fd, self.object_mode)
        except OSError as exc:
            raise StoreError(f"cannot adopt a staged file as {path}: {exc.strerror or exc}") from exc
        return link_open_file(fd, path, barrier)

    def _require_identical(self, sha256: str, data: bytes) -> None:
        existing = read_bytes(self.path(sha256))
        if existing != data:
            raise CorpusIntegrityError(
                f"corpus object {sha256} exists with different content ({len(existing)} bytes, "
                f"SHA-256 {hashlib.sha256(existing).hexdigest()}); refusing to overwrite"
            )

    def claim_new(self, sha256: str, record: Path | str, barrier: Barrier | None = None) -> bool:
        """Create the claim of ``sha256`` as a link to ``record``; False when a claim exists."""
        if link_new(record, f"{self._claims}/{_name(sha256)}", barrier):
            crash_point("commit.claimed")
            return True
        return False

    def claim_owner(self, sha256: str) -> str | None:
        try:
            data = read_bytes(self.claims / _name(sha256), limit=MAX_RECORD_BYTES)
        except FileNotFoundError:
            return None
        return claim_owner(data, sha256)

    def is_seed(self, sha256: str) -> bool:
        """Whether ``sha256`` was published as a seed (reads 4 bytes, not a record)."""
        path = self.claims / _name(sha256)
        try:
            if os.stat(path, follow_symlinks=False).st_size != len(SEED_OWNER):
                return False
            return read_bytes(path) == SEED_OWNER.encode("ascii")
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot read claim {path}: {exc.strerror or exc}") from exc

    def names(self) -> Iterator[str]:
        try:
            entries = os.listdir(self.objects)
        except OSError as exc:
            raise StoreError(f"cannot list {self.objects}: {exc.strerror or exc}") from exc
        return iter(sorted(n for n in entries if not n.startswith(".")))

    def publish_seed(self, data: bytes, barrier: Barrier | None = None) -> str:
        sha256, _ = self.put(data, barrier)
        path = self.claims / sha256
        if not write_new(path, SEED_OWNER.encode("ascii"), self.claim_mode, barrier):
            self.claim_owner(sha256)  # an existing claim must still be valid
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


def _name(sha256: str) -> str:
    """``sha256`` as the name of an object or claim (anything else is refused)."""
    if not is_sha256_hex(sha256):
        raise CorpusIntegrityError(f"{sha256!r} is not a SHA-256 object name")
    return sha256


def claim_owner(data: bytes, sha256: str) -> str:
    """Who a claim's bytes name: ``seed``, or the work hash of the WAL record (a file of lines,
    one per state) whose committing line's manifest lists ``sha256``."""
    if data == SEED_OWNER.encode("ascii"):
        return SEED_OWNER
    try:
        states = [json.loads(line.decode("ascii")) for line in record_lines(data)]
        works = {state["work_hash"] for state in states}
        listed = {obj["sha256"] for state in states if state["manifest"] for obj in state["manifest"]["objects"]}
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise CorpusIntegrityError(f"claim of {sha256} is neither 'seed' nor a committing WAL record") from None
    if len(works) != 1 or not is_sha256_hex(work := works.pop()) or sha256 not in listed:
        raise CorpusIntegrityError(f"claim of {sha256} is a record whose manifest does not list the object")
    return work
