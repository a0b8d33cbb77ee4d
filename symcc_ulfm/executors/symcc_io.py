"""Running a SymCC binary contained, and reading what it wrote (for ``executors.symcc``)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import SymccUlfmError, TargetError

STDERR_TAIL_BYTES = 2000
REAPER = Path(__file__).with_name("symcc_reaper.py")
REAPER_GRACE_S = 30.0  # beyond the reaper's own timeout, before it is presumed hung


def clean_env() -> dict[str, str]:
    return {key: val for key, val in os.environ.items() if not key.startswith("SYMCC_")}


def run_contained(
    field: str, argv: list[str], stdin_path: Path, env: dict[str, str], cwd: Path, timeout_s: float
) -> tuple[int, bool]:
    """Run ``argv`` under :mod:`.symcc_reaper`; return ``(returncode, timed_out)``.

    The reaper enforces ``timeout_s``, kills the command's process group and then every
    descendant that is left (also those that escaped the group, like AFL's fork server). Stdin
    is ``stdin_path`` (a file, so the target may read as much or as little as it likes), stdout
    is discarded, stderr goes to ``cwd/stderr``. A command the kernel refuses to execute is a
    TargetError on ``field``.
    """
    status_path = cwd / "status.json"
    command = [sys.executable, "-I", "-S", str(REAPER), str(status_path), repr(timeout_s), "--", *argv]
    with open(stdin_path, "rb") as stdin, open(cwd / "stderr", "wb") as stderr:
        proc = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    try:
        proc.wait(timeout=timeout_s + REAPER_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # not reaped yet: the group id is still the reaper's
        proc.wait()
    try:
        status = json.loads(status_path.read_text())
    except (OSError, ValueError):
        raise SymccUlfmError(
            f"symcc_reaper gave no status for {argv[0]} (exit {proc.returncode}): {tail(cwd / 'stderr')}"
        ) from None
    if "exec_error" in status:
        raise TargetError(field, f"{argv[0]}: cannot execute ({status['exec_error']})")
    return status["returncode"], status["timed_out"]


def read_outputs(output_dir: Path, max_bytes: int) -> tuple[list[bytes], dict[str, Any]]:
    """Candidates from SymCC's numbered test cases, in order, with counts of what was skipped."""
    skipped = {"symlink": 0, "not_regular": 0, "oversized": 0, "unreadable": 0}
    counts: dict[str, Any] = {
        "outputs_found": 0,
        "outputs_read": 0,
        "outputs_skipped": skipped,
        "ignored_entries": 0,
    }
    try:
        dir_fd = os.open(output_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        # The target replaced or removed its output directory: nothing it left can be trusted.
        counts["output_dir_error"] = f"{type(exc).__name__}: {exc.strerror}"
        return [], counts
    candidates = []
    try:
        names = os.listdir(dir_fd)
        numbered = sorted(
            (name for name in names if len(name) >= 6 and name.isascii() and name.isdigit()), key=int
        )
        counts["outputs_found"] = len(numbered)
        counts["ignored_entries"] = len(names) - len(numbered)
        for name in numbered:
            data, reason = read_regular(dir_fd, name, max_bytes)
            if data is None:
                skipped[reason] += 1
            else:
                candidates.append(data)
        counts["outputs_read"] = len(candidates)
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


def tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - STDERR_TAIL_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def remove_tree(path: Path) -> None:
    """Remove a run's temp dir, also when the target left directories without write permission."""
    try:
        shutil.rmtree(path)
    except PermissionError:
        for root, dirs, _files in os.walk(path):
            for name in dirs:
                child = os.path.join(root, name)
                if not os.path.islink(child):
                    os.chmod(child, stat.S_IRWXU)
        shutil.rmtree(path)
