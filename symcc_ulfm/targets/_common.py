"""Helpers shared by the built-in targets (not traced for coverage: keep logic out of here)."""

from __future__ import annotations

from collections.abc import Callable


def reached(function: Callable[[bytes], object], data: bytes, marker: str) -> bool:
    """Whether a concrete run of ``function`` on ``data`` returns ``marker`` (exceptions: no)."""
    try:
        return function(bytes(data)) == marker
    except Exception:  # a target's exceptions are ordinary outcomes
        return False
