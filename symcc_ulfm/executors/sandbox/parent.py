"""Containment: target code runs in a child process, never in a rank, ``launch``, the oracle or a
notebook kernel.

:class:`Sandbox` hosts the real kind (built by :func:`~symcc_ulfm.executors.engine`) and is the
contract it hosts (:mod:`.contained`): a ``SandboxedExecutor`` is an :class:`~.base.Executor`, a
``SandboxedFuzzer`` a :class:`~.base.Fuzzer`. The kind runs in a long-lived child (:mod:`.child`), reused
across inputs and replaced after it dies: the child is forked by a fork server that built the
executor and imported the target once (:mod:`.forkserver`), so a target that crashes on
every other input costs a fork per crash, not a Python start-up. Each target execution is
bounded: the child's own tracer ends Python-level endless loops, the child runs under
``RLIMIT_AS`` (allocation storms raise ``MemoryError``), and this side kills the child when an execution outlives its
limit plus a grace (an endless loop in C code), after asking it (``SIGUSR1``) to print where it
is. So a crash, ``os._exit``, a signal, a hang or a memory storm ends one execution, and the
execution that was running is known (the child writes each one into memory it shares with this
side, :mod:`.slot`): it gets the outcome of the death (:func:`.outcome.death`).

A death inside :meth:`run` is confirmed before it is reported: the input that was executing is
reproduced (:meth:`~.base.Executor.reproduce`, by default a measurement) in a fresh child, and
only a concrete run that fails again is a finding (the symbolic run is the engine's view; a
shim's limit is not a bug of the target). A death inside :meth:`measure_many` or
:meth:`reproduce` is a concrete run already and is reported as it is.

Every frame the child sends is untrusted input (target code ran in its process, and a Python
target's module ran in its fork server): the reader checks each against its type's schema
(:mod:`.frames`), and each request checks that its replies agree with it (the type it expects,
a ``measured`` frame's index, an ``offered`` count). A reply that breaks the protocol is the
outcome of the request's own input, kind ``protocol`` (:func:`.outcome.protocol`): the child is
killed and the next request forks another. It is a finding as it is, not reproduced: the frame
is what the input made the child send. A fuzzer's slice has no input of its own; its
``SandboxedFuzzer.fuzz`` returns nothing, with the outcome in its notes. A child speaks only in reply to a request: bytes it wrote
after a reply, found before the next request is sent, are out of turn too, the outcome of the
input whose reply they followed, reported with the next run's findings.
"""

from __future__ import annotations

import array
import os
import select
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import TargetError, rebuild
from ..base import Finding, Measurement, RunResult, Target
from ..outcome import Outcome, protocol
from . import slot as S
from .forkserver import STARTUP_S, ChildDied, ChildProcess, grace_s

CHUNK_BYTES = 8 << 20
CHUNK_INPUTS = 512
POLL_S = 0.05  # how often a request's wait looks at the execution slot (the precision of a hang's bound)
CLOCK_SLACK_S = 0.001  # rounding between the child's reading of the monotonic clock and this side's


