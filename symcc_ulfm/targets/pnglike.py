"""``pnglike``: a PNG-like chunked file with a CRC-32 per chunk, computed in pure Python.

Layout: the 8-byte PNG signature, then chunks ``length:u32be type[4] data[length] crc:u32be``
where the CRC covers type and data; ``IHDR`` (13 bytes: width, height, bit depth, colour type,
compression, filter, interlace) comes first and ``IEND`` last. The seed is a valid file with a
``tEXt`` chunk. The deepest branch needs the ``Debug`` keyword and a 16-bit RGBA header, i.e.
content changes in two chunks whose CRCs must be repaired: the table-driven CRC concretises
every byte it reads, so only a checksum-aware search gets there. Malformed files raise
``ValueError`` (expected).

Bug (unbounded allocation): a ``tEXt`` chunk with the keyword ``Dump`` makes the parser allocate
a dump buffer of the size in KiB that the four bytes after the keyword declare, with no bound,
so a large declared size exhausts memory (``MemoryError``).
"""

from __future__ import annotations

DESCRIPTION = "PNG-like chunks with CRC-32 (pure Python); deepest: tEXt 'Debug' + 16-bit RGBA header"
SIGNATURE = b"\x89PNG\r\n\x1a\n"
EXPECTED = ("ValueError",)
BUGS = ("oom: a tEXt chunk with keyword 'Dump' allocates the buffer size it declares (KiB), unbounded",)
DEEP = "debug keyword on 16-bit RGBA"


def _table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = 0xEDB88320 ^ (c >> 1) if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _table()


def crc32(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def chunk(kind: bytes, body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + kind + body + crc32(kind + body).to_bytes(4, "big")


def chunks(data: bytes):
    pos = 8
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if pos + 12 + length > len(data):
            raise ValueError("chunk overruns the file")
        body = data[pos + 8:pos + 8 + length]
        stored = int.from_bytes(data[pos + 8 + length:pos + 12 + length], "big")
        if crc32(kind + body) != stored:
            raise ValueError("bad chunk crc")
        yield kind, body
        if kind == b"IEND":
            return
        pos += 12 + length
    raise ValueError("missing IEND")


def parse(data: bytes) -> str:
    if data[:8] != SIGNATURE:
        return "not a png"
    header = None
    texts = 0
    for kind, body in chunks(data):
        if header is None:
            if kind != b"IHDR" or len(body) != 13:
                raise ValueError("IHDR must come first")
            width = int.from_bytes(body[0:4], "big")
            height = int.from_bytes(body[4:8], "big")
            if width == 0 or height == 0 or width > 4096 or height > 4096:
                raise ValueError("bad dimensions")
            depth, colour = body[8], body[9]
            if depth not in (1, 2, 4, 8, 16):
                raise ValueError("bad bit depth")
            if colour not in (0, 2, 3, 4, 6):
                raise ValueError("bad colour type")
            header = (width, height, depth, colour)
        elif kind == b"tEXt":
            texts += 1
            nul = body.find(0)
            if nul < 1:
                raise ValueError("bad keyword")
            keyword = body[:nul]
            if keyword == b"Dump":
                declared = int.from_bytes(body[nul + 1:nul + 5], "big")
                dump = bytearray(declared << 10)  # the bug: the declared size is trusted
                return f"dump of {len(dump)} bytes"
            if keyword == b"Debug":
                if header[3] == 6:
                    if header[2] == 16:
                        return DEEP
                    return "debug on rgba"
                return "debug"
        elif kind == b"IEND":
            return f"image with {texts} text chunks"
    return "unreachable"


SEEDS = (
    SIGNATURE
    + chunk(b"IHDR", (16).to_bytes(4, "big") + (16).to_bytes(4, "big") + bytes([8, 2, 0, 0, 0]))
    + chunk(b"tEXt", b"Title\x00Hello, world")
    + chunk(b"IEND", b""),
)
