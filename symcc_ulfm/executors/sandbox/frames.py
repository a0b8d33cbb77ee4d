"""The sandbox pipe format: a JSON header plus raw byte blobs, length-prefixed; never pickle.

A frame is ``u32 header length, u32 payload length`` (little-endian), the header (UTF-8 JSON
object whose ``blobs`` lists the payload's parts by length), then the payload. Inputs and
candidates travel as blobs, so a 1 MB input is copied, not hex-encoded. Both ends check the
lengths before they allocate: the child runs target code, and target code can write anything
into any file descriptor it finds.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence

PREFIX = struct.Struct("<II")
MAX_HEADER = 64 << 20
MAX_PAYLOAD = 1 << 30


class FrameError(Exception):
    """Bytes on the pipe that are not a frame."""


def encode_frame(message: dict, blobs: Sequence[bytes] = ()) -> bytes:
    head = json.dumps({**message, "blobs": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    payload = b"".join(blobs)
    if len(head) > MAX_HEADER or len(payload) > MAX_PAYLOAD:
        raise FrameError(f"frame of {len(head)} + {len(payload)} bytes is over the limit")
    return PREFIX.pack(len(head), len(payload)) + head + payload


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def decode_frame(head: bytes, payload: bytes) -> tuple[dict, list[bytes]]:
    try:
        message = json.loads(head)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError(f"header is not JSON: {exc}") from None
    sizes = message.get("blobs") if isinstance(message, dict) else None
    if not isinstance(sizes, list) or not all(type(n) is int and n >= 0 for n in sizes) or sum(sizes) != len(payload):
        raise FrameError("header does not describe the payload")
    blobs, pos = [], 0
    for n in sizes:
        blobs.append(payload[pos:pos + n])
        pos += n
    return message, blobs


class FrameBuffer:
    """Reassembles frames from the chunks a non-blocking reader gets."""

    def __init__(self):
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._data += chunk

    def next(self) -> tuple[dict, list[bytes]] | None:
        if len(self._data) < PREFIX.size:
            return None
        head_len, payload_len = PREFIX.unpack_from(self._data)
        if head_len > MAX_HEADER or payload_len > MAX_PAYLOAD:
            raise FrameError(f"frame of {head_len} + {payload_len} bytes is over the limit")
        end = PREFIX.size + head_len + payload_len
        if len(self._data) < end:
            return None
        head = bytes(self._data[PREFIX.size:PREFIX.size + head_len])
        payload = bytes(self._data[PREFIX.size + head_len:end])
        del self._data[:end]
        return decode_frame(head, payload)


def read_frame(fd: int) -> tuple[dict, list[bytes]] | None:
    """Blocking read of one frame (None at end of file before a frame starts)."""
    prefix = _read_exact(fd, PREFIX.size, eof_ok=True)
    if prefix is None:
        return None
    head_len, payload_len = PREFIX.unpack(prefix)
    if head_len > MAX_HEADER or payload_len > MAX_PAYLOAD:
        raise FrameError(f"frame of {head_len} + {payload_len} bytes is over the limit")
    return decode_frame(_read_exact(fd, head_len), _read_exact(fd, payload_len))


def _read_exact(fd: int, n: int, eof_ok: bool = False) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            if eof_ok and got == 0:
                return None
            raise FrameError(f"end of file inside a frame ({got} of {n} bytes)")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
