"""Every frame a sandbox child sends is untrusted input: hostile frames at the parent's reader.

Reader: frames of every reply type, valid or broken in the ways tests/helpers/forged_frames.py
draws (a field dropped, added or of another type, counts that disagree, a type out of turn,
nesting past ``json``'s recursion limit, blob sizes that lie, a header that is not UTF-8 or not
JSON, a prefix over the size limit), and plain garbage, go through a real pipe in pieces of any
size into :class:`FrameBuffer` as the parent reads them: each comes out as a frame its type's
schema holds (a ``result``'s candidates, hints and reaches zip strictly, the defect that once
killed a worker rank) or is refused with :class:`FrameError`, nothing else is raised, the pieces
make no difference, and every whole frame is settled as soon as its bytes are in.

Sandbox: a real isolated sandbox whose target makes its child answer with the bytes its input
holds (``write_echo``): a frame the reader refuses, one out of turn, one that claims more
seconds than the run took, is a ``protocol`` finding of that input with the refusal as its
signature, nothing it carried (candidates, findings) comes back, the child is forked again and
serves the next input; a valid ``result`` is taken as it is (what a target says of its own run
is its claim) and a valid ``error`` is the engine's error the parent rebuilds. Bytes written
after a reply are the ``protocol`` finding of the input replied to, reported with the next run.
"""

from __future__ import annotations

import os
import select
import threading

import pytest
from helpers.forged_frames import ECHO, LATE, VALID, hostile_replies, write_echo
from hypothesis import event, given, settings
from hypothesis import strategies as st

from symcc_ulfm.errors import SymccUlfmError
from symcc_ulfm.executors import create
from symcc_ulfm.executors.sandbox import isolation
from symcc_ulfm.executors.sandbox.frames import PREFIX, REPLIES, FrameBuffer, FrameError, encode_frame
from symcc_ulfm.executors.sandbox.parent import Sandbox

PIECES = st.lists(st.one_of(hostile_replies(), hostile_replies(), st.binary(max_size=40)), min_size=1, max_size=4)
BENIGN = b"o-benign"
RESULT = ({"hints": None, "executions": 1, "solver_queries": 0, "solver_seconds": 0.0, "seconds": 0.0, "notes": {},
           "candidates": 0, "findings": [], "reaches": None}, [])
REPLY = {**VALID, "result": RESULT}  # a valid reply of each type


def _settle(buffer: FrameBuffer, out: list) -> bool:
    """Every frame the buffer holds into ``out``; False once one is refused (the parent stops
    reading the child there: it kills it)."""
    while True:
        try:
            frame = buffer.next()
        except FrameError as exc:
            out.append(exc.what)
            return False
        if frame is None:
            return True
        out.append(frame)


def _write(fd: int, data: bytes, cuts: list[int]) -> None:
    """``data`` into the pipe ``fd``, first in pieces of ``cuts`` bytes, then the rest."""
    pos = 0
    try:
        for size in cuts:
            pos += os.write(fd, data[pos:pos + size]) if pos < len(data) else 0
        while pos < len(data):
            pos += os.write(fd, data[pos:])
    except BrokenPipeError:  # the reader refused a frame and stopped reading
        pass
    finally:
        os.close(fd)


