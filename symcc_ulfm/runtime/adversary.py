"""Test hook: a worker that misbehaves on purpose.

With ``SYMCC_ULFM_TEST_ADVERSARY=<stable rank>[:<mode>]`` in the environment of the job, that
rank (a worker in generation 0) misbehaves; the bad-input tests use it to show that every one
of these is rejected and logged by the master and that the campaign continues. Inactive unless
the variable names the rank; never set in production. Modes:

``messages`` (the default)
    its first WORK is answered with garbage, an oversized message, forged fences, a message on
    the failure-sentinel tag, a message of the wrong type and a RESULT whose staged object does
    not match its SHA-256; its second with a RESULT whose staged object is a symbolic link.
``staged``
    a staged object replaced by a directory, then by a FIFO, then by a sparse file of 4 GiB; the
    fourth RESULT claims ``generated = 9e17`` candidates.
``flood``
    before its first RESULT, 5,000 READY messages of a generation that does not exist.
``crash``
    its first RESULT is never sent: the rank raises an exception no code expects (a bug).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core import envelope
from ..store.staging import staged_name
from .transport import DATA, SENTINEL

ADVERSARY_VAR = "SYMCC_ULFM_TEST_ADVERSARY"


MODES = ("messages", "staged", "flood", "crash")
FLOOD = 5000


def adversary_mode(stable: int) -> str | None:
    """How this rank misbehaves (see the module docstring), None when it is not the adversary."""
    rank, _, mode = os.environ.get(ADVERSARY_VAR, "").partition(":")
    if rank != str(stable):
        return None
    return mode if mode in MODES else "messages"


def misbehave(mode: str, count: int, result: bytes, state_root: Path, limit: int) -> list[tuple[str, bytes]] | None:
    """Messages (channel, bytes) to send instead of the genuine RESULT of the ``count``-th WORK
    (1-based), or None."""
    message = json.loads(result)
    if mode == "crash":
        raise RuntimeError("adversary: an exception no code of the runtime expects")
    if mode == "staged":
        return _staged(count, message, result, state_root)
    if mode == "flood":
        bogus = envelope.encode("READY", limit, generation=message["generation"] + 1000, worker=message["worker"])
        return [(DATA, bogus)] * FLOOD + [(DATA, result)] if count == 1 else None
    if count == 1 and message["candidates"]:
        fence = {k: message[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
        forged = {**message, "lease": f"{message['generation']}.0.999999"}
        stale = {**message, "generation": message["generation"] + 7}
        impostor = {**message, "worker": message["worker"] + 1000}
        _corrupt_staged(state_root, message, symlink=False)
        return [
            (DATA, os.urandom(64) + b"\xff"),
            (DATA, b"{" + b" " * limit + b"}"),
            (DATA, _raw(forged)),
            (DATA, _raw(stale)),
            (DATA, _raw(impostor)),
            (SENTINEL, b"x"),
            (DATA, envelope.encode("FRONTIER", limit, generation=fence["generation"], master=fence["worker"],
                                       items=[], coverage=[])),
            (DATA, result),
        ]
    if count == 2 and message["candidates"]:
        _corrupt_staged(state_root, message, symlink=True)
        return [(DATA, result)]
    return None


def _staged(count: int, message: dict, result: bytes, state_root: Path) -> list[tuple[str, bytes]] | None:
    if count == 4:
        return [(DATA, _raw({**message, "stats": {**message["stats"], "generated": 9e17}}))]
    if count > 3 or not message["candidates"]:
        return None
    first = message["candidates"][0]
    path = Path(state_root) / staged_name(message["worker"], message["lease"], first["sha256"])
    path.unlink()
    if count == 1:
        path.mkdir()
    elif count == 2:
        os.mkfifo(path)
    else:
        with open(path, "wb") as handle:
            handle.truncate(4 << 30)  # sparse: nothing is written, a reader that reads it whole holds 4 GiB
    return [(DATA, result)]


def _raw(message: dict) -> bytes:
    return json.dumps(message, sort_keys=True).encode()


def _corrupt_staged(state_root: Path, message: dict, symlink: bool) -> None:
    first = message["candidates"][0]
    path = Path(state_root) / staged_name(message["worker"], message["lease"], first["sha256"])
    data = path.read_bytes()
    path.unlink()
    if symlink:
        decoy = path.with_name("decoy")
        decoy.write_bytes(data)
        os.symlink(decoy, path)
    else:
        path.write_bytes(bytes(b ^ 0xFF for b in data) or b"\x00")
