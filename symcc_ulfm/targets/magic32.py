"""``magic32``: a 4-byte magic followed by a 32-bit key that must match ``0xDEADBEEF ^ salt``.

Random mutation needs to guess 64 bits at once; concolic execution solves two equalities.
Layout: ``b"M32!" key:u32le salt:u32le``; the seed is 16 zero bytes.
"""

from __future__ import annotations

from ._common import reached

DESCRIPTION = "4-byte magic + 32-bit key == 0xDEADBEEF ^ salt (concolic beats random mutation)"
MAGIC = b"M32!"
DEEP = "unlocked"
SEEDS = (bytes(16),)


def parse(data: bytes) -> str:
    if len(data) < 12:
        return "short"
    if data[:4] != MAGIC:
        return "bad magic"
    key = int.from_bytes(data[4:8], "little")
    salt = int.from_bytes(data[8:12], "little")
    if key == 0xDEADBEEF ^ salt:
        return DEEP
    return "locked"


def deepest(data: bytes) -> bool:
    return reached(parse, data, DEEP)
