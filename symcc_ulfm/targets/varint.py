"""``varint``: LEB128 varints and length-prefixed fields (protobuf-like).

Layout: ``count:varint`` then ``count`` times ``length:varint bytes[length]``, nothing after.
The last field must itself hold exactly one varint; the deepest branch needs it to be
0x1F2E3D, a three-byte varint, while the seed's fields are plain text. Truncated or overlong
varints raise ``ValueError`` (expected).

Bug (off-by-one table): a small last value picks its handler from a table of four entries by
``value // 24``, which needs six, so values 96..127 raise ``IndexError``.
"""

from __future__ import annotations

DESCRIPTION = "LEB128 varint count + length-prefixed fields (deepest: last field encodes 0x1F2E3D)"
EXPECTED = ("ValueError",)
BUGS = ("exception: IndexError picking the handler of a small last value >= 96 (a table of 4 entries, not 6)",)
HANDLERS = ("tiny", "small", "medium", "large")
DEEP = "magic varint field"
SEEDS = (bytes([2, 3]) + b"abc" + bytes([3]) + b"xyz",)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 35:
            raise ValueError("varint too long")


def parse(data: bytes) -> str:
    count, pos = read_varint(data, 0)
    if count == 0:
        return "no fields"
    if count > 4:
        return "too many fields"
    fields = []
    for _ in range(count):
        size, pos = read_varint(data, pos)
        if pos + size > len(data):
            return "truncated field"
        fields.append(data[pos:pos + size])
        pos += size
    if pos != len(data):
        return "trailing bytes"
    last = fields[-1]
    if not last:
        return "empty last field"
    value, used = read_varint(last, 0)
    if used != len(last):
        return "junk after varint"
    if value < 128:
        return f"small value ({HANDLERS[value // 24]})"  # the bug: value // 24 goes up to 5
    if value == 0x1F2E3D:
        return DEEP
    return "value"
