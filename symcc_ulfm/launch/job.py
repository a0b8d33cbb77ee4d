"""Running one campaign job: ``mpiexec`` under ``launch``, bounded, supervised, and really over.

* The job dies with ``launch``: ``mpiexec`` gets ``PR_SET_PDEATHSIG`` (SIGKILL when ``launch``
  dies, SIGKILL included), every rank gets it against ``mpiexec`` (``mpi.rank``), and SIGINT,
  SIGTERM and SIGHUP of ``launch`` stop the job before ``launch`` exits (128 + N). A job stopped
  on purpose (a signal, an overrun) is frozen whole before it is killed, so that no rank sees
  another die and records a recovery the campaign never had: a resume finds its last generation.
* The job's output (``mpiexec``'s and the ranks') goes through a pipe: ``launch`` appends it to
  ``job-output.txt`` (opened without following a link) and keeps its tail in memory, so the
  reason a job stopped is printed even when the disk that would hold the file is full. Each
  rank that ends through an error prints ``symcc-ulfm rank error (exit N): ...``; those lines
  are the job's ``errors``.
* The job is over when every rank is gone, not when ``mpiexec`` returns: ranks hold
  ``ranks.lock`` (``store.joblock``) for their whole life, and ``launch`` takes it exclusively,
  with a bound, before it judges; a rank of the job's session still alive after the bound is
  killed. The other way round, an ``mpiexec`` that outlives every rank of its job by that
  bound (PRRTE aborting a job whose ranks all failed at once can hang) is stopped instead of
  waited for until the job's timeout.
* An ``mpiexec`` that fails before any rank of its job started (no rank wrote its log) is
  started again, at most ``START_ATTEMPTS`` times in all, and each retry is noted: such a job
  changed nothing in the state directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..core.budget import job_timeout, ranks_over_s
from ..core.policy import Policy
from ..errors import CheckFailed, ConfigError, Interrupted
from ..executors.sandbox.reaper import proc_stats
from ..store.deadline_file import read_deadlines
from ..store.joblock import RanksProbe, open_state_file, ranks_gone
from ..store.paths import StateDir
from .mpiexec import job_environment, mpiexec_command, shell_line
from .prepare import hold

TAIL_BYTES = 64 << 10
EARLIER_RANKS_S = 10.0  # how long a new job waits for the ranks of an earlier one to be gone
START_ATTEMPTS = 3  # starts of a job whose mpiexec fails before any rank started (see _ranks_started)
START_RETRY_S = 1.0
_POLL_S = 0.5  # how often launch looks at the job while it runs
_RANK_ERROR = re.compile(r"symcc-ulfm rank error \(exit (\d+)\): (.*)")
PR_SET_PDEATHSIG = 1


@dataclass
class JobResult:
    command: list[str]
    returncode: int
    seconds: float
    timed_out: bool
    output_path: Path
    output: bytes = b""  # the last TAIL_BYTES of the job's output
    output_error: str | None = None  # why job-output.txt is incomplete (a full disk)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (exit code, reason) of ranks that failed
    notes: list[str] = field(default_factory=list)  # what launch had to do about the job

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output.decode("utf-8", "replace").splitlines()[-lines:])


def run_job(
    policy: Policy,
    state: StateDir,
    echo: Callable[[str], None] = print,
    extra_args: list[str] | None = None,
    env_overrides: dict[str, str] | None = None,
    command_prefix: list[str] | None = None,
    progress: Callable[[], None] | None = None,
) -> JobResult:
    """Run the campaign job for ``state`` (``mpiexec_command``, after ``command_prefix``; the exact
    command is echoed first); kill it when it overruns or ``launch`` is stopped; return once every
    rank of it is gone (see the module docstring). ``progress`` is called between looks at the job."""
    hold(state)
    command = [*(command_prefix or []), *mpiexec_command(policy, state.root, state.modes, extra=extra_args)]
    echo("+ " + shell_line(command))
    env = {**job_environment(state.modes), **(env_overrides or {})}
    return supervise(policy, state, command, env, progress)


def supervise(policy: Policy, state: StateDir, command: list[str], env: dict[str, str],
              progress: Callable[[], None] | None = None) -> JobResult:
    """Run ``command`` as the campaign job of ``state`` (what :func:`run_job` runs, and a test its
    stand-in for ``mpiexec``): bounded, supervised, over once every rank of it is gone; ``progress``
    (``launch.progress``) is called every ``_POLL_S`` while it runs, in this thread."""
    left = ranks_gone(state.root, state.modes.snapshot, EARLIER_RANKS_S)
    if left:
        raise ConfigError("state_dir", f"ranks of an earlier job (pids {left}) still run on {state.root}; "
                                       "stop them before starting another job on it")
    started = time.monotonic()
    notes: list[str] = []
    with stopped_by_signals():
        for attempt in range(1, START_ATTEMPTS + 1):
            attempt_wall = time.time()
            output = _open_output(state.job_output, state.modes.snapshot)  # the tee closes it
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
            tee = _Tee(process.stdout, output)
            try:
                returncode, timed_out = _wait(process, policy, state, notes, progress)
            except BaseException:  # interrupted: never leave the job behind
                _kill_job(process)
                _reap(process.pid, state, ranks_over_s(policy))
                raise
            finally:
                tee.join(timeout=5.0)  # a process of the job that kept the pipe open does not hold us
            _reap(process.pid, state, ranks_over_s(policy))
            if returncode == 0 or timed_out or tee.errors() or _ranks_started(state, attempt_wall):
                break
            if attempt < START_ATTEMPTS:
                notes.append(f"mpiexec exited {returncode} before any rank started (attempt {attempt}: "
                             f"{_last_line(tee.tail())}); started again")
                time.sleep(START_RETRY_S)
    return JobResult(command, returncode, time.monotonic() - started, timed_out, state.job_output,
                     tee.tail(), tee.error, tee.errors(), notes)


def _ranks_started(state: StateDir, since: float) -> bool:
    """Whether a rank of the job that started at wall time ``since`` wrote its log: ranks open it
    first thing, so a job none of whose ranks did so changed nothing in the state and may be
    started again (``mpiexec`` failing to start, as PRRTE does now and then under load: "the
    PMIx server's listener thread failed to start")."""
    for path in state.rank_logs().values():
        with contextlib.suppress(OSError):
            if os.lstat(path).st_mtime >= since - 1.0:
                return True
    return False


def _last_line(output: bytes) -> str:
    lines = output.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:200] if lines else "no output"


