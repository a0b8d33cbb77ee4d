"""The sandbox's processes: a fork server that built the executor and imported the target once
(:mod:`.child`), and the child it forked to serve requests.

:class:`ChildProcess` starts the server, has it fork a child, exchanges frames with that child
(:mod:`.frames`) and, when the child dies, hangs or garbles, reaps it and says how it ended
(:class:`ChildDied` carrying the :class:`~.outcome.Outcome`). Each child leads its own process
group and is reaped by the server, which reports its wait status over a ``SOCK_SEQPACKET``
control socket (JSON; the child's pipes travel as ``SCM_RIGHTS``). A server that does not answer
there within :data:`CONTROL_S`, or cannot fork, is killed at once and started again
(:meth:`ChildProcess.server_lost` asks it after each run).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import weakref

from ...errors import ExecutorError, rebuild
from ..outcome import Outcome, death, protocol, signal_name
from . import isolation
from .frames import FrameBuffer, FrameError, encode_frame
from .pids import PidsGroup
from .slot import Slot

STARTUP_S = 120.0
CONTROL_S = 3.0  # a fork, a wait or a ping answered by the fork server: one that does not is replaced
REAP_S = 5.0  # a child that closed its pipe gets this long to exit before it is killed
HANG_DUMP_S = 0.5  # how long a hung child gets to print its stack before SIGKILL
STDERR_TAIL = 16384
DAMAGED = 87  # the exit status of a child whose descriptors a target execution damaged (child.Child.intact)


def grace_s(limit_s: float) -> float:
    """Time beyond an execution's own limit before the child is presumed stuck in C code."""
    return 1.0 + 0.25 * limit_s


class ChildDied(Exception):
    def __init__(self, outcome: Outcome):
        super().__init__(outcome.detail)
        self.outcome = outcome


