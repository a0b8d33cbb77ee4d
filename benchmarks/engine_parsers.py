"""The real parsers of the engine benchmarks (``make bench-engine``, ``make bench-engine-tools``): adapters, seeds, own modules.

Every adapter takes ``bytes`` (the fuzzing input) and calls one parser of the standard library;
parsers that take text decode it inside the adapter, so decoding is part of the traced target.
``MODULES`` names the parser's own modules: the concolic engine instruments and traces them, and
the benchmark's measurer counts branch coverage in exactly their files.

This module imports nothing from the project, so that every tool (the engine old and new,
atheris, CrossHair) loads the same file in its own process.
"""

from __future__ import annotations

import email
import gzip
import http.client
import io
import ipaddress
import json.decoder
import json.scanner
import plistlib
import tomllib
import urllib.parse
import zipfile

# json.loads with the pure-Python scanner: the C accelerators are replaced in this process.
json.decoder.scanstring = json.decoder.py_scanstring
json.scanner.make_scanner = json.scanner.py_make_scanner


def t_plist_binary(data: bytes) -> object:
    return plistlib.loads(data)


def t_plist_xml(data: bytes) -> object:
    return plistlib.loads(data)


def t_email(data: bytes) -> object:
    message = email.message_from_bytes(data)
    return [message.get_content_type(), message.get_params(), message.get_payload(), message.items()]


def t_http_headers(data: bytes) -> object:
    headers = http.client.parse_headers(io.BytesIO(data))
    return headers.items()


def t_urlsplit(data: bytes) -> object:
    parts = urllib.parse.urlsplit(data.decode("latin-1"))
    return parts, parts.port, parts.hostname


def t_tomllib(data: bytes) -> object:
    return tomllib.loads(data.decode("utf-8", "surrogateescape"))


def t_json(data: bytes) -> object:
    decoder = json.decoder.JSONDecoder()
    decoder.parse_string = json.decoder.py_scanstring
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(data.decode("utf-8", "surrogateescape"))


def t_ipaddress(data: bytes) -> object:
    return ipaddress.ip_address(data.decode("latin-1"))


def t_gzip(data: bytes) -> object:
    return gzip.decompress(data)


def t_zipfile(data: bytes) -> object:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _zip_seed() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(zipfile.ZipInfo("a.txt", (2020, 1, 1, 0, 0, 0)), b"hello zip")
    return out.getvalue()


_EMAIL = ("email.parser email.feedparser email.message email._policybase email._parseaddr email.utils "
          "email.header email.charset email._encoded_words email.quoprimime email.base64mime "
          "email.iterators email.encoders email.errors").split()

SEEDS: dict[str, bytes] = {
    "plist_binary": plistlib.dumps({"a": 1, "b": [True, 2.5, b"xy"], "c": "text"}, fmt=plistlib.FMT_BINARY),
    "plist_xml": plistlib.dumps({"a": 1, "b": [True, 2.5, b"xy"], "c": "text"}),
    "email": (b"From: Ann <ann@example.com>\r\nTo: bob@example.com\r\nSubject: hi\r\n"
              b"Content-Type: text/plain; charset=us-ascii\r\n\r\nbody\r\n"),
    "http_headers": b"Host: example.com\r\nContent-Length: 12\r\nConnection: close\r\n\r\n",
    "urlsplit": b"http://user:pw@example.com:8080/path;p?q=1#frag",
    "tomllib": b'title = "x"\n[owner]\nname = "a"\nn = 12\nlist = [1, 2]\n',
    "json": b'{"a": [1, 2.5, "x\\n"], "b": null, "c": true}',
    "ipaddress": b"192.168.0.1",
    "gzip": gzip.compress(b"hello gzip", mtime=0),
    "zipfile": _zip_seed(),
}

MODULES: dict[str, list[str]] = {
    "plist_binary": ["plistlib"],
    "plist_xml": ["plistlib"],
    "email": ["email"] + _EMAIL,
    "http_headers": ["http.client", "email.parser", "email.feedparser", "email.message", "email._policybase"],
    "urlsplit": ["urllib.parse"],
    "tomllib": ["tomllib._parser", "tomllib._re"],
    "json": ["json.decoder", "json.scanner"],
    "ipaddress": ["ipaddress"],
    "gzip": ["gzip"],
    "zipfile": ["zipfile"],
}

PARSERS = list(SEEDS)
