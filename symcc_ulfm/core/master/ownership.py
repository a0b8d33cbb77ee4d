"""Rendezvous (highest-random-weight) ownership of inputs across the current masters.

Every master computes the same owner for an input from the master set alone, so frontier
items reach exactly one master per generation, and a recovery that changes the master set
moves only the inputs of the masters that changed.
"""

from __future__ import annotations

import hashlib


def weight(master: int, input_hash: str) -> bytes:
    return hashlib.sha256(f"{master}:{input_hash}".encode("ascii")).digest()


def owner(input_hash: str, masters: tuple[int, ...] | list[int]) -> int:
    if not masters:
        raise ValueError("no masters to own inputs")
    return max(masters, key=lambda m: (weight(m, input_hash), m))
