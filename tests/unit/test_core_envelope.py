"""Wire envelopes: encode/decode validation and fence checks (pure core)."""

from __future__ import annotations

import json

import pytest

from symcc_ulfm.core.canonical import canonical_json
from symcc_ulfm.core.envelope import SCHEMAS, VERSION, Fence, check_fence, decode, encode
from symcc_ulfm.errors import FenceError, ProtocolError, StaleGeneration

LIMIT = 1 << 16
H1 = "1" * 64
H2 = "2" * 64
H3 = "3" * 64


def _fence(**kw) -> Fence:
    args = dict(generation=2, shard="g2-m0", lease="2.0.7", work_hash=H1, input_hash=H2, worker=5)
    args.update(kw)
    return Fence(**args)


def _result(**kw) -> dict:
    fields = {
        **_fence().fields(),
        "candidates": [{"sha256": H3, "length": 4, "coverage": [1, 2, 3], "hint": {"bound": 2, "optimistic": False}}],
        "findings": [{"kind": "exception", "signature": "KeyError at t.py:parse:4", "detail": "KeyError: 'k'",
                      "sha256": H3}],
        "stats": {"seconds": 0.5, "executions": 3},
        "error": None,
    }
    fields.update(kw)
    return fields


VALID = {
    "READY": {"generation": 0, "worker": 3},
    "WORK": {**_fence().fields(), "hint": None},
    "RESULT": _result(),
    "FRONTIER": {"generation": 1, "master": 4, "items": [{"input_hash": H2, "priority": 2, "hint": None, "length": 5}], "coverage": [7, 9]},
    "STOP": {"generation": 3, "reason": "deadline"},
    "RETURN": {"generation": 2, "worker": 5, "leases": ["2.1.17", "2.1.18"]},
    "PROBE": {"generation": 1, "master": 0, "wave": 3},
    "STATUS": {"generation": 1, "master": 4, "wave": 3, "idle": True, "sent": 2, "received": 5, "satisfied": False},
    "EXHAUSTED": {"generation": 1, "master": 0, "reason": "budget"},
}


def test_every_type_has_a_valid_example():
    assert set(VALID) == set(SCHEMAS)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_round_trip(kind):
    data = encode(kind, LIMIT, **VALID[kind])
    message = decode(data, LIMIT)
    assert message == {"v": VERSION, "type": kind, **VALID[kind]}
    assert data == canonical_json(message)  # canonical bytes on the wire
    assert decode(bytearray(data), LIMIT) == decode(memoryview(data), LIMIT) == message


def _raw(kind: str, **fields) -> bytes:
    return json.dumps({"v": VERSION, "type": kind, **fields}).encode()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x01\x02garbage",
        b"\x80abc",
        "{\"v\":1}".encode("utf-16"),
        b'{"v":1,"type":"READY","generation":0,"worker":3',  # torn
        b"[1,2,3]",
        b'"READY"',
        b"null",
        b"[" * 100_000,  # deeply nested: must be a ProtocolError, not a RecursionError
        b'{"v":1,"type":"READY","generation":' + b"9" * 5000 + b',"worker":1}',
        b'{"v":1,"type":"READY","generation":NaN,"worker":1}',
    ],
)
def test_garbage_is_rejected(data):
    with pytest.raises(ProtocolError):
        decode(data, 1 << 22)


def test_oversized_is_rejected_before_parsing():
    data = encode("READY", LIMIT, generation=0, worker=1)
    decode(data, len(data))
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        decode(data, len(data) - 1)
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        decode(b"\xff" * 100, 99)  # size is checked before decoding
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        encode("RESULT", 200, **_result())


@pytest.mark.parametrize("version", [0, 2, "1", 1.0, True, None, [1]])
def test_wrong_version(version):
    data = json.dumps({"v": version, "type": "READY", "generation": 0, "worker": 1}).encode()
    with pytest.raises(ProtocolError, match="version"):
        decode(data, LIMIT)


def test_missing_version():
    with pytest.raises(ProtocolError, match="version"):
        decode(b'{"type":"READY","generation":0,"worker":1}', LIMIT)


@pytest.mark.parametrize("kind", ["HELLO", "ready", "", None, 3, ["READY"], {"a": 1}])
def test_unknown_type(kind):
    data = json.dumps({"v": 1, "type": kind, "generation": 0, "worker": 1}).encode()
    with pytest.raises(ProtocolError, match="unknown message type"):
        decode(data, LIMIT)
    if isinstance(kind, str):
        with pytest.raises(ProtocolError):
            encode(kind, LIMIT, generation=0, worker=1)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_missing_fields(kind):
    for name in VALID[kind]:
        fields = {k: v for k, v in VALID[kind].items() if k != name}
        with pytest.raises(ProtocolError, match=f"missing field '{name}'"):
            decode(_raw(kind, **fields), LIMIT)
        with pytest.raises(ProtocolError):
            encode(kind, LIMIT, **fields)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_extra_fields(kind):
    with pytest.raises(ProtocolError, match="unexpected fields"):
        decode(_raw(kind, **VALID[kind], pickle="gASVAAAA"), LIMIT)
    with pytest.raises(ProtocolError, match="unexpected fields"):
        encode(kind, LIMIT, **VALID[kind], extra=1)