def _through_pipe(data: bytes, cuts: list[int]) -> tuple[list, bytes]:
    """What the reader makes of ``data`` written into a pipe in pieces of ``cuts`` bytes: the
    frames and the refusal, and the bytes left unsettled at the end of the file."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    writer = threading.Thread(target=_write, args=(w, data, cuts))
    writer.start()
    buffer, out = FrameBuffer(), []
    try:
        while True:
            readable, _, _ = select.select([r], [], [], 30)
            assert readable, f"no bytes and no end of file in 30 s; settled so far: {out}"
            try:
                chunk = os.read(r, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break
            buffer.feed(chunk)
            if not _settle(buffer, out):
                break
    finally:
        os.close(r)
        writer.join()
    held = buffer.pending()
    return out, data[len(data) - held:] if held else b""


def _at_once(data: bytes) -> list:
    buffer, out = FrameBuffer(), []
    buffer.feed(data)
    _settle(buffer, out)
    return out


@given(pieces=PIECES, cuts=st.lists(st.integers(1, 64), max_size=6))
@settings(max_examples=300)
def test_the_reader_takes_a_valid_frame_or_refuses_it_whatever_the_bytes_and_their_pieces(pieces, cuts):
    data = b"".join(pieces)
    out, left = _through_pipe(data, cuts)
    assert out == _at_once(data), "the pieces a read gets make no difference"
    refused = bool(out) and isinstance(out[-1], str)
    for frame in out[:-1] if refused else out:
        message, blobs = frame
        assert message["type"] in REPLIES and message["blobs"] == [len(b) for b in blobs]
        if message["type"] == "result":
            count = message["candidates"]
            assert len(blobs) == count + len(message["findings"])
            list(zip(blobs[:count], message["hints"] or [None] * count, message["reaches"] or [()] * count,
                     strict=True))
    if not refused and len(left) >= PREFIX.size:  # what is held at the end of the file is a frame not whole yet
        head, payload = PREFIX.unpack_from(left)
        assert len(left) < PREFIX.size + head + payload, "a whole frame held, not settled"


@pytest.mark.parametrize("kind", sorted(REPLY))
def test_each_valid_reply_passes_and_each_field_is_required(kind):
    assert set(REPLY) == set(REPLIES), "a valid reply of every type the schema has"
    message, blobs = REPLY[kind]
    frame = encode_frame({**message, "type": kind}, blobs)
    assert _at_once(frame) == [({**message, "type": kind, "blobs": [len(b) for b in blobs]}, blobs)]
    fields, optional, _ = REPLIES[kind]
    for name in sorted(set(fields) - optional):
        [what] = _at_once(encode_frame({**{k: v for k, v in message.items() if k != name}, "type": kind}, blobs))
        assert what == f"{kind} frame: missing fields"


# -- a real sandbox whose child echoes its input as its reply ------------------------------------------

needs_namespaces = pytest.mark.skipif(isolation.unavailable() is not None, reason="no user namespaces here")


@pytest.fixture(scope="module")
def echo(tmp_path_factory):
    sandbox = create("concolic", write_echo(tmp_path_factory.mktemp("echo")), {"exec_timeout_s": 1.0})
    assert isinstance(sandbox, Sandbox)
    yield sandbox
    sandbox.close()


def _serves(sandbox: Sandbox) -> None:
    measured = sandbox.measure(BENIGN)
    assert measured.outcome.kind == "ok" and measured.coverage, measured


# an exec frame announces an execution the request goes on waiting for (its bound is a hang's, tested apart)
# (results drawn as often as all the other types together)
RUN_REPLIES = st.one_of(hostile_replies(types=("result",)),
                        hostile_replies(types=tuple(t for t in ("result", *VALID) if t != "exec")))


@needs_namespaces
@given(frame=RUN_REPLIES)
@settings(max_examples=80)
def test_a_run_whose_child_answers_with_any_frame_is_a_protocol_finding_or_the_frame_taken(echo, frame):
    data = ECHO + frame
    [read] = _at_once(frame)
    deaths = echo.deaths
    try:
        result = echo.run(data, mutate=False)
    except SymccUlfmError:
        assert read[0]["type"] == "error", "only a valid error frame is the engine's error"
        event("an error frame: the engine's error")
        _serves(echo)
        return
    if isinstance(read, str) or read[0]["type"] != "result":
        what = read if isinstance(read, str) else f"{read[0]['type']} frame in reply to run"
        _refused(echo, result, data, what, deaths)
        event("refused by the reader" if isinstance(read, str) else "out of turn")
        return
    message, blobs = read
    claimed = max(message["seconds"], message["solver_seconds"])
    if claimed >= 1000 or (claimed > 0 and result.findings and result.findings[0].data == data):
        _refused(echo, result, data, "result frame: seconds longer than the run", deaths)
        event("a result claiming more seconds than the run")
        return
    count = message["candidates"]
    assert result.candidates == blobs[:count] and result.hints == message["hints"]
    assert [f.data for f in result.findings] == blobs[count:] and result.executions == message["executions"]
    assert echo.deaths == deaths, "a valid reply: the child serves on"
    event("a valid result, taken")
    _serves(echo)


def _refused(sandbox: Sandbox, result, data: bytes, what: str, deaths: int) -> None:
    [finding] = result.findings
    assert (finding.outcome.kind, finding.outcome.signature, finding.data) == ("protocol", f"sandbox reply: {what}",
                                                                               data)
    assert result.candidates == [] and result.hints is None and result.reaches is None, "nothing it carried"
    assert sandbox.deaths == deaths + 1, "the child that sent it was killed"
    _serves(sandbox)


def _frame(kind: str, blobs=None, **fields) -> bytes:
    message, default = REPLY[kind]
    return encode_frame({**message, "type": kind, **fields}, default if blobs is None else blobs)


@needs_namespaces
@pytest.mark.parametrize("reply, what", [
    (_frame("measured", index=1), "measured frame: out of turn"),
    (_frame("measured", blobs=[b"\x01" * 7]), "measured frame: inconsistent"),
    (_frame("measured", blobs=[b"\x00" * 7 + b"\x80"]), "measured frame: inconsistent"),
    (_frame("measured-end", count=3), "measured-end frame: out of turn"),
    (_frame("reproduced"), "reproduced frame in reply to measure"),
    (_frame("measured", outcome={"kind": "protocol", "signature": "s", "detail": ""}), "measured frame: invalid outcome"),
], ids=["index", "partial-id", "id-past-63-bits", "count", "type", "own-kind"])
def test_a_measurement_whose_child_answers_out_of_protocol_is_a_protocol_outcome(echo, reply, what):
    deaths = echo.deaths
    [measured] = echo.measure_many([ECHO + reply, BENIGN])[:1]
    assert (measured.outcome.kind, measured.outcome.signature) == ("protocol", f"sandbox reply: {what}")
    assert measured.coverage == frozenset()
    assert echo.deaths == deaths + 1
    _serves(echo)


@needs_namespaces
def test_a_reproduction_whose_child_answers_out_of_protocol_is_a_protocol_outcome(echo):
    for reply, what in [(_frame("offered"), "offered frame in reply to reproduce"),
                        (_frame("reproduced", outcome={"kind": "ok", "signature": "x" * 401, "detail": ""}),
                         "reproduced frame: invalid outcome")]:
        outcome = echo.reproduce(ECHO + reply)
        assert (outcome.kind, outcome.signature) == ("protocol", f"sandbox reply: {what}")
    _serves(echo)


@needs_namespaces
def test_a_repeat_offender_is_refused_each_time_and_the_sandbox_serves_between(echo):
    """The same forging input run again forges again: each run is the same ``protocol`` finding
    (a campaign settles it at the first, tests/mpi/test_forged_frames.py), each costs one child."""
    data = ECHO + _frame("result", hints=[{}], candidates=0)  # a hint for a candidate it does not have
    deaths = echo.deaths
    for _ in range(3):
        [finding] = echo.run(data, mutate=False).findings
        assert (finding.outcome.kind, finding.outcome.signature) == ("protocol",
                                                                     "sandbox reply: result frame: inconsistent")
        _serves(echo)
    assert echo.deaths == deaths + 3


@needs_namespaces
@pytest.mark.parametrize("late", [b"", b"garbage", None], ids=["nothing", "garbage", "a-valid-result"])
def test_bytes_a_child_writes_after_its_reply_are_the_protocol_finding_of_that_input(echo, late):
    """Written after a valid reply, they are found before the next request is sent (never read
    as its reply): the child is replaced and the next run reports the finding of the input whose
    reply they followed."""
    data = LATE + (_frame("result") if late is None else late)
    assert echo.run(data, mutate=False).findings == []
    if late != b"":  # the bytes are in: read with the reply already, or in the pipe
        arrived = echo._buffer.pending() or select.select([echo._rep], [], [], 30)[0]
        assert arrived, "the child wrote nothing after its reply in 30 s"
    deaths = echo.deaths
    result = echo.run(BENIGN, mutate=False)
    if late == b"":
        assert result.findings == [] and echo.deaths == deaths
        return
    [finding] = result.findings
    assert (finding.outcome.kind, finding.outcome.signature, finding.data) == (
        "protocol", "sandbox reply: bytes between requests", data)
    assert echo.deaths == deaths + 1
    _serves(echo)
