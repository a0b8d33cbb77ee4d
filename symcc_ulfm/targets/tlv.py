"""``tlv``: magic, version and type/length/value records, with a nested record list.

Layout: ``b"TLV\\x01" version:u8`` then records ``type:u8 length:u8 value[length]`` until the
end or a type 0xFF record. Types: 1 text, 2 big-endian u16 (length must be 2), 0x10 a list of
records (version 2 only), 0x20 a one-byte reference to an earlier text record (version 2
only). The deepest branch: an int record followed by a list that holds an int record equal to
0x1337. Malformed records raise ``ValueError`` (expected).

Bug (unchecked index): a reference record's index is not checked against the texts seen so
far, so a dangling reference raises ``IndexError``.
"""

from __future__ import annotations

DESCRIPTION = "magic + version + TLV records with a nested record list (deepest: nested int 0x1337)"
MAGIC = b"TLV\x01"
T_TEXT, T_INT, T_LIST, T_REF, T_END = 0x01, 0x02, 0x10, 0x20, 0xFF
DEEP = "nested int 0x1337"
EXPECTED = ("ValueError",)
BUGS = ("exception: IndexError on a reference record (type 0x20, version 2) past the texts seen so far",)
SEEDS = (MAGIC + bytes([1, T_INT, 2, 0x00, 0x05, T_TEXT, 6]) + b"hello!" + bytes([T_TEXT, 3]) + b"abc",)


def records(buf: bytes) -> list[tuple[int, int, bytes]]:
    """Split ``buf`` into (type, declared length, value) triples."""
    out = []
    pos = 0
    while pos < len(buf):
        if pos + 2 > len(buf):
            raise ValueError("truncated record header")
        kind = buf[pos]
        size = buf[pos + 1]
        if kind == T_END:
            break
        end = pos + 2 + size
        if end > len(buf):
            raise ValueError("record overruns its container")
        out.append((kind, size, buf[pos + 2:end]))
        pos = end
    return out


def u16(value: bytes) -> int:
    return value[0] << 8 | value[1]


def parse(data: bytes) -> str:
    if len(data) < 5:
        return "short"
    if data[:4] != MAGIC:
        return "bad magic"
    version = data[4]
    if version not in (1, 2):
        return "unsupported version"
    seen_int = False
    texts = []
    for kind, size, value in records(data[5:]):
        if kind == T_TEXT:
            if size == 0:
                return "empty text"
            if value[0] == 0x21:
                return "shouting text"
            texts.append(value)
        elif kind == T_REF:
            if version != 2:
                return "references need version 2"
            if size != 1:
                return "bad reference length"
            target = texts[value[0]]  # the bug: the index is not checked against len(texts)
            if target[0] == 0x21:
                return "reference to shouting text"
        elif kind == T_INT:
            if size != 2:
                return "bad int length"
            if u16(value) > 0x7FFF:
                return "int overflow"
            seen_int = True
        elif kind == T_LIST:
            if version != 2:
                return "lists need version 2"
            for inner_kind, inner_size, inner in records(value):
                if inner_kind != T_INT:
                    return "lists hold ints only"
                if inner_size != 2:
                    return "bad nested int length"
                if u16(inner) == 0x1337 and seen_int:
                    return DEEP
        else:
            return "unknown record type"
    return "ok"
