"""``bundle``: an application package: a small container of sections that real standard-library
parsers read (a property list and a TOML document), checked against each other.

Layout: ``b"BNDL" version:u8`` then sections ``kind:u8 length:u16be payload[length]`` up to the
end: kind 1 is the metadata, a property list (binary or XML, ``plistlib``) holding a dict with a
string ``name``; kind 2 the configuration, UTF-8 TOML (``tomllib``) with a ``[package]`` table;
kind 3 a one-byte reference to an earlier section (version 2 only); kind 4 an Adler-32 of the
bytes before it (``zlib``). A package needs its metadata before its configuration, and the
configuration's ``package.name`` must equal the metadata's ``name``. The deepest branch: a
checked version-2 package whose metadata sets ``debug``; the seed of that kind carries a wrong
checksum, which the search repairs (the checksum is computed by ``zlib``, in C). Malformed sections raise ``ValueError``, malformed payloads the parsers'
own errors (all expected).

The search keeps finding new code long after the container is understood: the parsers' own
modules are traced and instrumented (``MODULES``), so a campaign on this target is still
covering new branches of ``plistlib`` and ``tomllib`` at the end of a 15 s reference run.

Bugs: an even ``build`` number in the metadata (a release) divides 100 to give the release
cadence, and build 0 is even too (``ZeroDivisionError``); a reference section's index is not
checked against the sections read so far (``IndexError``); a ``[limits]`` table's ``shards``
divides the package's item count unchecked (``ZeroDivisionError`` for ``shards = 0``).
"""

from __future__ import annotations

import plistlib
import tomllib
import zlib

DESCRIPTION = "container of a property list and a TOML config, read by plistlib and tomllib (deepest: checked debug v2)"
MAGIC = b"BNDL"
S_META, S_CONFIG, S_REF, S_CHECK = 1, 2, 3, 4
DEEP = "checked debug package"
EXPECTED = ("ValueError", "plistlib.InvalidFileException", "xml.parsers.expat.ExpatError")
BUGS = (
    "exception: ZeroDivisionError computing the release cadence of build 0 (even, so a release)",
    "exception: IndexError on a reference section (kind 3, version 2) past the sections read so far",
    "exception: ZeroDivisionError when the configuration's [limits] shards is 0",
)
MODULES = ("plistlib", "tomllib._parser")


def _section(kind: int, payload: bytes) -> bytes:
    return bytes([kind]) + len(payload).to_bytes(2, "big") + payload


def sections(data: bytes) -> list[tuple[int, bytes, int]]:
    """(kind, payload, offset of the section) of every section after the header."""
    out = []
    pos = 5
    while pos < len(data):
        if pos + 3 > len(data):
            raise ValueError("truncated section header")
        kind = data[pos]
        size = int.from_bytes(data[pos + 1:pos + 3], "big")
        end = pos + 3 + size
        if end > len(data):
            raise ValueError("section overruns the package")
        out.append((kind, data[pos + 3:end], pos))
        pos = end
    return out


def parse(data: bytes) -> str:
    if len(data) < 5 or data[:4] != MAGIC:
        return "not a bundle"
    version = data[4]
    if version not in (1, 2):
        return "unsupported version"
    found = sections(data)
    checked = False
    for kind, payload, offset in found:  # integrity first: a checksum covers every byte before it
        if kind == S_CHECK:
            if len(payload) != 4 or int.from_bytes(payload, "big") != zlib.adler32(data[:offset]):
                return "bad checksum"
            checked = True
    meta, config, seen = None, None, []
    for kind, payload, _ in found:
        if kind == S_META:
            meta = plistlib.loads(payload)
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
                return "metadata without a name"
            build = meta.get("build", 1)
            if isinstance(build, int) and build % 2 == 0:  # even builds are releases, one per 100 builds
                meta["cadence"] = 100 // build  # the bug: build 0 is even too
        elif kind == S_CONFIG:
            if meta is None:
                return "configuration before metadata"
            config = tomllib.loads(payload.decode("utf-8"))
            package = config.get("package")
            if not isinstance(package, dict) or package.get("name") != meta["name"]:
                return "configuration of another package"
            items, limits = package.get("items", 0), config.get("limits", {})
            shards = limits.get("shards", 1) if isinstance(limits, dict) else None
            if not (isinstance(items, int) and isinstance(shards, int)):
                return "limits are not integers"
            if items // shards > 1000:  # the bug: shards is not checked
                return "oversized shards"
        elif kind == S_REF:
            if version != 2 or len(payload) != 1:
                return "bad reference"
            target = seen[payload[0]]  # the bug: the index is not checked against len(seen)
            if target == S_REF:
                return "reference to a reference"
        elif kind != S_CHECK:
            return "unknown section"
        seen.append(kind)
    if meta is None or config is None:
        return "incomplete package"
    if version == 2 and checked and meta.get("debug") is True:
        return DEEP
    return "package"


def _checked(body: bytes, right: bool = True) -> bytes:
    return body + _section(S_CHECK, (zlib.adler32(body) if right else 0).to_bytes(4, "big"))


SEEDS = (
    _checked(MAGIC + bytes([1])
             + _section(S_META, plistlib.dumps({"name": "demo", "debug": False, "build": 7}, fmt=plistlib.FMT_BINARY))
             + _section(S_CONFIG, b'[package]\nname = "demo"\nitems = 40\nfeatures = ["net"]\n')),
    _checked(MAGIC + bytes([2]) + _section(S_META, plistlib.dumps({"name": "x", "debug": True}, fmt=plistlib.FMT_XML))
             + _section(S_CONFIG, b'[package]\nname = "x"\ntier = "free"\n[limits]\nshards = 4\n'), right=False),
)