MISTYPED = [
    ("READY", "generation", -1),
    ("READY", "generation", 1.0),
    ("READY", "generation", True),
    ("READY", "generation", "0"),
    ("READY", "generation", 2**63),
    ("READY", "worker", None),
    ("WORK", "shard", ""),
    ("WORK", "shard", "g0 m1"),
    ("WORK", "shard", "x" * 129),
    ("WORK", "lease", "../etc"),
    ("WORK", "lease", 7),
    ("WORK", "work_hash", "A" * 64),
    ("WORK", "input_hash", "1" * 63),
    ("WORK", "hint", [1]),
    ("WORK", "hint", {"bound": [1]}),
    ("WORK", "hint", {"bound": {"nested": 1}}),
    ("WORK", "hint", {str(i): 1 for i in range(17)}),
    ("WORK", "hint", {"k": "x" * 257}),
    ("RESULT", "candidates", [{"sha256": H3, "length": 4, "coverage": [], "hint": "bound=1"}]),
    ("RESULT", "candidates", {"sha256": H3}),
    ("RESULT", "candidates", [{"sha256": H3, "length": 4}]),
    ("RESULT", "candidates", [{"sha256": H3, "length": -4, "coverage": []}]),
    ("RESULT", "candidates", [{"sha256": "zz", "length": 4, "coverage": []}]),
    ("RESULT", "candidates", [{"sha256": H3, "length": 4, "coverage": [-1]}]),
    ("RESULT", "candidates", [{"sha256": H3, "length": 4, "coverage": [1.5]}]),
    ("RESULT", "candidates", [{"sha256": H3, "length": 4, "coverage": [], "extra": 1}]),
    ("RESULT", "candidates", ["x"]),
    ("RESULT", "findings", None),
    ("RESULT", "findings", [{"kind": "ok", "signature": "s", "detail": "", "sha256": H3}]),
    ("RESULT", "findings", [{"kind": "crash", "signature": "", "detail": "", "sha256": H3}]),
    ("RESULT", "findings", [{"kind": "crash", "signature": "s" * 401, "detail": "", "sha256": H3}]),
    ("RESULT", "findings", [{"kind": "crash", "signature": "s", "detail": "d" * 401, "sha256": H3}]),
    ("RESULT", "findings", [{"kind": "crash", "signature": "s", "detail": "", "sha256": "zz"}]),
    ("RESULT", "findings", [{"kind": "crash", "signature": "s", "detail": "", "sha256": H3, "time": 1.0}]),
    ("RESULT", "findings", [{"kind": "crash", "signature": "s", "detail": "", "sha256": H3}] * 257),
    ("RESULT", "stats", {"seconds": "fast"}),
    ("RESULT", "stats", {"seconds": 1e19}),
    ("RESULT", "stats", [1]),
    ("RESULT", "error", 5),
    ("RESULT", "error", "x" * 4097),
    ("FRONTIER", "items", [{"input_hash": H2}]),
    ("FRONTIER", "items", [{"input_hash": H2, "priority": -1, "hint": None, "length": 1}]),
    ("FRONTIER", "items", [{"input_hash": "nothex", "priority": 1, "hint": None, "length": 1}]),
    ("FRONTIER", "items", [{"input_hash": H2, "priority": 1, "hint": 3, "length": 1}]),
    ("FRONTIER", "coverage", "1,2"),
    ("STOP", "reason", None),
    ("RETURN", "leases", "2.1.17"),
    ("RETURN", "leases", ["bad token!"]),
    ("RETURN", "leases", ["t"] * 65),
    ("PROBE", "wave", -1),
    ("STATUS", "idle", 1),
    ("STATUS", "sent", 1.5),
    ("EXHAUSTED", "master", "0"),
    ("STATUS", "satisfied", 0),
    ("EXHAUSTED", "reason", None),
]


@pytest.mark.parametrize("kind, name, value", MISTYPED)
def test_mistyped_fields(kind, name, value):
    fields = {**VALID[kind], name: value}
    with pytest.raises(ProtocolError, match=f"invalid field '{name}'"):
        decode(_raw(kind, **fields), LIMIT)


def test_result_error_string_is_allowed():
    decode(encode("RESULT", LIMIT, **_result(error="executor timed out", candidates=[])), LIMIT)


# -- fences ------------------------------------------------------------------------------------


def test_matching_result_passes():
    message = decode(encode("RESULT", LIMIT, **_result()), LIMIT)
    check_fence(_fence(), message, source=5, current_generation=2)


def test_stale_generation():
    message = decode(encode("RESULT", LIMIT, **_result(generation=1)), LIMIT)
    with pytest.raises(StaleGeneration):
        check_fence(_fence(generation=1), message, source=5, current_generation=2)
    with pytest.raises(StaleGeneration):
        check_fence(_fence(), message, source=5, current_generation=2)


def test_lease_of_an_older_generation_claiming_the_current_one():
    message = decode(encode("RESULT", LIMIT, **_result(generation=2)), LIMIT)
    with pytest.raises(FenceError) as info:
        check_fence(_fence(generation=1), message, source=5, current_generation=2)
    assert type(info.value) is FenceError


def test_wrong_transport_source():
    message = decode(encode("RESULT", LIMIT, **_result()), LIMIT)
    with pytest.raises(FenceError, match="from rank 6"):
        check_fence(_fence(), message, source=6, current_generation=2)
    forged = decode(encode("RESULT", LIMIT, **_result(worker=6)), LIMIT)
    with pytest.raises(FenceError):
        check_fence(_fence(), forged, source=6, current_generation=2)  # claims its own id: still not the lease's
    with pytest.raises(FenceError):
        check_fence(_fence(), forged, source=5, current_generation=2)  # claims another worker


@pytest.mark.parametrize(
    "name, value", [("lease", "2.0.8"), ("shard", "g2-m4"), ("work_hash", H3), ("input_hash", H1)]
)
def test_forged_fence_fields(name, value):
    message = decode(encode("RESULT", LIMIT, **_result(**{name: value})), LIMIT)
    with pytest.raises(FenceError, match=name) as info:
        check_fence(_fence(), message, source=5, current_generation=2)
    assert type(info.value) is FenceError
