"""What a system holds over its window and the inputs kept (a stand-in in this branch: only
:class:`Input`, the coordinator's listing.py replaces it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Input:
    """One distinct input a cell kept: its content's SHA-256 (its file name under ``inputs/``), the
    seconds since the window started when it was first listed, and ``role``: seed, corpus or finding."""

    sha256: str
    first_s: float
    role: str