class Sandbox(ChildProcess, Target):
    """The kind ``name`` for ``target`` with ``options``, contained in a child process: what an
    executor and a fuzzer share (:class:`~.base.Target`)."""

    def __init__(self, name: str, target: str | None, options: Mapping[str, Any] | None = None,
                 startup_s: float = STARTUP_S, scratch: Path | None = None, isolated: bool = True):
        self.name = name
        self._own_scratch = None
        if isolated and scratch is None:  # isolated, nothing else is writable: a directory of its own
            self._own_scratch = tempfile.TemporaryDirectory(prefix="symcc-ulfm-sandbox-")
            scratch = Path(self._own_scratch.name)
        self.scratch_dir = scratch
        self._executing: bytes | None = None  # the input executing in the current request (see _exchange)
        self._served: bytes | None = None  # the input of the last reply the child sent (see _between_requests)
        self._late: list[Finding] = []  # protocol findings of bytes a child wrote between requests, for the next run
        self._record: list[int] | None = None  # the branch record handed to this executor (Executor.learn), if any
        self._taught = 0  # how much of it the current child was handed (none, after a restart)
        super().__init__({"type": "init", "executor": name, "target": target, "options": dict(options or {}),
                          "scratch": None if scratch is None else str(scratch)}, startup_s,
                         writable=[scratch] if isolated else None)

    # -- the Target interface -------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return self._wait_ready()["identity"]

    @property
    def execution_limit_s(self) -> float:
        return float(self._wait_ready()["execution_limit_s"])

    @property
    def run_limit_s(self) -> float:
        return float(self._wait_ready()["run_limit_s"])

    def _exchange(self, request: dict, blobs: list[bytes], own: bytes | None, reply: str,
                  limit_s: float) -> tuple[dict, list[bytes]]:
        """Send a request whose target executions the child announces; the ``reply`` frame.

        Each announced execution is bounded by the execution limit plus grace, the whole request by
        ``limit_s`` plus that: this side wakes every :data:`POLL_S` to read the execution slot
        (:mod:`.slot`). On a death, ``self._executing`` is the input that was executing (the
        request's ``own``, the slot's or the one framed), None when the child was between executions.
        """
        exec_bound = self.execution_limit_s + grace_s(self.execution_limit_s)
        self._executing, framed = None, None
        self._between_requests()
        self._ensure_child()
        request_deadline = time.monotonic() + limit_s + exec_bound
        self._slot.reset()  # the child is between requests: it writes the slot only while it serves one
        self._send(request, blobs)
        try:
            while True:
                seen = self._slot.read()
                deadline = request_deadline if seen is None or seen.idle else min(request_deadline,
                                                                                 seen.started + exec_bound)
                now = time.monotonic()
                if now >= deadline:
                    if self._slot.read() == seen:  # still the execution the deadline was computed for
                        raise ChildDied(self._hung())
                    continue
                frame = self._frame_until(min(deadline, now + POLL_S))
                if frame is None:
                    continue
                message, reply_blobs = frame
                kind = message.get("type")
                if kind == "exec":
                    framed = reply_blobs[0] if reply_blobs else None
                elif kind == reply:
                    self._served = own
                    return message, reply_blobs
                elif kind == "error":
                    self._served = own
                    raise rebuild(message["error"], message["message"], message["exit_code"])
                else:
                    raise ChildDied(self._refused(f"{kind} frame in reply to {request['type']}"))
        except ChildDied:
            final = self._slot.read()  # the child is gone: what it last wrote stays
            state = None if final is None else final.last  # executing, or executed last in this request
            self._executing = {S.OWN: own, S.COPIED: None if final is None else final.data, S.FRAMED: framed}.get(state)
            raise

    def close(self) -> None:
        super().close()
        if self._own_scratch is not None:
            self._own_scratch.cleanup()
            self._own_scratch = None

    def _between_requests(self) -> None:
        """Before a request: a child that wrote after its last reply spoke out of turn. It is
        replaced; the ``protocol`` finding of the input it served last waits for the next run's
        result. (An end of file is a death: the request that meets it judges it.)"""
        served, self._served = self._served, None
        if self._pid is None:
            return
        held = self._buffer.pending()
        if select.select([self._rep], [], [], 0)[0]:
            try:
                held += len(os.read(self._rep, 1 << 16))
            except OSError:
                pass
        if not held:
            return
        self._restart()
        if served is not None:
            self._late.append(Finding(protocol("bytes between requests",
                                               f"{held} bytes or more after the reply to this input"), served))

    def _run(self, data: bytes, hint: dict[str, Any] | None, mutate: bool, sliced: bool) -> RunResult:
        """One ``run`` request (a slice's when ``sliced``: ``hint`` is its descriptor, the limit
        its seconds more), with the findings of bytes a child wrote since the last request."""
        result = self._request(bytes(data), hint, mutate, sliced)  # its first request looks between requests
        late, self._late = self._late, []
        result.findings[:0] = late
        return result

    def _request(self, data: bytes, hint: dict[str, Any] | None, mutate: bool, sliced: bool) -> RunResult:
        started = time.monotonic()
        try:
            limit = self.run_limit_s + (float(hint["seconds"]) if sliced else 0.0)
            request = {"type": "run", "hint": hint, "mutate": mutate}
            if self._record is not None:  # what the child was not handed of the branch record (Executor.learn)
                request["tried"], self._taught = self._record[self._taught:], len(self._record)
            message, blobs = self._exchange(request, [data], data, "result", limit)
            return self._checked(self._result(message, blobs, time.monotonic() - started), data)
        except ChildDied as died:
            current = self._executing
            self._restart()
            if died.outcome.kind == "protocol":  # what the child sent is the outcome of the run's own input
                return RunResult(candidates=[], executions=1, seconds=time.monotonic() - started,
                                 notes={"sandbox": died.outcome.to_json()},
                                 findings=[] if sliced else [Finding(died.outcome, data)])
            notes = {"sandbox": died.outcome.to_json(), "executing": current is not None}
            findings = []
            if current is not None:  # the target's execution of `current` ended the child: confirm it concretely
                confirmed = self.reproduce(current)
                notes["confirmed"] = confirmed.kind
                if confirmed.is_finding:
                    findings.append(Finding(confirmed, current))
            if mutate and current is not None and current != data and not sliced:
                # a hybrid executor's mutant ended the child: the run's own work is rerun without mutants
                # (they are drawn deterministically: the same one would end the new child again)
                again = self._request(data, hint, False, sliced)
                again.findings[:0] = findings
                again.notes.update(mutant_ended_child=notes)
                again.executions += 1 + (current is not None)
                again.seconds = time.monotonic() - started
                return again
            return self._checked(RunResult(candidates=[], executions=1 + (current is not None),
                                           seconds=time.monotonic() - started, notes=notes, findings=findings), data)

    def _checked(self, result: RunResult, data: bytes) -> RunResult:
        """``result`` of a run of ``data``, with a ``hang`` finding of ``data`` when the fork
        server no longer answers after it (:meth:`~.forkserver.ChildProcess.server_lost`)."""
        lost = self.server_lost()
        if lost is not None:
            result.findings.append(Finding(lost, data))
            result.notes["fork_server_lost"] = lost.detail
        return result

    def reproduce(self, data: bytes) -> Outcome:
        """The kind's own :meth:`~.base.Target.reproduce` in the child; a death is the outcome."""
        data = bytes(data)
        try:
            message, _ = self._exchange({"type": "reproduce"}, [data], data, "reproduced", self.execution_limit_s)
            return Outcome.from_json(message["outcome"])
        except ChildDied as died:
            self._restart()
            return died.outcome

    def reproduce_report(self, data: bytes) -> tuple[Outcome, str]:
        """The kind's :meth:`~.base.Target.reproduce_report` in the child; a death is the
        outcome and the end of the child's stderr (``faulthandler``'s stack, a sanitizer's report)
        the report."""
        data = bytes(data)
        try:
            message, _ = self._exchange({"type": "reproduce", "report": True}, [data], data, "reproduced",
                                        self.execution_limit_s)
            return Outcome.from_json(message["outcome"]), str(message.get("report", ""))
        except ChildDied as died:
            report = self._tail()
            self._restart()
            return died.outcome, report

    def renew(self) -> None:
        """End the child and the fork server: the next request starts a new server (a new ``exec``,
        so a new address-space layout), whose children share nothing with the earlier ones."""
        ChildProcess.close(self)

    def preflight(self, seeds: list[bytes] | None = None) -> dict[str, Any]:
        """The kind's own :meth:`~.base.Target.preflight` in the child, bounded as one run per
        seed; a child the target killed or hung meanwhile is a TargetError."""
        blobs = [] if seeds is None else [bytes(seed) for seed in seeds]
        if seeds is None:
            self._wait_ready()
        limit_s = max(1, len(self._seeds if seeds is None else blobs)) * self.run_limit_s
        try:
            message, _ = self._exchange({"type": "preflight", "own_seeds": seeds is None}, blobs, None,
                                        "preflight-ok", limit_s)
            return message["summary"]
        except ChildDied as died:
            self._restart()
            raise TargetError("target", f"preflight: the sandbox child died ({died.outcome.kind}: "
                                        f"{died.outcome.signature})") from None

    def _refused(self, what: str, detail: str = "") -> Outcome:
        """A reply that does not fit its request: the child is killed; the ``protocol`` outcome."""
        self._kill()
        return protocol(what, detail)

    def _result(self, message: dict, blobs: list[bytes], elapsed: float) -> RunResult:
        """The RunResult of a ``result`` frame (its counts agree: :mod:`.frames`) that took
        ``elapsed`` seconds here: the child measured its times within that (the same clock), so a
        longer one is no measurement."""
        claimed = max(message["seconds"], message["solver_seconds"])
        if claimed > elapsed + CLOCK_SLACK_S:
            raise ChildDied(self._refused("result frame: seconds longer than the run",
                                          f"{claimed:g} s claimed, {elapsed:g} s taken"))
        count = message["candidates"]
        findings = [Finding(Outcome.from_json(f["outcome"]), blobs[count + i]) for i, f in enumerate(message["findings"])]
        return RunResult(candidates=blobs[:count], hints=message["hints"], executions=message["executions"],
                         solver_queries=message["solver_queries"], solver_seconds=message["solver_seconds"],
                         seconds=message["seconds"], notes=message["notes"], findings=findings,
                         reaches=message["reaches"], tried=message.get("tried", []))

    def measure(self, data: bytes) -> Measurement:
        return self.measure_many([data])[0]

    def measure_many(self, inputs: list[bytes], budget_s: float | None = None) -> list[Measurement | None]:
        results: list[Measurement | None] = [None] * len(inputs)
        until = None if budget_s is None else time.monotonic() + budget_s
        pos = 0
        while pos < len(inputs):
            left = None if until is None else until - time.monotonic()
            if left is not None and left <= 0:
                break
            chunk = _chunk(inputs, pos)
            done, finished = self._measure_chunk(chunk, left, results, pos)
            pos += done
            if finished and done < len(chunk):  # the budget ran out in the child
                break
        return results

    def _measure_chunk(self, chunk: list[bytes], budget_s: float | None, results: list, offset: int) -> tuple[int, bool]:
        """Measure ``chunk`` into ``results[offset:]``; (inputs settled, whether the child finished).
        A death or a reply out of turn is the outcome of the input whose ``measured`` frame was due."""
        exec_bound = self.execution_limit_s + grace_s(self.execution_limit_s)
        if self._ready.get("batch_measure"):  # the whole chunk is one batch: its results come together
            exec_bound *= len(chunk)
        index = 0
        self._between_requests()
        try:
            self._ensure_child()
            self._send({"type": "measure", "budget_s": budget_s}, chunk)
            while True:
                message, blobs = self._next(time.monotonic() + exec_bound)
                kind = message["type"]
                if kind == "measured" and message["index"] == index < len(chunk):
                    coverage = frozenset(array.array("Q", blobs[0]))
                    results[offset + index] = Measurement(coverage, Outcome.from_json(message["outcome"]),
                                                          message["returned"])
                    index += 1
                elif kind == "measured-end" and message["count"] == index:
                    self._served = chunk[index - 1] if index else None
                    return index, True
                elif kind == "error":
                    raise rebuild(message["error"], message["message"], message["exit_code"])
                elif kind in ("measured", "measured-end"):
                    raise ChildDied(self._refused(f"{kind} frame: out of turn",
                                                  f"{message.get('index', message.get('count'))} after {index} "
                                                  f"of {len(chunk)}"))
                else:
                    raise ChildDied(self._refused(f"{kind} frame in reply to measure"))
        except ChildDied as died:
            self._restart()
            if index == len(chunk):  # every input measured: the death is nobody's
                return index, False
            results[offset + index] = Measurement(frozenset(), died.outcome)
            return index + 1, False


def _chunk(inputs: list[bytes], pos: int) -> list[bytes]:
    out, size = [], 0
    for data in inputs[pos:pos + CHUNK_INPUTS]:
        if out and size + len(data) > CHUNK_BYTES:
            break
        out.append(data)
        size += len(data)
    return out
