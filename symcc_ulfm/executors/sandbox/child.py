"""The sandbox child: hosts one executor and runs target code for its parent.

Started by :class:`.sandbox.Sandbox` as ``python -m symcc_ulfm.executors.sandbox.child REQ REP
CTRL PARENT``, the process is a fork server: it builds the executor once (the ``init`` request on
file descriptor REQ, its reply on REP: :mod:`.frames`), then forks, on each ``fork`` message of
the control socket CTRL (a ``SOCK_SEQPACKET`` pair; the message carries the new child's request
and reply pipes and its execution slot), a child that serves requests with the executor already built and the target
already imported. A child the target killed is replaced in about a millisecond instead of a
Python start-up and the target's imports. The server never runs target code: only its children
do (:mod:`.guard`: they cannot trace it, touch its memory or change its limits). It reaps them
on ``wait`` messages and answers with their wait status, and answers ``ping`` (its parent's
liveness check).

stdin and stdout are ``/dev/null`` (a target may read or print), stderr is a pipe the parent
keeps the tail of (the server's, inherited by every child). Before anything else the server
arranges to die with its parent (``PR_SET_PDEATHSIG``; each child likewise with the server),
disables core dumps, and makes every way of dying leave the target's Python stack on stderr:
``faulthandler`` for fatal signals and for ``SIGUSR1`` (what the parent sends to a hung child
before it kills it), and a wrapper around ``os._exit``. Each child leads a process group of its
own, so the parent can kill it and whatever it started.

``init`` (to the server: build the executor or fuzzer; the reply carries its identity, an
executor's seeds, its limits and the target's files). Requests of a child: ``run`` (an
executor's :meth:`~.base.Executor.run`, with ``"mutate": false`` passed on, after
:meth:`~.base.Executor.learn` of the request's ``tried`` when it has one; a fuzzer's
:meth:`~.base.Fuzzer.fuzz` of the request's hint, its slice; every target execution it starts,
and its end, is written into the execution slot the child got with its pipes (:mod:`.slot`), the
input too when it is not the run's own), ``measure`` (inputs measured in order, one ``measured``
frame each, until an optional time budget is spent), ``offer`` (inputs for a fuzzer:
:meth:`~.base.Fuzzer.offer`; an ``offered`` frame), ``reproduce`` (one
:meth:`~.base.Target.reproduce`, announced like a run, or with ``"report": true`` one
:meth:`~.base.Target.reproduce_report`; a ``reproduced`` frame), ``preflight``
(:meth:`~.base.Target.preflight`, announced likewise; a ``preflight-ok`` frame or the error),
``stop``.

The server and each child are child subreapers (:mod:`.reaper`): every process a target leaves
behind, whatever its session, is re-parented to them. A kind whose targets run in processes of
their own (``executors.reaps_own_orphans``) reaps what its runs leave; for the others the child
kills what is left after each target execution; the server kills what a dead child left.
"""

from __future__ import annotations

import array
import ctypes
import faulthandler
import json
import os
import resource
import select
import signal
import socket
import sys
import time
from pathlib import Path

from ..base import Executor, Fuzzer
from . import slot as S
from .forkserver import DAMAGED
from .frames import encode_frame, read_frame, write_all
from .guard import confine_child, not_dumpable
from .reaper import become_subreaper, kill_orphans, sweep_leftovers

PR_SET_PDEATHSIG = 1
CONTROL_BYTES = 4096  # one control message (JSON), either way
REPORT_CHARS = 16384  # the end of a reproduction's report (a traceback, a binary's stderr) that is sent
_EXIT = os._exit  # the real one: a child that ends normally leaves without a located exit


def coverage_blob(coverage) -> bytes:
    return array.array("Q", sorted(coverage)).tobytes()


