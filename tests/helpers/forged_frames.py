"""A Python target whose module-level code rewrites its sandbox child's replies on some inputs.

A Python target's module is imported in the sandbox's fork server, the process every sandbox
child is forked from (``python -m symcc_ulfm.executors.sandbox.child``: its ``__main__``), so it
can replace the child's own code. This one wraps ``Child.run`` and ``Child.measure`` to see the
input of each request and ``Child.send`` to rewrite the reply to it; the first byte of the input
chooses the forgery (the concolic search solves each comparison from a benign seed):

``P`` a ``result`` with one hint more than it has candidates (``zip(..., strict=True)`` in the
worker loop raised, and the rank exited 70);
``T`` a ``result`` whose ``executions`` is a string;
``N`` a ``result`` whose ``seconds`` is NaN (JSON allows it; the worker's RESULT then never
encoded, and the worker looped forever trying to make it smaller);
``D`` a ``result`` whose notes are nested 100,000 deep, written as raw bytes (``json.loads``
raises ``RecursionError``, not ``ValueError``);
``M`` a ``measured`` frame of 7 bytes of coverage (not a whole number of 64-bit ids).

Every other input, and every other request, is served as usual.
"""

from __future__ import annotations

from pathlib import Path

FORGERIES = "PTNDM"
SEED = b"AAAAAAAA"

SOURCE = '''
import json
import struct
import sys

_child = sys.modules.get("__main__")
_Child = getattr(_child, "Child", None)
_inputs = []  # the inputs of the request being served


def _forge(message, blobs):
    kind = message.get("type")
    if kind == "result" and _inputs:
        op = _inputs[0][:1]
        if op == b"P":
            return {**message, "hints": [{}] * (message["candidates"] + 1)}, blobs
        if op == b"T":
            return {**message, "executions": "many"}, blobs
        if op == b"N":
            return {**message, "seconds": float("nan")}, blobs
        if op == b"D":
            return None, blobs
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
    if op == 0x50:  # P
        return "p"
    if op == 0x54:  # T
        return "t"
    if op == 0x4e:  # N
        return "n"
    if op == 0x44:  # D
        return "d"
    if op == 0x4d:  # M
        return "m"
    return "benign"
'''


def write_forger(directory: Path) -> str:
    """The target ``directory/forger.py:parse``."""
    path = directory / "forger.py"
    path.write_text(SOURCE)
    return f"{path}:parse"
