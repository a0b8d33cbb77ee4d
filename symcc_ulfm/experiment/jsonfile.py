"""JSON files of a matrix directory: written atomically (temp file, fsync, rename), read bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..store.atomic import write_replace
from ..store.reads import read_bytes

FILE_MODE = 0o644
DIR_MODE = 0o755
_READ_LIMIT = 16 << 20


def dumps(value: Any) -> bytes:
    """Sorted keys, indented, no NaN (the form :mod:`.analysis` writes)."""
    return (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def write_json(path: Path, value: Any) -> None:
    write_replace(Path(path), dumps(value), FILE_MODE)


def read_json(path: Path) -> Any:
    """The parsed file; ``FileNotFoundError`` when missing, ``ValueError`` when not JSON."""
    return json.loads(read_bytes(Path(path), _READ_LIMIT))