def _die_with_parent(parent: int) -> None:
    """SIGKILL with the parent; ``parent`` 0: it is outside this PID namespace (isolated: the
    namespace dies with it), so its pid cannot be compared here."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent and os.getppid() != parent:  # the parent died before the line above
        os._exit(0)


def _locate_exits() -> None:
    """``os._exit`` from target code prints where it was called before the process ends."""
    real_exit = os._exit

    def located_exit(code):
        faulthandler.dump_traceback(file=sys.stderr, all_threads=False)
        sys.stderr.flush()
        real_exit(code)

    os._exit = located_exit


class Child:
    def __init__(self, req: int, rep: int, executor=None, slot: S.Slot | None = None, sweeps: bool = True,
                 batched: bool = False):
        self.req = req
        self.sweeps = sweeps  # kill what its targets leave after each execution (else: the kind reaps them)
        self.batched = batched  # the kind measures a chunk as one batch
        self.rep = rep
        self.executor = executor
        self.slot = slot  # a forked child's execution slot (the server's own Child has none: it runs no target)
        self.pid = os.getpid()
        self.std = select.poll()  # descriptors 0-2 (/dev/null twice, the stderr pipe), asked for no event
        for fd in range(3):
            self.std.register(fd, 0)

    def intact(self) -> None:
        """After a target execution: a child whose standard descriptors the target closed, or
        that has no descriptor left, exits :data:`DAMAGED` (its parent reports that input:
        :mod:`.forkserver`); the next input gets a new child. One ``poll`` tells a closed
        descriptor (``POLLNVAL``) for the three: it runs after every execution, mutants
        included (1.7 us with the ``dup``, against 5.3 us for an ``fstat`` of each). A descriptor
        the target replaced is not told: what a target can write through one it can write
        through the child's own descriptors, and the parent checks every frame (:mod:`.frames`)."""
        damaged = any(events & select.POLLNVAL for _, events in self.std.poll(0))
        try:
            os.close(os.dup(2))
        except OSError:
            damaged = True
        if damaged:
            _EXIT(DAMAGED)

    def mine(self) -> None:
        """A copy of this process that a target forked and let return into the executor leaves at
        once, silently: only the child its parent forked speaks on the pipe and writes the slot."""
        if os.getpid() != self.pid:
            _EXIT(0)

    def send(self, message: dict, blobs=()) -> None:
        self.mine()
        write_all(self.rep, encode_frame(message, blobs))

    def serve(self) -> int:
        while True:
            frame = read_frame(self.req)
            if frame is None:
                return 0
            message, blobs = frame
            kind = message.get("type")
            if kind in ("run", "measure", "reproduce", "preflight", "offer"):
                try:
                    getattr(self, kind)(message, blobs)
                except Exception as exc:  # the engine's own failure, not the target's: reported, not a finding
                    self.executor.on_execution = _quiet
                    self.send({"type": "error", "error": type(exc).__name__, "message": str(exc)[:2000],
                               "exit_code": getattr(exc, "exit_code", 70)})
            elif kind == "stop":
                return 0
            else:
                self.send({"type": "error", "error": "ProtocolError", "message": f"unknown request {kind!r}",
                           "exit_code": 70})

    def init(self, message: dict) -> bool:
        from ...errors import SymccUlfmError
        from .. import engine, measures_in_batches, reaps_own_orphans

        try:
            self.sweeps = not reaps_own_orphans(message["executor"])
            self.batched = measures_in_batches(message["executor"])
            become_subreaper()  # a dead child's orphans come to the server
            self.executor = engine(message["executor"], message["target"], message["options"])
            if message.get("scratch"):
                self.executor.scratch_dir = Path(message["scratch"])
            identity = self.executor.identity()
            seeds = self.executor.seeds() if isinstance(self.executor, Executor) else []
        except Exception as exc:  # SymccUlfmError for bad input; anything else is a bug, reported as one
            self.send({"type": "error", "error": type(exc).__name__, "message": str(exc)[:4000],
                       "exit_code": exc.exit_code if isinstance(exc, SymccUlfmError) else 70,
                       "field": getattr(exc, "field", None)})
            return False
        limit_mb = getattr(self.executor, "memory_limit_mb", None)
        if limit_mb:
            limit = limit_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        info = getattr(self.executor, "info", None)
        self.send({"type": "ready", "identity": identity, "batch_measure": self.batched,
                   "execution_limit_s": self.executor.execution_limit_s, "run_limit_s": self.executor.run_limit_s,
                   "files": list(getattr(info, "files", ()))}, seeds)
        return True

    def announcer(self, data: bytes | None):
        """The ``on_execution`` hook that tells the parent which input is executing (``data``: the
        request's own), through the execution slot."""
        slot = self.slot

        sweep = self.sweeps

        def announce(current: bytes | None) -> None:
            self.mine()
            if current is None:
                if sweep:
                    sweep_leftovers()
                slot.ended()
                self.intact()
            elif current == data:
                slot.write(S.OWN, time.monotonic())
            elif len(current) <= S.CAPACITY:
                slot.write(S.COPIED, time.monotonic(), current)
            else:
                self.send({"type": "exec"}, [current])
                slot.write(S.FRAMED, time.monotonic())

        return announce

    def run(self, message: dict, blobs: list[bytes]) -> None:
        data = blobs[0]
        self.executor.on_execution = self.announcer(data)
        if isinstance(self.executor, Fuzzer):
            result = self.executor.fuzz(message.get("hint"))
        else:
            if message.get("tried") is not None:
                self.executor.learn(message["tried"])
            result = self.executor.run(data, message.get("hint"), message.get("mutate", True) is not False)
        self.executor.on_execution = _quiet
        findings = [{"outcome": f.outcome.to_json()} for f in result.findings]
        self.send({"type": "result", "hints": result.hints, "executions": result.executions,
                   "solver_queries": result.solver_queries, "solver_seconds": result.solver_seconds,
                   "seconds": result.seconds, "notes": result.notes, "candidates": len(result.candidates),
                   "findings": findings, "reaches": result.reaches, "tried": result.tried},
                  [*result.candidates, *(f.data for f in result.findings)])

    def reproduce(self, message: dict, blobs: list[bytes]) -> None:
        self.executor.on_execution = self.announcer(blobs[0])
        if message.get("report"):
            outcome, report = self.executor.reproduce_report(blobs[0])
        else:
            outcome, report = self.executor.reproduce(blobs[0]), ""
        self.executor.on_execution = _quiet
        self.send({"type": "reproduced", "outcome": outcome.to_json(), "report": report[-REPORT_CHARS:]})

    def preflight(self, message: dict, blobs: list[bytes]) -> None:
        self.executor.on_execution = self.announcer(None)
        summary = self.executor.preflight(None if message.get("own_seeds") else blobs)
        self.executor.on_execution = _quiet
        self.send({"type": "preflight-ok", "summary": summary})

    def offer(self, message: dict, blobs: list[bytes]) -> None:
        self.executor.offer(blobs)
        self.send({"type": "offered", "count": len(blobs)})

    def measure(self, message: dict, blobs: list[bytes]) -> None:
        budget = message.get("budget_s")
        until = None if budget is None else time.monotonic() + budget
        if self.batched:
            results = self.executor.measure_many(blobs, budget)
        else:
            results = (None if until is not None and time.monotonic() >= until else self.executor.measure(data)
                       for data in blobs)
        done = 0
        for index, measured in enumerate(results):
            if measured is None:
                break
            if self.sweeps:
                sweep_leftovers()
            self.intact()
            self.send({"type": "measured", "index": index, "outcome": measured.outcome.to_json(),
                       "returned": measured.returned}, [coverage_blob(measured.coverage)])
            done += 1
        self.send({"type": "measured-end", "count": done})


