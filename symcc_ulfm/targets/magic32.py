"""``magic32``: a 4-byte magic followed by a 32-bit key that must match ``0xDEADBEEF ^ salt``.

Random mutation needs to guess 64 bits at once; concolic execution solves two equalities.
Layout: ``b"M32!" key:u32le salt:u32le [hook:u32le]``; the seed is 16 zero bytes.

Bug (C-level crash): once unlocked, a non-zero ``hook`` field is taken as an offset into a hook
table of 4-byte entries whose pointer is NULL, and entry ``1 + hook % 1023`` is read through
``ctypes`` (the target trusts an index taken from its input), so the process dies with SIGSEGV;
only a contained executor survives it. The address read is in [4, 4092], below 4096, under
every Linux ``vm.mmap_min_addr``, never mapped: the crash is deterministic. (Reading the whole
32-bit hook as an address was not: Debian's ``python3.11`` is not position-independent and its
``brk`` heap starts anywhere in the first GiB, so an address there was mapped in some processes
and not in others -- a finding that did not reproduce about once in 33 replays.)
"""

from __future__ import annotations

import ctypes

DESCRIPTION = "4-byte magic + 32-bit key == 0xDEADBEEF ^ salt (concolic beats random mutation)"
MAGIC = b"M32!"
DEEP = "unlocked"
SEEDS = (bytes(16),)
EXPECTED: tuple[str, ...] = ()
HOOK_TABLE = 0  # the table pointer the bug reads through: NULL
BUGS = ("crash: SIGSEGV reading a NULL hook table at the index in the hook field once unlocked (ctypes.string_at)",)


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
            return "hooked " + ctypes.string_at(HOOK_TABLE + 4 * (1 + hook % 1023), 4).hex()  # the bug
        return DEEP
    return "locked"
