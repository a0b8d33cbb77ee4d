"""``magic32``: a 4-byte magic followed by a 32-bit key that must match ``0xDEADBEEF ^ salt``.

Random mutation needs to guess 64 bits at once; concolic execution solves two equalities.
Layout: ``b"M32!" key:u32le salt:u32le [hook:u32le]``; the seed is 16 zero bytes.

Bug (C-level crash): once unlocked, a non-zero ``hook`` field is read as an address and
dereferenced through ``ctypes`` (the target trusts a pointer taken from its input), so the
process dies with SIGSEGV; only a contained executor survives it.
"""

from __future__ import annotations

import ctypes

DESCRIPTION = "4-byte magic + 32-bit key == 0xDEADBEEF ^ salt (concolic beats random mutation)"
MAGIC = b"M32!"
DEEP = "unlocked"
SEEDS = (bytes(16),)
EXPECTED: tuple[str, ...] = ()
BUGS = ("crash: SIGSEGV reading the address in the hook field once unlocked (ctypes.string_at)",)


def parse(data: bytes) -> str:
    if len(data) < 12:
        return "short"
    if data[:4] != MAGIC:
        return "bad magic"
    key = int.from_bytes(data[4:8], "little")
    salt = int.from_bytes(data[8:12], "little")
    if key == 0xDEADBEEF ^ salt:
        hook = int.from_bytes(data[12:16], "little") if len(data) >= 16 else 0
        if hook:
            return "hooked " + ctypes.string_at(hook, 4).hex()  # the bug: an address taken from the input
        return DEEP
    return "locked"
