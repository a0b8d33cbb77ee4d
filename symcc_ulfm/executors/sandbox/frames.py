"""The sandbox pipe format: a JSON header plus raw byte blobs, length-prefixed; never pickle.

A frame is ``u32 header length, u32 payload length`` (little-endian), the header (UTF-8 JSON
object whose ``blobs`` lists the payload's parts by length), then the payload. Inputs and
candidates travel as blobs, so a 1 MB input is copied, not hex-encoded. Both ends check the
lengths before they allocate: the child runs target code, and target code can write anything
into any file descriptor it finds, or replace the child's own code (a Python target's module
runs in the fork server before the first child is forked).

So every frame the parent reads is untrusted input. :class:`FrameBuffer`, the parent's reader,
checks each reply against the schema of its type (:data:`REPLIES`) before anything acts on it:
the fields and nothing else, their types, sizes and nesting, and the counts that must agree (a
``result``'s candidates with its hints, reaches, findings and blobs). What is not a frame, or
not the frame its type says, raises :class:`FrameError`: ``what`` names the problem without its
particulars (the signature of the ``protocol`` outcome the parent makes of it), ``detail`` gives
them.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any

from ...core.envelope import MAX_COVERAGE_IDS, is_coverage, is_hint
from ...core.finding import KINDS, MAX_DETAIL, MAX_SIGNATURE
from ...core.limits import MAX_OBJECT_BYTES
from ...core.master.report import MAX_COUNT

PREFIX = struct.Struct("<II")
MAX_HEADER = 64 << 20
MAX_PAYLOAD = 1 << 30
MAX_BLOBS = 1 << 20  # parts of one frame's payload
MAX_CANDIDATES = 1 << 16  # candidates (and, apart, findings) of one result
MAX_EXECUTIONS = MAX_COUNT - MAX_CANDIDATES  # of one run: its worker adds its measurements, its master takes MAX_COUNT
MAX_DEPTH = 32  # nesting of a reply's free-form JSON (an identity, which holds the options, nested up to 16)
MAX_TEXT = 1 << 13  # an error's message, a target file's path, a measured return value
MAX_REPORT = 1 << 16  # a reproduction's report (the child sends its last 16,384 characters)
CHILD_KINDS = tuple(k for k in KINDS if k != "protocol")  # what the parent makes of a reply is its own
_HIGH_BITS = bytes(range(0x80))  # a coverage id's last byte (little-endian) below 0x80: the id below 2**63


class FrameError(Exception):
    """Bytes on the pipe that are not a frame, or a reply that is not the frame its type says."""

    def __init__(self, what: str, detail: str = ""):
        super().__init__(f"{what}: {detail}" if detail else what)
        self.what = what
        self.detail = detail


def encode_frame(message: dict, blobs: Sequence[bytes] = ()) -> bytes:
    head = json.dumps({**message, "blobs": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    payload = b"".join(blobs)
    if len(head) > MAX_HEADER or len(payload) > MAX_PAYLOAD:
        raise FrameError("frame over the size limit", f"{len(head)} + {len(payload)} bytes")
    return PREFIX.pack(len(head), len(payload)) + head + payload


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def decode_frame(head: bytes, payload: bytes) -> tuple[dict, list[bytes]]:
    try:
        message = json.loads(head)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameError("header is not JSON", str(exc)) from None
    sizes = message.get("blobs") if isinstance(message, dict) else None
    if not isinstance(sizes, list) or len(sizes) > MAX_BLOBS or not all(type(n) is int and n >= 0 for n in sizes) \
            or sum(sizes) != len(payload):
        raise FrameError("header does not describe the payload")
    blobs, pos = [], 0
    for n in sizes:
        blobs.append(payload[pos:pos + n])
        pos += n
    return message, blobs


class FrameBuffer:
    """The parent's reader: reassembles the child's replies from the chunks a non-blocking read
    gets, and checks each against :data:`REPLIES`."""

    def __init__(self):
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._data += chunk

    def pending(self) -> int:
        """Bytes held that no frame returned yet."""
        return len(self._data)

    def next(self) -> tuple[dict, list[bytes]] | None:
        if len(self._data) < PREFIX.size:
            return None
        head_len, payload_len = PREFIX.unpack_from(self._data)
        if head_len > MAX_HEADER or payload_len > MAX_PAYLOAD:
            raise FrameError("frame over the size limit", f"{head_len} + {payload_len} bytes")
        end = PREFIX.size + head_len + payload_len
        if len(self._data) < end:
            return None
        head = bytes(self._data[PREFIX.size:PREFIX.size + head_len])
        payload = bytes(self._data[PREFIX.size + head_len:end])
        del self._data[:end]
        message, blobs = decode_frame(head, payload)
        check_reply(message, blobs)
        return message, blobs


def read_frame(fd: int) -> tuple[dict, list[bytes]] | None:
    """Blocking read of one frame (None at end of file before a frame starts)."""
    prefix = _read_exact(fd, PREFIX.size, eof_ok=True)
    if prefix is None:
        return None
    head_len, payload_len = PREFIX.unpack(prefix)
    if head_len > MAX_HEADER or payload_len > MAX_PAYLOAD:
        raise FrameError("frame over the size limit", f"{head_len} + {payload_len} bytes")
    return decode_frame(_read_exact(fd, head_len), _read_exact(fd, payload_len))


def _read_exact(fd: int, n: int, eof_ok: bool = False) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            if eof_ok and got == 0:
                return None
            raise FrameError("end of file inside a frame", f"{got} of {n} bytes")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# -- the replies' schema ----------------------------------------------------------------------------


def _count(v: Any) -> bool:
    return type(v) is int and 0 <= v < 2**63


def _executions(v: Any) -> bool:
    return _count(v) and v <= MAX_EXECUTIONS


def _seconds(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v) and 0 <= v < 1e18


def _limit(v: Any) -> bool:
    return _seconds(v) and v > 0


def _flag(v: Any) -> bool:
    return type(v) is bool


def _text(limit: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and len(v) <= limit


def _maybe_text(limit: int) -> Callable[[Any], bool]:
    return lambda v: v is None or (isinstance(v, str) and len(v) <= limit)


def _plain(v: Any, depth: int = MAX_DEPTH) -> bool:
    """JSON (what ``json.loads`` made) that canonical JSON can write: finite numbers, nested at
    most ``depth`` deep."""
    if isinstance(v, dict):
        return depth > 0 and all(_plain(x, depth - 1) for x in v.values())
    if isinstance(v, list):
        return depth > 0 and all(_plain(x, depth - 1) for x in v)
    return not isinstance(v, float) or math.isfinite(v)


def _object(v: Any) -> bool:
    return isinstance(v, dict) and _plain(v)


def _files(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= MAX_BLOBS and all(isinstance(f, str) and len(f) <= MAX_TEXT for f in v)


def _outcome(v: Any) -> bool:
    """An :class:`~.outcome.Outcome` as the child's executor observed it."""
    return (isinstance(v, dict) and set(v) == {"kind", "signature", "detail"} and v["kind"] in CHILD_KINDS
            and isinstance(v["signature"], str) and len(v["signature"]) <= MAX_SIGNATURE
            and (v["kind"] == "ok" or v["signature"] != "")
            and isinstance(v["detail"], str) and len(v["detail"]) <= MAX_DETAIL)


