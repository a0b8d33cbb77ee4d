"""Targets whose module-level code rewrites their sandbox child's replies, and hostile replies.

A Python target's module is imported in the sandbox's fork server, the process every sandbox
child is forked from (``python -m symcc_ulfm.executors.sandbox.child``: its ``__main__``), so it
can replace the child's own code. The forger (:func:`write_forger`) wraps ``Child.run`` and
``Child.measure`` to see the input of each request and ``Child.send`` to rewrite the reply to
it; the first byte of the input chooses the forgery. Each forged ``result`` first plants a
candidate (:data:`PLANTED`) and a ``crash`` finding of its own (:data:`PLANTED_FINDING`,
signature :data:`PLANTED_SIGNATURE`), counts and all, then breaks the frame:

``P`` one hint more than it has candidates (``zip(..., strict=True)`` in the worker loop raised,
and the rank exited 70);
``T`` ``executions`` a string;
``N`` ``seconds`` NaN (JSON allows it; the worker's RESULT then never encoded, and the worker
looped forever trying to make it smaller);
``S`` ``seconds`` a million: longer than the run took;
``D`` notes nested 100,000 deep, written as raw bytes (``json.loads`` raises ``RecursionError``,
not ``ValueError``);
``M`` a ``measured`` frame of 7 bytes of coverage (not a whole number of 64-bit ids).

``E`` answers its ``run`` with an ``error`` frame (the engine's failure, as a child reports one)
whose message is 8,000 characters: more than a worker's RESULT takes (its worker once looped
forever trying to make that RESULT smaller).

Every other input, and every other request, is served as usual. The echo target
(:func:`write_echo`) answers with whatever bytes its input holds; :func:`hostile_replies` draws
such bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from symcc_ulfm.executors.sandbox.frames import MAX_HEADER, PREFIX

FORGERIES = "PTNSDM"  # each a protocol finding; E is an error
SEED = b"AAAAAAAA"
PLANTED = b"planted by the target as a candidate"
PLANTED_FINDING = b"planted by the target as a finding"
PLANTED_SIGNATURE = "planted"

SOURCE = '''
import json
import struct
import sys

_child = sys.modules.get("__main__")
_Child = getattr(_child, "Child", None)
_inputs = []  # the inputs of the request being served


def _plant(message, blobs):
    count = message["candidates"]
    message = {**message, "candidates": count + 1,
               "findings": [*message["findings"], {"outcome": {"kind": "crash", "signature": PLANTED_SIGNATURE,
                                                               "detail": ""}}]}
    for name in ("hints", "reaches"):
        if message[name] is not None:
            message[name] = [*message[name], None]
    return message, [*blobs[:count], PLANTED, *blobs[count:], PLANTED_FINDING]


def _forge(message, blobs):
    kind = message.get("type")
    if kind == "result" and _inputs:
        op = _inputs[0][:1]
        if op in (b"P", b"T", b"N", b"S"):
            message, blobs = _plant(message, blobs)
        if op == b"P":
            return {**message, "hints": [{}] * (message["candidates"] + 1)}, blobs
        if op == b"T":
            return {**message, "executions": "many"}, blobs
        if op == b"N":
            return {**message, "seconds": float("nan")}, blobs
        if op == b"S":
            return {**message, "seconds": 1e6}, blobs
        if op == b"D":
            return None, blobs
        if op == b"E":
            return {"type": "error", "error": "ExecutorError", "message": "forged " * 1143, "exit_code": 70}, []
    if kind == "measured" and message["index"] < len(_inputs) and _inputs[message["index"]][:1] == b"M":
        return message, [b"\\x01" * 7]
    return message, blobs


if _Child is not None:
    _send, _run, _measure = _Child.send, _Child.run, _Child.measure

    def run(self, message, blobs):
        _inputs[:] = blobs[:1]
        return _run(self, message, blobs)

    def measure(self, message, blobs):
        _inputs[:] = blobs
        return _measure(self, message, blobs)

    def send(self, message, blobs=()):
        forged, blobs = _forge(message, list(blobs))
        if forged is None:  # nested deeper than json.dumps would write: the bytes by hand
            head = ('{"type":"result","notes":' + "[" * 100000 + "]" * 100000 + ',"blobs":[]}').encode()
            self.mine()
            _child.write_all(self.rep, struct.pack("<II", len(head), 0) + head)
            return None
        return _send(self, forged, blobs)

    _Child.run, _Child.measure, _Child.send = run, measure, send


def parse(data: bytes) -> str:
    if len(data) < 2:
        return "short"
    op = data[0]
    for byte, name in ((0x50, "p"), (0x54, "t"), (0x4e, "n"), (0x53, "s"), (0x45, "e"), (0x44, "d"), (0x4d, "m")):
        if op == byte:  # a branch per forgery, for the concolic search
            return name
    return "benign"
'''


ECHO = b"FRAME"
LATE = b"LATE"
ECHO_SOURCE = '''
import sys

_child = sys.modules.get("__main__")
_Child = getattr(_child, "Child", None)


def _echoing(serve):
    def handler(self, message, blobs):
        if blobs and blobs[0][:5] == b"FRAME":  # the rest of the input is the reply, byte for byte
            self.mine()
            _child.write_all(self.rep, blobs[0][5:])
            return None
        if blobs and blobs[0][:4] == b"LATE":  # served as usual, then the rest written after the reply
            served = serve(self, message, blobs)
            self.mine()
            _child.write_all(self.rep, blobs[0][4:])
            return served
        return serve(self, message, blobs)
    return handler


if _Child is not None:
    for _request in ("run", "measure", "reproduce", "offer"):
        setattr(_Child, _request, _echoing(getattr(_Child, _request)))


def parse(data: bytes) -> str:
    return "ok" if data[:1] == b"o" else "other"
'''


def write_echo(directory: Path) -> str:
    """The target ``directory/echo.py:parse``, whose sandbox child answers a ``run``,
    ``measure``, ``reproduce`` or ``offer`` request whose (first) input is :data:`ECHO` plus
    bytes with those bytes alone, written to its reply pipe as they are, and serves on; one whose
    input is :data:`LATE` plus bytes as usual, and then writes those bytes."""
    path = directory / "echo.py"
    path.write_text(ECHO_SOURCE)
    return f"{path}:parse"


def write_forger(directory: Path) -> str:
    """The target ``directory/forger.py:parse``."""
    path = directory / "forger.py"
    path.write_text(f"PLANTED = {PLANTED!r}\nPLANTED_FINDING = {PLANTED_FINDING!r}\n"
                    f"PLANTED_SIGNATURE = {PLANTED_SIGNATURE!r}\n" + SOURCE)
    return f"{path}:parse"


# -- hostile replies, for the fuzz tests (Hypothesis) ------------------------------------------------

_OK = {"kind": "ok", "signature": "", "detail": ""}
_RAISED = {"kind": "exception", "signature": "KeyError at t.py:parse:3", "detail": "KeyError: 'x'"}
VALID = {  # a valid reply of each type but result (hostile_replies draws those), with its blobs
    "ready": ({"identity": {"executor": "concolic"}, "batch_measure": False, "execution_limit_s": 1.0,
               "run_limit_s": 2.0, "files": ["/t.py"]}, [b"seed"]),
    "error": ({"error": "TargetError", "message": "target: no", "exit_code": 2}, []),
    "exec": ({}, [b"executing"]),
    "reproduced": ({"outcome": _RAISED, "report": "Traceback"}, []),
    "preflight-ok": ({"summary": {}}, []),
    "offered": ({"count": 1}, []),
    "measured": ({"index": 0, "outcome": _OK, "returned": None}, [bytes(8)]),
    "measured-end": ({"count": 0}, []),
}
MUTATIONS = ("drop", "extra", "retype", "count", "type", "deep", "blob", "sizes", "utf8", "not-object", "garbage",
             "oversize")
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.just("\ud800"))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                       max_leaves=8)


@st.composite
def _result(draw) -> tuple[dict, list[bytes]]:
    n, k = draw(st.integers(0, 3)), draw(st.integers(0, 2))
    blobs = [draw(st.binary(max_size=12)) for _ in range(n + k)]
    header = {"type": "result", "hints": draw(st.sampled_from([None, [{"bound": 1, "branch": 0}] * n])),
              "executions": draw(st.integers(0, 9)), "solver_queries": 0, "solver_seconds": 0.0,
              "seconds": draw(st.sampled_from([0.0, 0.0, 1e6])), "notes": {"x": 1}, "candidates": n,
              "findings": [{"outcome": _RAISED}] * k, "reaches": draw(st.sampled_from([None, [[8]] * n]))}
    return header, blobs


@st.composite
def hostile_replies(draw, types: tuple[str, ...] = ("result", *VALID)) -> bytes:
    """A whole frame (its prefix agrees with its bytes) of one of ``types``: valid, or mutated by
    some of :data:`MUTATIONS` (a field dropped, added or of another type; a count off; another
    type; notes nested past ``json``'s recursion limit; a blob more or less, or sizes that lie;
    a header that is not UTF-8, not an object or garbage; a prefix over the size limit)."""
    kind = draw(st.sampled_from(types))
    if kind == "result":
        header, blobs = draw(_result())
    else:
        header, blobs = dict(VALID[kind][0], type=kind), list(VALID[kind][1])
    mutations = draw(st.lists(st.sampled_from(MUTATIONS), max_size=3))
    deep = None
    for mutation in mutations:
        keys = sorted(header)
        if mutation == "drop" and keys:
            header.pop(draw(st.sampled_from(keys)))
        elif mutation == "extra":
            header[draw(st.text(min_size=1, max_size=8))] = draw(_VALUES)
        elif mutation == "retype" and keys:
            header[draw(st.sampled_from(keys))] = draw(_VALUES)
        elif mutation == "count" and type(header.get("candidates")) is int:
            header["candidates"] += draw(st.sampled_from([-1, 1, 1 << 17]))
        elif mutation == "type":
            header["type"] = draw(st.sampled_from([*VALID, "result", "run", ""]) | st.text(max_size=8))
        elif mutation == "deep":
            deep = draw(st.sampled_from([40, 5000, 200000]))
        elif mutation == "blob":
            if blobs and draw(st.booleans()):
                blobs.pop()
            else:
                blobs.append(draw(st.binary(max_size=12)))
    sizes = draw(st.lists(st.integers(-1, 20), max_size=4)) if "sizes" in mutations else [len(b) for b in blobs]
    text = json.dumps({**header, "blobs": sizes}, separators=(",", ":"))
    if deep is not None:  # nested by hand: json.dumps stops at its own recursion limit
        text = text[:-1] + ',"notes":' + "[" * deep + "]" * deep + "}"
    head = text.encode()
    if "utf8" in mutations:
        at = draw(st.integers(0, len(head)))
        head = head[:at] + b"\xff\xfe" + head[at:]
    if "not-object" in mutations:
        head = b"[1,2,3]"
    if "garbage" in mutations:
        head = draw(st.binary(max_size=40))
    payload = b"".join(blobs)
    declared = (MAX_HEADER + 1, len(payload)) if "oversize" in mutations else (len(head), len(payload))
    return PREFIX.pack(*declared) + head + payload