def _wait(process: subprocess.Popen, policy: Policy, state: StateDir, notes: list[str],
          progress: Callable[[], None] | None = None) -> tuple[int, bool]:
    """``mpiexec``'s exit status and whether it overran the job's timeout (then it is killed).

    Once ranks have held ``ranks.lock`` and none holds it any more for ``ranks_over_s``, the
    job is over whatever ``mpiexec`` does: it is stopped, and that is noted."""
    deadline = time.monotonic() + job_timeout(policy, read_deadlines(state, policy).latest)
    probe = RanksProbe(state.root, state.modes.snapshot)
    seen, free_since = False, None
    try:
        while True:
            try:
                return process.wait(timeout=_POLL_S), False
            except subprocess.TimeoutExpired:
                pass
            if progress is not None:
                progress()
            now = time.monotonic()
            if now >= deadline:
                return _kill_job(process), True
            if probe.held():
                seen, free_since = True, None
            elif seen:
                free_since = free_since or now
                if now - free_since >= ranks_over_s(policy):
                    notes.append(f"mpiexec outlived every rank of its job by {now - free_since:.1f} s; stopped")
                    return _kill_job(process), False
    finally:
        probe.close()


def _open_output(path: Path, mode: int) -> int:
    fd, info = open_state_file(path, os.O_WRONLY | os.O_APPEND, mode, "the job output")
    if info.st_nlink != 1 or info.st_uid != os.geteuid():
        os.close(fd)
        raise ConfigError("state_dir", f"{path} is not a file of this user's own (owner uid {info.st_uid}, "
                                       f"{info.st_nlink} links); refusing to write the job output into it")
    return fd


class _Tee(threading.Thread):
    """Copies the job's output into ``job-output.txt`` and keeps its tail; never blocks the job."""

    def __init__(self, source, fd: int):
        super().__init__(name="job output", daemon=True)
        self.source, self.fd = source, fd
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.lock = threading.Lock()
        self.error: str | None = None
        self.start()

    def run(self) -> None:
        try:
            while chunk := self.source.read1(1 << 16):
                with self.lock:
                    self.chunks.append(chunk)
                    self.size += len(chunk)
                    while self.size - len(self.chunks[0]) >= TAIL_BYTES:
                        self.size -= len(self.chunks.popleft())
                if self.error is None:
                    try:
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(self.fd, view):]
                    except OSError as exc:  # keep reading: a full disk must not stop the job's output
                        self.error = f"job-output.txt is incomplete: {exc.strerror or exc}"
        finally:
            os.close(self.fd)

    def tail(self) -> bytes:
        with self.lock:
            return b"".join(self.chunks)[-TAIL_BYTES:]

    def errors(self) -> list[tuple[int, str]]:
        found = []
        for line in self.tail().decode("utf-8", "replace").splitlines():
            match = _RANK_ERROR.search(line)
            if match:
                found.append((int(match[1]), match[2]))
        return found


def die_with_parent() -> None:
    """In the child before exec: SIGKILL it when ``launch`` dies (inherited across exec)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Interrupted` (as SIGINT raises KeyboardInterrupt), so the
    job (or a study's cells) is stopped before the process ends; the previous handlers come back afterwards."""

    def stop(signum, _frame):
        raise Interrupted(signum, signal.Signals(signum).name)

    previous = {}
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            previous[signum] = signal.signal(signum, stop)
    except ValueError:  # not the main thread (a notebook): the parent-death signal still holds
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _kill_job(process: subprocess.Popen) -> int:
    """Stop every process of the job's session at once (SIGSTOP), then SIGKILL them all (ranks
    run in process groups of their own); ``mpiexec``'s exit status."""
    pids = session_pids(process.pid)
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.wait()


def _reap(session: int, state: StateDir, bound_s: float) -> None:
    """Return once no rank holds ``ranks.lock``; after ``bound_s``, SIGKILL what is left of the
    job's session (ranks each run in a process group of their own) and wait again."""
    if not ranks_gone(state.root, state.modes.snapshot, bound_s):
        return
    for pid in session_pids(session):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    left = ranks_gone(state.root, state.modes.snapshot, 5.0)
    if left:
        raise CheckFailed(f"processes {left} still hold {state.root}/ranks.lock after the job ended; "
                          "not judging a state that may still change")


def session_pids(session: int) -> list[int]:
    """Processes of the session ``session`` (the job's: ``mpiexec`` leads it), from ``/proc``."""
    return [pid for pid, fields in proc_stats() if int(fields[3]) == session]  # state ppid pgrp session
