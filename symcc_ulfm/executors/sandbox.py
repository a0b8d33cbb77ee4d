"""Containment: target code runs in a child process, never in a rank, ``launch``, the oracle or a
notebook kernel.

:class:`Sandbox` is an :class:`~.base.Executor` that hosts the real one (built by
:func:`~symcc_ulfm.executors.engine`) in a long-lived child (:mod:`.sandbox_child`), reused
across inputs and replaced after it dies: the child is forked by a fork server that built the
executor and imported the target once (:mod:`.sandbox_child`), so a target that crashes on
every other input costs a fork per crash, not a Python start-up. Each target execution is
bounded: the child's
own tracer ends Python-level endless loops, the child runs under ``RLIMIT_AS`` (allocation
storms raise ``MemoryError``), and this side kills the child when an execution outlives its
limit plus a grace (an endless loop in C code), after asking it (``SIGUSR1``) to print where it
is. So a crash, ``os._exit``, a signal, a hang or a memory storm ends one execution, and the
execution that was running is known (the child announces each one): it gets the outcome of the
death (:func:`.outcome.death`).

A death inside :meth:`run` is confirmed before it is reported: the input that was executing is
reproduced (:meth:`~.base.Executor.reproduce`, by default a measurement) in a fresh child, and
only a concrete run that fails again is a finding (the symbolic run is the engine's view; a
shim's limit is not a bug of the target). A death inside :meth:`measure_many` or
:meth:`reproduce` is a concrete run already and is reported as it is.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ExecutorError, TargetError, rebuild
from .base import Executor, Finding, Measurement, RunResult
from .frames import FrameBuffer, FrameError, encode_frame
from .outcome import Outcome, death, signal_name

STARTUP_S = 120.0
CONTROL_S = 10.0  # a fork or a wait answered by the fork server
REAP_S = 5.0  # a child that closed its pipe gets this long to exit before it is killed
HANG_DUMP_S = 0.5  # how long a hung child gets to print its stack before SIGKILL
STDERR_TAIL = 16384
CHUNK_BYTES = 8 << 20
CHUNK_INPUTS = 512


def grace_s(limit_s: float) -> float:
    """Time beyond an execution's own limit before the child is presumed stuck in C code."""
    return 1.0 + 0.25 * limit_s


class _Died(Exception):
    def __init__(self, outcome: Outcome):
        super().__init__(outcome.detail)
        self.outcome = outcome


