"""Canonical JSON: one byte string per value, so that digests are stable across processes."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, ASCII only, no NaN: the same value always gives the same bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def parse_canonical(raw: bytes) -> Any:
    """The value that the bytes of a canonical JSON file hold, as its reader takes them.

    Anything that is not JSON text in UTF-8 is a ``ValueError`` with the reason: garbage, a file
    cut short, bytes that are not UTF-8, ``NaN`` or ``Infinity`` (which :func:`canonical_json`
    never writes) and nesting deeper than the parser can follow. Whether the value has the shape
    of the file and is its canonical form is its reader's to check."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON form of ``value``."""
    return sha256_hex(canonical_json(value))


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def is_sha256_hex(text: object) -> bool:
    return isinstance(text, str) and _SHA256_HEX.fullmatch(text) is not None


class Canonical:
    """Mixin for values with a ``to_json()``: their canonical bytes and the SHA-256 of those."""

    def to_json(self) -> Any:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        return canonical_json(self.to_json())

    @property
    def sha256(self) -> str:
        return sha256_hex(self.to_bytes())
