"""Processes and files of a binary target (the ``symcc`` and ``native`` executors' and the ``afl``
fuzzer's): running a binary contained, its scratch space, reading the test cases SymCC wrote.

Every binary (a SymCC run, its concrete confirmation, ``afl-showmap``, the AFL twin, a native or
sanitizer build's direct run, :func:`run_input`) is started directly from the executor's process
with :func:`run_binary`: no helper process sits between them. The binary gets a session and process group of its own; its exit is awaited through a
pidfd, so after the time limit, or after it exited, its group is killed while the leader is
still an unreaped zombie (the group id cannot have been reused). When this process is a child
subreaper (the sandbox child makes itself one for these kinds, see
:attr:`~..base.Target.reaps_own_orphans`), every process the run left behind outside that group
(a daemon that called ``setsid()``, AFL's fork server, their children) has been re-parented here
and :func:`~..sandbox.reaper.sweep_children` kills and reaps it. Without the subreaper (the executor built
in-process, as unit tests do) only the group is killed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import math
import os
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import TargetError
from ..outcome import OK, Outcome, death, sanitizer_summary, signal_name
from ..sandbox import landlock
from ..sandbox.reaper import sweep_children

STDERR_TAIL_BYTES = 2000
REPORT_BYTES = 1 << 16  # of stderr read for a run's outcome: a sanitizer's report, its first stack included
# QSYM names a test case NNNNNN, or NNNNNN-optimistic when it solved the negated branch alone
# because the whole path constraint was unsatisfiable; the counter is shared by both kinds.
TEST_CASE = re.compile(r"([0-9]{6,})(-optimistic)?")
SCRATCH_PREFIX = "symcc-ulfm-exec-"
CPU_LIMIT_FACTOR, CPU_LIMIT_EXTRA_S = 10, 10.0


def clean_env() -> dict[str, str]:
    """This process's environment without ``SYMCC_*`` and ``AFL_*``: a run means what the
    identity says (a stray ``SYMCC_INPUT_FILE`` makes stdin concrete, a stray
    ``AFL_CMIN_ALLOW_ANY`` changes what ``afl-showmap`` reports)."""
    return {key: val for key, val in os.environ.items() if not key.startswith(("SYMCC_", "AFL_"))}


def classify_exit(returncode: int, timed_out: bool, stderr: str) -> Outcome:
    """The outcome of one run of a binary (its exit status and the tail of its stderr): a signal
    or a sanitizer report (its ``SUMMARY:`` line) is a crash, the time limit a hang; any exit
    status alone is ``ok`` (parsers exit non-zero on inputs they reject)."""
    if timed_out:
        return death("hang (killed after its time limit)", stderr, kind="hang")
    if returncode < 0:
        return death(signal_name(-returncode), stderr)
    return death(f"exit {returncode}", stderr) if sanitizer_summary(stderr) is not None else OK


@dataclass(frozen=True)
class Exit:
    """How one binary run ended: ``returncode`` is negative for a signal (as in :mod:`subprocess`)."""

    returncode: int
    timed_out: bool
    seconds: float


def run_binary(field: str, argv: list[str], *, stdin: Path, stderr: Path, env: dict[str, str], cwd: Path,
               timeout_s: float, adopt: bool, term_grace_s: float = 0.0, cpu_limit_s: float | None = None,
               spare: frozenset[int] = frozenset(), writable: list[Path] | None = None,
               file_limit_bytes: int | None = None) -> Exit:
    """Run ``argv`` (stdin from a file, stdout discarded, stderr to a file), at most ``timeout_s``;
    with ``adopt``, then end every other child of this process but those in ``spare``; given
    ``writable``, confined to write only beneath those directories (:mod:`..sandbox.landlock`).

    On timeout the leader gets SIGTERM first when ``term_grace_s`` is positive (afl-showmap then
    removes its shared memory and stops its fork server), then its whole group SIGKILL. A binary
    the kernel refuses to execute is a TargetError on ``field``.

    The leader also gets a CPU-time limit (``RLIMIT_CPU``, set in its process before it executes: a
    sandbox child may not change the limits of another process, :mod:`..sandbox.guard`; by
    default ``CPU_LIMIT_FACTOR`` times ``timeout_s`` plus ``CPU_LIMIT_EXTRA_S``): a backstop for
    a run whose watcher died (the worker was killed mid-run, its sandbox child with it), so that a
    target spinning forever is killed by the kernel; the watcher's timeout comes long before it.
    Given ``file_limit_bytes`` (``RLIMIT_FSIZE``), no file it writes, its stderr included, grows
    past that: a write beyond it ends the binary with SIGXFSZ.
    """
    started = time.monotonic()
    cpu_s = math.ceil(CPU_LIMIT_FACTOR * timeout_s + CPU_LIMIT_EXTRA_S if cpu_limit_s is None else cpu_limit_s)
    ruleset = None if writable is None else landlock.ruleset([str(path) for path in writable])
    with open(stdin, "rb") as stdin_file, open(stderr, "wb") as stderr_file:
        try:
            proc = subprocess.Popen(argv, stdin=stdin_file, stdout=subprocess.DEVNULL, stderr=stderr_file,
                                    cwd=cwd, env=env, start_new_session=True,
                                    preexec_fn=functools.partial(_confine, cpu_s, ruleset, file_limit_bytes))
        except OSError as exc:
            raise TargetError(field, f"{argv[0]}: cannot execute ({exc.strerror or exc})") from None
        finally:
            if ruleset is not None:
                os.close(ruleset)
    pidfd = os.pidfd_open(proc.pid)
    try:
        timed_out = not _exited(pidfd, timeout_s)
        if timed_out and term_grace_s > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            _exited(pidfd, term_grace_s)
        # Exited or not, the leader is not reaped yet: its pid still names its group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    finally:
        os.close(pidfd)
    returncode = proc.wait()
    if adopt:
        sweep_children(spare)
    return Exit(returncode, timed_out, time.monotonic() - started)


def _confine(seconds: int, ruleset: int | None, file_bytes: int | None) -> None:
    """In the binary's process before it executes: SIGKILL after ``seconds`` of CPU time, files
    of at most ``file_bytes`` and the Landlock ``ruleset`` when given."""
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    if file_bytes is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    if ruleset is not None:
        landlock.restrict(ruleset)


def _exited(pidfd: int, timeout_s: float) -> bool:
    """Wait until the process exits (its pidfd turns readable), at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if poller.poll(max(0, int(remaining * 1000) + 1)):
            return True
        if remaining <= 0:
            return False