class Sandbox(Executor):
    """The executor ``name`` for ``target`` with ``options``, contained in a child process."""

    in_process_target = False

    def __init__(self, name: str, target: str | None, options: Mapping[str, Any] | None = None,
                 startup_s: float = STARTUP_S, scratch: Path | None = None):
        self.name = name
        self.scratch_dir = scratch
        self._init = {"type": "init", "executor": name, "target": target, "options": dict(options or {}),
                      "scratch": None if scratch is None else str(scratch)}
        self.startup_s = startup_s
        self.deaths = 0  # children that died (and were replaced) while running target code
        self._proc: subprocess.Popen | None = None  # the fork server
        self._ctrl: socket.socket | None = None  # its control socket
        self._pid: int | None = None  # the child serving requests now (None: none forked yet)
        self._ready: dict | None = None
        self._seeds: list[bytes] = []
        self._stderr = bytearray()
        self._fds: list[int] = []
        self._err = -1  # the server's stderr (every child's too)
        self._target_files: list[str] = []  # kept across restarts: a death is judged after its child is gone
        self._executing: bytes | None = None  # the input executing in the current request (see _exchange)
        self._finalizer = None
        self._spawn()

    # -- the child process -------------------------------------------------------------

    def _spawn(self) -> None:
        """Start the fork server and send it ``init`` (its answer is read by :meth:`_wait_ready`)."""
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        ctrl, ctrl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-m", "symcc_ulfm.executors.sandbox_child", str(req_r), str(rep_w),
                   str(ctrl_child.fileno()), str(os.getpid())]
        try:
            self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, pass_fds=(req_r, rep_w, ctrl_child.fileno()),
                                          start_new_session=True)
        finally:
            os.close(req_r)
            os.close(rep_w)
            ctrl_child.close()
        self._ctrl, self._pid = ctrl, None
        self._err = self._proc.stderr.fileno()
        os.set_blocking(self._err, False)
        self._channel(req_w, rep_r)
        self._ready = None
        self._finalizer = weakref.finalize(self, _kill_quietly, self._proc, ctrl)
        self._send(self._init)

    def _channel(self, req: int, rep: int) -> None:
        """Talk over ``req`` and ``rep`` from now on (the server's init pipes, then a child's)."""
        self._close_channel()
        self._req, self._rep, self._fds = req, rep, [req, rep]
        os.set_blocking(self._rep, False)
        self._buffer = FrameBuffer()

    def _close_channel(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def _wait_ready(self) -> dict:
        if self._ready is not None:
            return self._ready
        if self._proc is None:
            self._spawn()
        try:
            message, blobs = self._next(time.monotonic() + self.startup_s)
        except _Died as died:
            self._stop_server()
            raise ExecutorError(f"the sandbox could not start {self._init['executor']} on "
                                f"{self._init['target']!r}: {died.outcome.detail}; {self._tail(600)}") from None
        if message.get("type") == "error":
            self._stop_server()
            raise rebuild(str(message.get("error")), str(message.get("message")), message.get("exit_code", 70))
        if message.get("type") != "ready":
            self._stop_server()
            raise ExecutorError(f"the sandbox child answered {message.get('type')!r} to init")
        self._close_channel()
        self._ready = message
        self._seeds = blobs
        self._target_files = list(message.get("files", []))
        return message

    def _ensure_child(self) -> None:
        """A child to send requests to: forked by the server (started again if it is gone)."""
        self._wait_ready()
        if self._pid is not None:
            return
        for _attempt in range(2):
            req_r, req_w = os.pipe2(os.O_CLOEXEC)
            rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
            try:
                reply = self._control({"op": "fork"}, (req_r, rep_w))
            finally:
                os.close(req_r)
                os.close(rep_w)
            if reply is not None and isinstance(reply.get("pid"), int):
                self._drain_stderr()
                self._stderr = bytearray()
                self._channel(req_w, rep_r)
                self._pid = reply["pid"]
                return
            os.close(req_w)
            os.close(rep_r)
            self._stop_server()  # the server is gone or confused: a fresh one
            self._wait_ready()
        raise ExecutorError(f"the sandbox fork server for {self._init['executor']} could not fork a child; "
                            f"{self._tail(600)}")

    def _control(self, message: dict, fds=()) -> dict | None:
        """One message to the fork server and its answer; None when it cannot answer."""
        if self._ctrl is None:
            return None
        try:
            socket.send_fds(self._ctrl, [json.dumps(message).encode()], list(fds))
            readable, _, _ = select.select([self._ctrl], [], [], CONTROL_S + message.get("timeout_s", 0))
            data = self._ctrl.recv(4096) if readable else b""
            reply = json.loads(data) if data else None
        except (OSError, ValueError):
            return None
        return reply if isinstance(reply, dict) else None

    def _send(self, message: dict, blobs=()) -> None:
        data = memoryview(encode_frame(message, blobs))
        os.set_blocking(self._req, False)
        limit = time.monotonic() + self.startup_s
        while data:
            try:
                data = data[os.write(self._req, data):]
            except BlockingIOError:
                if time.monotonic() > limit:
                    raise _Died(Outcome("crash", "sandbox: stopped reading requests", "stopped reading")) from None
                select.select([], [self._req], [], 0.1)
            except (BrokenPipeError, ConnectionResetError):
                raise _Died(self._death_outcome()) from None

    def _next(self, deadline: float) -> tuple[dict, list[bytes]]:
        """The next frame from the child; _Died when it dies, hangs past ``deadline`` or garbles."""
        while True:
            try:
                frame = self._buffer.next()
            except FrameError as exc:
                self._kill()
                raise _Died(Outcome("crash", "sandbox: garbled reply", f"the child wrote garbage: {exc}")) from None
            if frame is not None:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Died(self._hung())
            readable, _, _ = select.select([self._rep, self._err], [], [], min(remaining, 1.0))
            if self._err in readable:
                self._drain_stderr()
            if self._rep in readable:
                try:
                    chunk = os.read(self._rep, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise _Died(self._death_outcome())
                self._buffer.feed(chunk)

    def _drain_stderr(self) -> None:
        if self._err < 0:
            return
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._err, 1 << 16):
                self._stderr += chunk
                if len(self._stderr) > 2 * STDERR_TAIL:
                    del self._stderr[:-STDERR_TAIL]

    def _tail(self, limit: int = STDERR_TAIL) -> str:
        return bytes(self._stderr[-limit:]).decode("utf-8", "replace")

    def _hung(self) -> Outcome:
        """Ask the stuck child for its stack, then kill it: a ``hang``."""
        with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
            os.kill(self._pid if self._pid is not None else self._proc.pid, signal.SIGUSR1)
        size, limit = len(self._stderr), time.monotonic() + HANG_DUMP_S
        while time.monotonic() < limit:  # faulthandler writes line by line: wait until it is quiet
            before = len(self._stderr)
            select.select([self._err], [], [], 0.05)
            self._drain_stderr()
            if size < before == len(self._stderr):
                break
        self._kill()
        return death("hang (killed after its time limit)", self._tail(), self._target_files, kind="hang")

    def _death_outcome(self) -> Outcome:
        """The child (or, while it starts, the server) closed its pipe: reap it and say how it died."""
        status = self._reap_child() if self._pid is not None else self._stop_server()
        self._drain_stderr()
        if status is None:
            return Outcome("crash", "sandbox: closed its pipe", "the child closed its reply pipe")
        if os.WIFSIGNALED(status):  # a SIGKILL is a crash too: the child's RLIMIT_AS makes memory storms MemoryError
            return death(signal_name(os.WTERMSIG(status)), self._tail(), self._target_files)
        return death(f"exit {os.WEXITSTATUS(status)}", self._tail(), self._target_files)

    def _kill(self) -> None:
        """Kill the child serving requests (its process group); while none is forked, the server."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pid, signal.SIGKILL)
            self._reap_child()
        elif self._proc is not None and self._ready is None:
            self._stop_server()

    def _reap_child(self) -> int | None:
        """The child's wait status, from the server (after it closed its pipe or was killed); a
        child that lives on past ``REAP_S`` is killed. None when the server cannot say."""
        pid, self._pid = self._pid, None
        self._close_channel()
        status = self._control({"op": "wait", "pid": pid, "timeout_s": REAP_S})
        if status is not None and status.get("status") is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            status = self._control({"op": "wait", "pid": pid, "timeout_s": REAP_S})
        if status is None or status.get("status") is None:
            self._stop_server()  # a server that cannot reap its child is replaced, with all its children
            return None
        return status["status"]

    def _stop_server(self) -> int | None:
        """End the fork server (its children die with it) and close every descriptor; its wait status."""
        proc, self._proc = self._proc, None
        self._pid, self._ready = None, None
        self._close_channel()
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if proc is None:
            return None
        if self._finalizer is not None:
            self._finalizer.detach()
        status = None
        deadline = time.monotonic() + REAP_S
        while True:
            try:
                pid, waited = os.waitpid(proc.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                status = waited
                break
            if time.monotonic() > deadline:  # closed its pipe but lives on: it is ours to end
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.005)
        proc.returncode = -1 if status is None else os.waitstatus_to_exitcode(status)
        self._drain_stderr()
        with contextlib.suppress(OSError):
            proc.stderr.close()
        self._err = -1
        return status

    def _restart(self) -> None:
        """After a death: the child is reaped; the next request forks another."""
        self.deaths += 1
        self._kill()

    # -- the Executor interface -----------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return self._wait_ready()["identity"]

    def seeds(self) -> list[bytes]:
        self._wait_ready()
        return list(self._seeds)

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
        ``limit_s`` plus that. On a death, ``self._executing`` is the input that was executing (the
        request's ``own`` or the one announced), None when the child was between executions.
        """
        exec_bound = self.execution_limit_s + grace_s(self.execution_limit_s)
        self._executing, since = None, None
        self._ensure_child()
        request_deadline = time.monotonic() + limit_s + exec_bound
        self._send(request, blobs)
        while True:
            deadline = request_deadline if since is None else min(request_deadline, since + exec_bound)
            message, reply_blobs = self._next(deadline)
            kind = message.get("type")
            if kind == "exec":
                self._executing, since = (own if message.get("input") else reply_blobs[0]), time.monotonic()
            elif kind == "idle":
                self._executing, since = None, None
            elif kind == reply:
                return message, reply_blobs
            elif kind == "error":
                raise rebuild(str(message.get("error")), str(message.get("message")), message.get("exit_code", 70))
            else:
                raise _Died(Outcome("crash", "sandbox: unexpected reply", f"unexpected {kind!r}"))

    def run(self, data: bytes, hint: dict[str, Any] | None = None, mutate: bool = True) -> RunResult:
        data = bytes(data)
        started = time.monotonic()
        try:
            message, blobs = self._exchange({"type": "run", "hint": hint, "mutate": mutate}, [data], data, "result",
                                            self.run_limit_s)
            return self._result(message, blobs)
        except _Died as died:
            current = self._executing
            self._restart()
            notes = {"sandbox": died.outcome.to_json(), "executing": current is not None}
            findings = []
            if current is not None:  # the target's execution of `current` ended the child: confirm it concretely
                confirmed = self.reproduce(current)
                notes["confirmed"] = confirmed.kind
                if confirmed.is_finding:
                    findings.append(Finding(confirmed, current))
            if mutate and current is not None and current != data:
                # a hybrid executor's mutant ended the child: the run's own work is rerun without mutants
                # (they are drawn deterministically: the same one would end the new child again)
                again = self.run(data, hint, mutate=False)
                again.findings[:0] = findings
                again.notes.update(mutant_ended_child=notes)
                again.executions += 1 + (current is not None)
                again.seconds = time.monotonic() - started
                return again
            return RunResult(candidates=[], executions=1 + (current is not None), seconds=time.monotonic() - started,
                             notes=notes, findings=findings)

    def reproduce(self, data: bytes) -> Outcome:
        """The executor's own :meth:`~.base.Executor.reproduce` in the child; a death is the outcome."""
        data = bytes(data)
        try:
            message, _ = self._exchange({"type": "reproduce"}, [data], data, "reproduced", self.execution_limit_s)
            return Outcome.from_json(message["outcome"])
        except _Died as died:
            self._restart()
            return died.outcome

    def preflight(self, seeds: list[bytes] | None = None) -> dict[str, Any]:
        """The executor's own :meth:`~.base.Executor.preflight` in the child, bounded as one run per
        seed; a child the target killed or hung meanwhile is a TargetError."""
        blobs = [] if seeds is None else [bytes(seed) for seed in seeds]
        limit_s = max(1, len(self.seeds() if seeds is None else blobs)) * self.run_limit_s
        try:
            message, _ = self._exchange({"type": "preflight", "own_seeds": seeds is None}, blobs, None,
                                        "preflight-ok", limit_s)
            return message["summary"]
        except _Died as died:
            self._restart()
            raise TargetError("target", f"preflight: the sandbox child died ({died.outcome.kind}: "
                                        f"{died.outcome.signature})") from None

    def _result(self, message: dict, blobs: list[bytes]) -> RunResult:
        count = message["candidates"]
        findings = [Finding(Outcome.from_json(f["outcome"]), blobs[count + i]) for i, f in enumerate(message["findings"])]
        return RunResult(candidates=blobs[:count], hints=message["hints"], executions=message["executions"],
                         solver_queries=message["solver_queries"], solver_seconds=message["solver_seconds"],
                         seconds=message["seconds"], notes=message["notes"], findings=findings)

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
        """Measure ``chunk`` into ``results[offset:]``; (inputs settled, whether the child finished)."""
        exec_bound = self.execution_limit_s + grace_s(self.execution_limit_s)
        if self._ready.get("batch_measure"):  # the whole chunk is one batch: its results come together
            exec_bound *= len(chunk)
        index = 0
        try:
            self._ensure_child()
            self._send({"type": "measure", "budget_s": budget_s}, chunk)
            while True:
                message, blobs = self._next(time.monotonic() + exec_bound)
                kind = message.get("type")
                if kind == "measured" and message.get("index") == index:
                    coverage = frozenset(array.array("Q", blobs[0]))
                    results[offset + index] = Measurement(coverage, Outcome.from_json(message["outcome"]),
                                                          message.get("returned"))
                    index += 1
                elif kind == "measured-end":
                    return index, True
                elif kind == "error":
                    raise rebuild(str(message.get("error")), str(message.get("message")), message.get("exit_code", 70))
                else:
                    raise _Died(Outcome("crash", "sandbox: unexpected reply", f"unexpected {kind!r}"))
        except _Died as died:
            self._restart()
            results[offset + index] = Measurement(frozenset(), died.outcome)
            return index + 1, False

    def close(self) -> None:
        if self._proc is None:
            return
        if self._pid is not None:
            with contextlib.suppress(_Died, OSError):
                self._send({"type": "stop"})
            self._reap_child()
        self._stop_server()  # its control socket closed: the server returns, or is killed


def _chunk(inputs: list[bytes], pos: int) -> list[bytes]:
    out, size = [], 0
    for data in inputs[pos:pos + CHUNK_INPUTS]:
        if out and size + len(data) > CHUNK_BYTES:
            break
        out.append(data)
        size += len(data)
    return out


def _kill_quietly(proc: subprocess.Popen, ctrl: socket.socket) -> None:
    """Finalizer of a Sandbox dropped without close(): end its fork server (the children die
    with it), free the control socket."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(proc.pid, 0)
    ctrl.close()