def _quiet(data: bytes | None) -> None:
    return None


class Server:
    """The fork server: ``fork`` and ``wait`` messages on the control socket (module docstring)."""

    def __init__(self, ctrl: socket.socket, built: Child, isolated: bool):
        self.ctrl = ctrl
        self.built = built
        self.isolated = isolated  # root of its user namespace: each child gets one of its own (.guard)
        self.children: set[int] = set()  # forked and not yet reaped
        self.statuses: dict[int, int] = {}  # reaped, not yet asked for

    def serve(self) -> int:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.ctrl, CONTROL_BYTES, 3)
            except (ConnectionError, OSError):
                return 0
            if not data:
                return 0
            try:
                message = json.loads(data)
            except ValueError:
                message = {}
            op = message.get("op") if isinstance(message, dict) else None
            kill_orphans(self.children)
            self.reap()
            if op == "fork" and len(fds) == 3:
                try:
                    reply = {"pid": self.fork(*fds)}
                except OSError as exc:  # starved (no memory, no process left): the parent starts another server
                    reply = {"error": f"fork: {exc}"}
            elif op == "ping":
                reply = {"pong": True}
            elif op == "wait" and isinstance(message.get("pid"), int):
                reply = {"status": self.wait(message["pid"], float(message.get("timeout_s", 0)))}
            else:
                for fd in fds:
                    os.close(fd)
                reply = {"error": f"unknown control message {data[:80]!r}"}
            self.ctrl.send(json.dumps(reply).encode())

    def fork(self, req: int, rep: int, slot: int) -> int:
        server = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            for fd in (req, rep, slot):
                os.close(fd)
            raise
        if pid == 0:
            code = 70
            try:
                self.ctrl.close()
                os.setpgid(0, 0)
                _die_with_parent(server)
                confine_child(self.isolated)
                become_subreaper()
                mapped = S.Slot(slot)
                os.close(slot)
                code = Child(req, rep, self.built.executor, mapped, self.built.sweeps, self.built.batched).serve()
                self.built.executor.close()  # what it made in this process (scratch): no finalizers run past _EXIT
            finally:
                _EXIT(code)
        os.close(req)
        os.close(rep)
        os.close(slot)
        self.children.add(pid)
        return pid

    def reap(self) -> None:
        """Reap every process that ended: the forked children's statuses are kept for ``wait``;
        orphans adopted as a subreaper are only reaped."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            if pid in self.children:
                self.children.discard(pid)
                self.statuses[pid] = status

    def wait(self, pid: int, timeout_s: float) -> int | None:
        """The wait status of child ``pid``, waiting at most ``timeout_s``; None if it still runs
        or is not a child of this server."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.reap()
            if pid in self.statuses:
                return self.statuses.pop(pid)
            if pid not in self.children or time.monotonic() >= deadline:
                return None
            time.sleep(0.002)


def main(argv: list[str]) -> int:
    req, rep, ctrl, parent = (int(a) for a in argv)
    _die_with_parent(parent)
    not_dumpable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the parent's; a KeyboardInterrupt is the target's
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True, chain=False)
    _locate_exits()
    built = Child(req, rep)
    frame = read_frame(req)
    if frame is None or frame[0].get("type") != "init" or not built.init(frame[0]):
        return 0
    os.close(req)
    os.close(rep)
    return Server(socket.socket(fileno=ctrl), built, isolated=parent == 0).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
