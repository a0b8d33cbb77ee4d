"""The triage files of a state or ``explore --out`` directory: minimised inputs as objects named
by their SHA-256 (``triage/objects/``, created once, never overwritten: a second write of a name
must be byte-identical) and one record per finding and kind of triage (``triage/records/``:
``minimize-<id>.json``, ``replay-<id>.json``, each replaced by the latest). Paths from
:mod:`.paths`; every failure raises."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from ..errors import CorpusIntegrityError, StoreError
from .atomic import write_new, write_replace
from .dirs import ensure_dir
from .reads import read_bytes
from .trust import check_entries

RECORD_KINDS = ("minimize", "replay")
_RECORD = re.compile(r"(minimize|replay)-([0-9a-f]{12})\.json")
MAX_RECORD_BYTES = 1 << 20


class TriageStore:
    def __init__(self, objects: Path, records: Path, file_mode: int = 0o644, dir_mode: int = 0o755):
        self.objects, self.records = Path(objects), Path(records)
        self.file_mode, self.dir_mode = file_mode, dir_mode

    def put(self, data: bytes) -> str:
        """Store ``data`` as ``objects/<sha256>`` (idempotent); its SHA-256."""
        sha256 = hashlib.sha256(data).hexdigest()
        ensure_dir(self.objects.parent, self.dir_mode)
        ensure_dir(self.objects, self.dir_mode)
        path = self.objects / sha256
        if not write_new(path, data, self.file_mode) and read_bytes(path) != data:
            raise CorpusIntegrityError(f"{path} exists with other bytes than its name says")
        return sha256

    def read(self, sha256: str) -> bytes:
        data = read_bytes(self.objects / sha256)
        if hashlib.sha256(data).hexdigest() != sha256:
            raise CorpusIntegrityError(f"{self.objects / sha256}: its bytes do not have the SHA-256 its name says")
        return data

    def record(self, kind: str, finding: str, value: dict) -> Path:
        """Write (replace) the ``kind`` record of ``finding``."""
        if kind not in RECORD_KINDS or not re.fullmatch(r"[0-9a-f]{12}", finding):
            raise StoreError(f"no triage record {kind!r} of {finding!r}")
        ensure_dir(self.records.parent, self.dir_mode)
        ensure_dir(self.records, self.dir_mode)
        path = self.records / f"{kind}-{finding}.json"
        write_replace(path, (json.dumps(value, indent=1, sort_keys=True) + "\n").encode(), self.file_mode)
        return path

    def read_records(self) -> dict[tuple[str, str], dict]:
        """``(kind, finding id) -> record`` of every record (none when there is no records directory)."""
        if not os.path.lexists(self.records):
            return {}
        check_entries(self.records)
        out = {}
        for name in sorted(os.listdir(self.records)):
            match = _RECORD.fullmatch(name)
            if match:
                try:
                    out[(match[1], match[2])] = json.loads(read_bytes(self.records / name, MAX_RECORD_BYTES))
                except ValueError as exc:
                    raise StoreError(f"{self.records / name}: not a triage record ({exc})") from None
        return out