def run_input(field: str, binary: str, args: list[str], input_path: Path, work: Path, stderr_name: str, *,
              env: dict[str, str], timeout_s: float, adopt: bool, spare: frozenset[int] = frozenset(),
              writable: list[Path] | None = None, file_limit_bytes: int | None = None) -> tuple[Outcome, str]:
    """One direct run of ``binary`` on the input in ``input_path`` (in its file where ``args`` holds
    ``@@``, and on stdin), in ``work``, as :func:`run_binary` runs it: its outcome
    (:func:`classify_exit`) and the tail of its stderr, left in ``work/stderr_name``."""
    argv = [binary, *(arg.replace("@@", str(input_path)) for arg in args)]
    ended = run_binary(field, argv, stdin=input_path, stderr=work / stderr_name, env=env, cwd=work,
                       timeout_s=timeout_s, adopt=adopt, spare=spare, writable=writable,
                       file_limit_bytes=file_limit_bytes)
    stderr = tail(work / stderr_name, REPORT_BYTES)
    return classify_exit(ended.returncode, ended.timed_out, stderr), stderr


class Scratch:
    """The executor's own directory under ``base``: ``symcc-ulfm-exec-XXXX/``, locked while it lives.

    ``symcc-ulfm-exec-XXXX.lock`` beside it is held with ``flock`` for the life of this process (the
    lock is taken under a temporary name and renamed into place, so a lock file is never seen
    unlocked while its owner lives). At start every sibling whose lock can be taken belongs to a
    process that is gone, and is removed with its directory. Runs use :meth:`fresh`, removed
    again after the run; files that outlive runs (a per-worker coverage map) live in ``root``.
    """

    def __init__(self, base: Path):
        if not base.is_dir():
            raise TargetError("scratch_dir", f"{base}: not a directory")
        remove_stale(base)
        token = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=base)).name
        self.root = base / token
        pending = base / f".{token}.lock-new"
        self._lock = os.open(pending, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.lock_path = base / f"{token}.lock"
        os.rename(pending, self.lock_path)
        self._finalizer = weakref.finalize(self, _release, self.root, self.lock_path, self._lock)

    def fresh(self, name: str) -> Path:
        path = self.root / name
        if path.exists():
            remove_tree(path)
        path.mkdir()
        return path

    def close(self) -> None:
        self._finalizer()


def remove_stale(base: Path) -> int:
    """Remove the scratch directories under ``base`` whose owners are gone; how many."""
    removed = 0
    for lock_path in base.glob(f"{SCRATCH_PREFIX}*.lock"):
        try:
            fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its owner is alive
        try:
            directory = lock_path.with_suffix("")
            if directory.is_dir() and not directory.is_symlink():
                remove_tree(directory)
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
            removed += 1
        finally:
            os.close(fd)
    return removed


def _release(root: Path, lock_path: Path, lock_fd: int) -> None:
    with contextlib.suppress(OSError):
        remove_tree(root)
    with contextlib.suppress(OSError):
        lock_path.unlink()
    with contextlib.suppress(OSError):
        os.close(lock_fd)


def read_outputs(output_dir: Path, max_bytes: int) -> tuple[list[bytes], dict[str, Any]]:
    """Candidates from SymCC's test cases in the order it wrote them, with counts of what was read,
    skipped or ignored (flat, so that they can become counters)."""
    counts: dict[str, Any] = {
        "outputs_plain": 0, "outputs_optimistic": 0, "skipped_symlink": 0, "skipped_not_regular": 0,
        "skipped_oversized": 0, "skipped_unreadable": 0, "ignored_entries": 0,
    }
    try:
        dir_fd = os.open(output_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        # The target replaced or removed its output directory: nothing it left can be trusted.
        counts["output_dir_error"] = f"{type(exc).__name__}: {exc.strerror}"
        return [], counts
    candidates = []
    try:
        cases = []
        for name in os.listdir(dir_fd):
            match = TEST_CASE.fullmatch(name)
            if match is None:
                counts["ignored_entries"] += 1
            else:
                cases.append((int(match[1]), name, bool(match[2])))
        for _number, name, optimistic in sorted(cases):
            data, reason = read_regular(dir_fd, name, max_bytes)
            if data is None:
                counts[f"skipped_{reason}"] += 1
            else:
                candidates.append(data)
                counts["outputs_optimistic" if optimistic else "outputs_plain"] += 1
    finally:
        os.close(dir_fd)
    return candidates, counts


def read_regular(dir_fd: int, name: str, max_bytes: int) -> tuple[bytes | None, str]:
    """Bytes of a regular file (never through a symlink, never blocking on a FIFO) or a reason."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        return None, "symlink" if exc.errno == errno.ELOOP else "unreadable"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not_regular"
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            return None, "oversized"
        return b"".join(chunks), ""
    except OSError:
        return None, "unreadable"
    finally:
        os.close(fd)


def tail(path: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a file a run wrote (its stderr), decoded; "" when unreadable.
    What :func:`classify_exit` reads is :data:`REPORT_BYTES` of it: a sanitizer prints its summary
    after the stacks (and ASan a shadow map after that)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def remove_tree(path: Path) -> None:
    """Remove a directory tree, also when the target left directories without write permission."""
    try:
        shutil.rmtree(path)
    except PermissionError:
        for root, dirs, _files in os.walk(path):
            for name in dirs:
                child = os.path.join(root, name)
                if not os.path.islink(child):
                    os.chmod(child, stat.S_IRWXU)
        shutil.rmtree(path)
