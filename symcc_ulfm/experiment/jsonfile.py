"""JSON files of a scaling or comparison study: written atomically (temp file, fsync, rename), read bounded;
a protocol file read before it is validated; a file a resumed study must find unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..store.atomic import write_new, write_replace
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


PROTOCOL_LIMIT = 1 << 20


def read_protocol_file(path: str | Path, error: type[ConfigError]) -> Any:
    """The JSON value of a protocol file (at most :data:`PROTOCOL_LIMIT` bytes); ``error(path, why)`` when
    it is missing, too large or not JSON. Its validation is the study kind's."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(PROTOCOL_LIMIT + 1)
    except FileNotFoundError as exc:
        raise error(str(path), "no such protocol file") from exc
    if len(raw) > PROTOCOL_LIMIT:
        raise error(str(path), f"larger than {PROTOCOL_LIMIT} bytes")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(str(path), f"not valid JSON ({exc})") from exc


def write_or_match(path: Path, data: bytes, what: str, study: str) -> None:
    """Create ``path`` with ``data``; an existing file (a resumed ``study``) must hold exactly ``data``."""
    if write_new(path, data, FILE_MODE):
        return
    if read_bytes(path) != data:
        raise ConfigError(what, f"{path} differs from this protocol's; a {study} is continued only with its own "
                                "protocol and plan")


def json_or_problem(path: Path, problems: list[str], rel: str) -> Any:
    """The parsed file, or None with a problem naming ``rel`` (a verifier reports, it does not raise)."""
    try:
        return read_json(path)
    except FileNotFoundError:
        problems.append(f"{rel}: missing")
    except (ValueError, OSError) as exc:
        problems.append(f"{rel}: unreadable ({exc})")
    return None
