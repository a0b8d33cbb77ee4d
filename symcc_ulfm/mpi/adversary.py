"""Test hook: a worker that misbehaves on purpose.

With ``SYMCC_ULFM_TEST_ADVERSARY=<stable rank>`` in the environment of the job, that rank (a
worker in generation 0) answers its first WORK with garbage, an oversized message, forged
fences, a message on the failure-sentinel tag, a message of the wrong type and a RESULT whose
staged object does not match its SHA-256; its second WORK with a RESULT whose staged object is
a symbolic link. The bad-input tests use it to show that every one of these is rejected and
logged by the master and that the campaign continues. Inactive unless the variable names the
rank; never set in production.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core import envelope
from ..store.staging import staged_name
from .transport import TAG_DATA, TAG_SENTINEL

ADVERSARY_VAR = "SYMCC_ULFM_TEST_ADVERSARY"


def is_adversary(stable: int) -> bool:
    return os.environ.get(ADVERSARY_VAR) == str(stable)


def misbehave(count: int, result: bytes, state_root: Path, limit: int) -> list[tuple[int, bytes]] | None:
    """Messages to send instead of the genuine RESULT of the ``count``-th WORK (1-based), or None."""
    message = json.loads(result)
    if count == 1 and message["candidates"]:
        fence = {k: message[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
        forged = {**message, "lease": f"{message['generation']}.0.999999"}
        stale = {**message, "generation": message["generation"] + 7}
        impostor = {**message, "worker": message["worker"] + 1000}
        _corrupt_staged(state_root, message, symlink=False)
        return [
            (TAG_DATA, os.urandom(64) + b"\xff"),
            (TAG_DATA, b"{" + b" " * limit + b"}"),
            (TAG_DATA, _raw(forged)),
            (TAG_DATA, _raw(stale)),
            (TAG_DATA, _raw(impostor)),
            (TAG_SENTINEL, b"x"),
            (TAG_DATA, envelope.encode("FRONTIER", limit, generation=fence["generation"], master=fence["worker"],
                                       items=[], coverage=[])),
            (TAG_DATA, result),
        ]
    if count == 2 and message["candidates"]:
        _corrupt_staged(state_root, message, symlink=True)
        return [(TAG_DATA, result)]
    return None


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