def _findings(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= MAX_CANDIDATES and all(
        isinstance(f, dict) and set(f) == {"outcome"} and _outcome(f["outcome"]) and f["outcome"]["kind"] != "ok"
        for f in v)


def _per_candidate(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """None, or one value per candidate (the count is checked with the whole frame)."""
    return lambda v: v is None or (isinstance(v, list) and len(v) <= MAX_CANDIDATES and all(map(check, v)))


def _reached(v: Any) -> bool:
    return v is None or is_coverage(v)


def _blobs(low: int, high: int | None = None) -> Callable[[dict, list[bytes]], str | None]:
    def check(message: dict, blobs: list[bytes]) -> str | None:
        if len(blobs) < low or (high is not None and len(blobs) > high):
            return f"{len(blobs)} blobs"
        return None
    return check


def _objects(message: dict, blobs: list[bytes]) -> str | None:
    """Each blob a corpus object's size at most (seeds, an executing input)."""
    large = next((len(b) for b in blobs if len(b) > MAX_OBJECT_BYTES), None)
    return None if large is None else f"a blob of {large} bytes"


def _ready(message: dict, blobs: list[bytes]) -> str | None:
    return _objects(message, blobs)


def _exec(message: dict, blobs: list[bytes]) -> str | None:
    return _blobs(1, 1)(message, blobs) or _objects(message, blobs)


def _result(message: dict, blobs: list[bytes]) -> str | None:
    count, findings = message["candidates"], message["findings"]
    if count > MAX_CANDIDATES:
        return f"{count} candidates"
    for name in ("hints", "reaches"):
        if message[name] is not None and len(message[name]) != count:
            return f"{len(message[name])} {name} for {count} candidates"
    if len(blobs) != count + len(findings):
        return f"{len(blobs)} blobs for {count} candidates and {len(findings)} findings"
    return _objects(message, blobs)


def _measured(message: dict, blobs: list[bytes]) -> str | None:
    if len(blobs) != 1:
        return f"{len(blobs)} blobs"
    coverage = blobs[0]
    if len(coverage) % 8 or len(coverage) > 8 * MAX_COVERAGE_IDS:
        return f"coverage of {len(coverage)} bytes"
    if coverage[7::8].translate(None, _HIGH_BITS):
        return "a coverage id of 2**63 or more"
    return None


def _none(message: dict, blobs: list[bytes]) -> str | None:
    return _blobs(0, 0)(message, blobs)


# type -> (its fields' checks, optional fields, the check of the whole frame: None, or what is wrong)
REPLIES: dict[str, tuple[dict[str, Callable[[Any], bool]], frozenset[str],
                         Callable[[dict, list[bytes]], str | None]]] = {
    "ready": ({"identity": _object, "batch_measure": _flag, "execution_limit_s": _limit, "run_limit_s": _limit,
               "files": _files}, frozenset(), _ready),
    "error": ({"error": _text(128), "message": _text(MAX_TEXT), "exit_code": _count, "field": _maybe_text(256)},
              frozenset({"field"}), _none),
    "exec": ({}, frozenset(), _exec),
    "result": ({"hints": _per_candidate(is_hint), "executions": _executions, "solver_queries": _executions,
                "solver_seconds": _seconds, "seconds": _seconds, "notes": _object, "candidates": _count,
                "findings": _findings, "reaches": _per_candidate(_reached), "tried": is_coverage}, frozenset({"tried"}),
               _result),
    "reproduced": ({"outcome": _outcome, "report": _text(MAX_REPORT)}, frozenset(), _none),
    "preflight-ok": ({"summary": _object}, frozenset(), _none),
    "offered": ({"count": _count}, frozenset(), _none),
    "measured": ({"index": _count, "outcome": _outcome, "returned": _maybe_text(MAX_TEXT)}, frozenset(), _measured),
    "measured-end": ({"count": _count}, frozenset(), _none),
}


_ENVELOPE = frozenset({"type", "blobs"})  # what every frame's header holds besides its type's fields


def check_reply(message: dict, blobs: list[bytes]) -> None:
    """A reply frame as :data:`REPLIES` describes its type; FrameError naming what is not."""
    kind = message.get("type")
    spec = REPLIES.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise FrameError("a reply of an unknown type", _preview(kind))
    fields, optional, whole = spec
    given = message.keys() - _ENVELOPE
    if len(given) != len(fields) or not given <= fields.keys():  # the common case costs two comparisons
        extra = sorted(given - fields.keys())
        if extra:
            raise FrameError(f"{kind} frame: unexpected fields", ", ".join(_preview(k) for k in extra[:8]))
        missing = sorted(fields.keys() - optional - given)
        if missing:
            raise FrameError(f"{kind} frame: missing fields", repr(missing))
    for name, check in fields.items():  # the schema's order: the first invalid field is named
        if name in message and not check(message[name]):
            raise FrameError(f"{kind} frame: invalid {name}", _preview(message[name]))
    problem = whole(message, blobs)
    if problem is not None:
        raise FrameError(f"{kind} frame: inconsistent", problem)


def _preview(v: Any) -> str:
    """A value of a refused field, told without walking it (it may be nested deep or be large)."""
    if isinstance(v, str):
        return repr(v[:80]) + (f"... ({len(v)} characters)" if len(v) > 80 else "")
    if isinstance(v, (list, dict)):
        return f"a {type(v).__name__} of {len(v)}"
    return repr(v)[:80]
