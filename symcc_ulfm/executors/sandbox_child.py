"""The sandbox child: hosts one executor and runs target code for its parent.

Started by :class:`.sandbox.Sandbox` as ``python -m symcc_ulfm.executors.sandbox_child REQ REP
PARENT``: requests arrive on file descriptor REQ, replies leave on REP (:mod:`.frames`); stdin
and stdout are ``/dev/null`` (a target may read or print), stderr is a pipe the parent keeps the
tail of. Before anything else the child arranges to die with its parent (``PR_SET_PDEATHSIG``),
disables core dumps, and makes every way of dying leave the target's Python stack on stderr:
``faulthandler`` for fatal signals and for ``SIGUSR1`` (what the parent sends to a hung child
before it kills it), and a wrapper around ``os._exit``.

Requests: ``init`` (build the executor; the reply carries its identity, seeds, limits and the
target's files), ``run`` (one :meth:`~.base.Executor.run`; every target execution it starts is
announced with an ``exec`` frame, with the input when it is not the run's own, and its end with
an ``idle`` frame), ``measure`` (inputs measured in order, one ``measured`` frame each, until an
optional time budget is spent), ``reproduce`` (one :meth:`~.base.Executor.reproduce`, announced
like a run; a ``reproduced`` frame), ``preflight`` (:meth:`~.base.Executor.preflight`, announced
likewise; a ``preflight-ok`` frame or the error), ``stop``.

An executor whose targets run in processes of their own may ask (``adopts_orphans``) that the
child become a child subreaper before the executor is built, so that every process a target
leaves behind, whatever its session, is re-parented to the child, where the executor reaps it.
"""

from __future__ import annotations

import array
import ctypes
import faulthandler
import os
import resource
import signal
import sys
import time
from pathlib import Path

from .frames import encode_frame, read_frame, write_all

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def coverage_blob(coverage) -> bytes:
    return array.array("Q", sorted(coverage)).tobytes()


def _die_with_parent(parent: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")


def _locate_exits() -> None:
    """``os._exit`` from target code prints where it was called before the process ends."""
    real_exit = os._exit

    def located_exit(code):
        faulthandler.dump_traceback(file=sys.stderr, all_threads=False)
        sys.stderr.flush()
        real_exit(code)

    os._exit = located_exit


class Child:
    def __init__(self, req: int, rep: int):
        self.req = req
        self.rep = rep
        self.executor = None

    def send(self, message: dict, blobs=()) -> None:
        write_all(self.rep, encode_frame(message, blobs))

    def serve(self) -> int:
        while True:
            frame = read_frame(self.req)
            if frame is None:
                return 0
            message, blobs = frame
            kind = message.get("type")
            if kind == "init":
                if not self.init(message):
                    return 0
            elif kind in ("run", "measure", "reproduce", "preflight"):
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
        from ..errors import SymccUlfmError
        from . import engine, executor_class

        try:
            if executor_class(message["executor"]).adopts_orphans:
                _become_subreaper()
            self.executor = engine(message["executor"], message["target"], message["options"])
            if message.get("scratch"):
                self.executor.scratch_dir = Path(message["scratch"])
            identity = self.executor.identity()
            seeds = self.executor.seeds()
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
        self.send({"type": "ready", "identity": identity, "pid": os.getpid(), "batch_measure": self.executor.batch_measure,
                   "execution_limit_s": self.executor.execution_limit_s, "run_limit_s": self.executor.run_limit_s,
                   "files": list(getattr(info, "files", ()))}, seeds)
        return True

    def announcer(self, data: bytes | None):
        """The ``on_execution`` hook that tells the parent which input is executing (``data``: the request's own)."""

        def announce(current: bytes | None) -> None:
            if current is None:
                self.send({"type": "idle"})
            elif current == data:
                self.send({"type": "exec", "input": True})
            else:
                self.send({"type": "exec", "input": False}, [current])

        return announce

    def run(self, message: dict, blobs: list[bytes]) -> None:
        data = blobs[0]
        self.executor.on_execution = self.announcer(data)
        result = self.executor.run(data, message.get("hint"))
        self.executor.on_execution = _quiet
        findings = [{"outcome": f.outcome.to_json()} for f in result.findings]
        self.send({"type": "result", "hints": result.hints, "executions": result.executions,
                   "solver_queries": result.solver_queries, "solver_seconds": result.solver_seconds,
                   "seconds": result.seconds, "notes": result.notes, "candidates": len(result.candidates),
                   "findings": findings},
                  [*result.candidates, *(f.data for f in result.findings)])

    def reproduce(self, message: dict, blobs: list[bytes]) -> None:
        self.executor.on_execution = self.announcer(blobs[0])
        outcome = self.executor.reproduce(blobs[0])
        self.executor.on_execution = _quiet
        self.send({"type": "reproduced", "outcome": outcome.to_json()})

    def preflight(self, message: dict, blobs: list[bytes]) -> None:
        self.executor.on_execution = self.announcer(None)
        summary = self.executor.preflight(None if message.get("own_seeds") else blobs)
        self.executor.on_execution = _quiet
        self.send({"type": "preflight-ok", "summary": summary})

    def measure(self, message: dict, blobs: list[bytes]) -> None:
        budget = message.get("budget_s")
        until = None if budget is None else time.monotonic() + budget
        if self.executor.batch_measure:
            results = self.executor.measure_many(blobs, budget)
        else:
            results = (None if until is not None and time.monotonic() >= until else self.executor.measure(data)
                       for data in blobs)
        done = 0
        for index, measured in enumerate(results):
            if measured is None:
                break
            self.send({"type": "measured", "index": index, "outcome": measured.outcome.to_json(),
                       "returned": measured.returned}, [coverage_blob(measured.coverage)])
            done += 1
        self.send({"type": "measured-end", "count": done})


def _quiet(data: bytes | None) -> None:
    return None


def main(argv: list[str]) -> int:
    req, rep, parent = (int(a) for a in argv)
    _die_with_parent(parent)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True, chain=False)
    _locate_exits()
    return Child(req, rep).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