class ChildProcess:
    """The fork server for ``init`` (the server's ``init`` message) and its serving child."""

    def __init__(self, init: dict, startup_s: float = STARTUP_S, writable: list | None = None):
        """``writable``: run the fork server isolated (``.isolation``) with these directories
        writable; None: not isolated."""
        self._init = init
        self.startup_s = startup_s
        self._writable = writable
        self.deaths = 0  # children that died (and were replaced) while running target code
        self._proc: subprocess.Popen | None = None  # the fork server
        self._ctrl: socket.socket | None = None  # its control socket
        self._pid: int | None = None  # the child serving requests now (None: none forked yet), as the server names it
        self._signal_pid: int | None = None  # the same child as this process names it (isolated: another PID namespace)
        self._ready: dict | None = None
        self._seeds: list[bytes] = []
        self._stderr = bytearray()
        self._fds: list[int] = []
        self._err = -1  # the server's stderr (every child's too)
        self._target_files: list[str] = []  # kept across restarts: a death is judged after its child is gone
        self._finalizer = None
        self._slot: Slot | None = None  # shared with each child in turn (.slot)
        self._pids: PidsGroup | None = None  # the server's processes bounded together (.pids), where they can be
        self._spawn()


    def _spawn(self) -> None:
        """Start the fork server and send it ``init`` (its answer is read by :meth:`_wait_ready`)."""
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
        ctrl, ctrl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # isolated, the server's parent is unshare, outside its PID namespace: it dies with it (--kill-child)
        parent = 0 if self._writable is not None else os.getpid()
        command = [sys.executable, "-m", "symcc_ulfm.executors.sandbox.child", str(req_r), str(rep_w),
                   str(ctrl_child.fileno()), str(parent)]
        if self._writable is not None:
            command = isolation.wrap(command, self._writable)
        if self._pids is None or not self._pids.path.is_dir():  # made once, or again if someone removed it
            self._pids = PidsGroup.create()
        try:
            self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, pass_fds=(req_r, rep_w, ctrl_child.fileno()),
                                          start_new_session=True,
                                          preexec_fn=functools.partial(_die_with_caller, self._pids))
        finally:
            os.close(req_r)
            os.close(rep_w)
            ctrl_child.close()
        self._ctrl, self._pid = ctrl, None
        self._err = self._proc.stderr.fileno()
        os.set_blocking(self._err, False)
        self._channel(req_w, rep_r)
        self._ready = None
        self._finalizer = weakref.finalize(self, _kill_quietly, self._proc, ctrl, self._pids)
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
        except ChildDied as died:
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
        if self._slot is None:
            self._slot = Slot.create()
        for _attempt in range(2):
            req_r, req_w = os.pipe2(os.O_CLOEXEC)
            rep_r, rep_w = os.pipe2(os.O_CLOEXEC)
            self._slot.reset()  # the new child maps it idle, its sequence even (the seqlock's parity)
            try:
                reply = self._control({"op": "fork"}, (req_r, rep_w, self._slot.fd))
            finally:
                os.close(req_r)
                os.close(rep_w)
            if reply is not None and isinstance(reply.get("pid"), int):
                self._drain_stderr()
                self._stderr = bytearray()
                self._channel(req_w, rep_r)
                self._pid = reply["pid"]
                self._signal_pid = self._outer(self._pid)
                return
            os.close(req_w)
            os.close(rep_r)
            self._stop_server(at_once=True)  # the server is gone, stopped or starved: a fresh one
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
                    raise ChildDied(Outcome("crash", "sandbox: stopped reading requests", "stopped reading")) from None
                select.select([], [self._req], [], 0.1)
            except (BrokenPipeError, ConnectionResetError):
                raise ChildDied(self._death_outcome()) from None

    def _next(self, deadline: float) -> tuple[dict, list[bytes]]:
        """The next frame from the child; ChildDied when it dies, hangs past ``deadline`` or garbles."""
        frame = self._frame_until(deadline)
        if frame is None:
            raise ChildDied(self._hung())
        return frame

    def _frame_until(self, until: float) -> tuple[dict, list[bytes]] | None:
        """The next frame from the child, None if none came by ``until``; ChildDied when it dies
        or garbles."""
        while True:
            try:
                frame = self._buffer.next()
            except FrameError as exc:
                self._kill()
                raise ChildDied(protocol(exc.what, exc.detail)) from None
            if frame is not None:
                return frame
            remaining = until - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([self._rep, self._err], [], [], min(remaining, 1.0))
            if self._err in readable:
                self._drain_stderr()
            if self._rep in readable:
                try:
                    chunk = os.read(self._rep, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise ChildDied(self._death_outcome())
                self._buffer.feed(chunk)

    def _outer(self, pid: int) -> int | None:
        """The pid this process signals for the server's ``pid`` (isolated, the server is PID 1
        of its own namespace)."""
        if self._writable is None:
            return pid
        return isolation.outer_pid(self._proc.pid, pid) if self._proc is not None else None

    def _server_pid(self) -> int | None:
        if self._proc is None:
            return None
        return self._proc.pid if self._writable is None else self._outer(1)

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
            os.kill(self._signal_pid if self._pid is not None else self._server_pid(), signal.SIGUSR1)
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
        serving = self._pid is not None
        status = self._reap_child() if serving else self._stop_server()
        self._drain_stderr()
        if status is None:
            return Outcome("crash", "sandbox: closed its pipe", "the child closed its reply pipe")
        if os.WIFSIGNALED(status):  # a SIGKILL is a crash too: the child's RLIMIT_AS makes memory storms MemoryError
            return death(signal_name(os.WTERMSIG(status)), self._tail(), self._target_files)
        if serving and os.WEXITSTATUS(status) == DAMAGED:
            return Outcome("crash", "sandbox: descriptors damaged",
                           "the target closed a standard descriptor, or left none free")
        return death(f"exit {os.WEXITSTATUS(status)}", self._tail(), self._target_files)

    def _kill(self) -> None:
        """Kill the child serving requests (its process group); while none is forked, the server."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
                os.killpg(self._signal_pid, signal.SIGKILL)
            self._reap_child()
        elif self._proc is not None and self._ready is None:
            self._stop_server()

    def _reap_child(self) -> int | None:
        """The child's wait status, from the server (after it closed its pipe or was killed); a
        child that lives on past ``REAP_S`` is killed. None when the server cannot say."""
        pid, self._pid = self._pid, None
        outer, self._signal_pid = self._signal_pid, None
        self._close_channel()
        status = self._control({"op": "wait", "pid": pid, "timeout_s": REAP_S})
        if status is not None and status.get("status") is None:
            with contextlib.suppress(ProcessLookupError, PermissionError, TypeError):
                os.killpg(outer, signal.SIGKILL)
            status = self._control({"op": "wait", "pid": pid, "timeout_s": REAP_S})
        if status is None or status.get("status") is None:
            self._stop_server(at_once=True)  # a server that cannot reap its child is replaced, with all its children
            return None
        return status["status"]

    def server_lost(self) -> Outcome | None:
        """None while the fork server answers a ``ping`` (or none runs); else it is killed with its
        children (the next request starts another) and the outcome says so: a ``hang`` of the
        input executed last, which stopped or starved it."""
        if self._proc is None or self._ready is None or self._control({"op": "ping"}) is not None:
            return None
        self._stop_server(at_once=True)
        return Outcome("hang", "sandbox: the fork server stopped answering",
                       f"no answer to a ping within {CONTROL_S:g} s after this input ran")

    def _stop_server(self, at_once: bool = False) -> int | None:
        """End the fork server (its children die with it) and close every descriptor; its wait
        status. It gets ``REAP_S`` to return after its control socket closed, none ``at_once``."""
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
        deadline = time.monotonic() + (0 if at_once else REAP_S)
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

    def close(self) -> None:
        """End the serving child, then the fork server."""
        if self._proc is not None:
            if self._pid is not None:
                with contextlib.suppress(ChildDied, OSError):
                    self._send({"type": "stop"})
                self._reap_child()
            self._stop_server()  # its control socket closed: the server returns, or is killed
        if self._slot is not None:
            self._slot.close()
            self._slot = None
        if self._pids is not None:
            self._pids.remove()
            self._pids = None


def _die_with_caller(pids: PidsGroup | None) -> None:
    """In the forked process before it executes the server (or unshare): SIGKILL when this
    process dies; into the sandbox's ``pids`` group."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if pids is not None:
        pids.enter()


def _kill_quietly(proc: subprocess.Popen, ctrl: socket.socket, pids: PidsGroup | None) -> None:
    """Finalizer of a Sandbox dropped without close(): end its fork server (the children die
    with it), free the control socket and the ``pids`` group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(proc.pid, 0)
    ctrl.close()
    if pids is not None:
        pids.remove()
