"""What the ``afl`` kind reads of the builds it runs: the fork-server modes of an AFL build (the
signatures AFL++'s ``check_binary`` looks for, which afl-fuzz cannot look for behind the confining
launcher), its map size (``AFL_DUMP_MAP_SIZE``, from a confined run) and the check of its CmpLog
build."""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import signal
import subprocess
import time
from pathlib import Path

from ...errors import TargetError
from ..binary.afl_coverage import AFL_SHM_MARKER
from ..binary.runs import clean_env
from ..sandbox import landlock

# what AFL++'s check_binary looks for in a binary (and sets for the target) when afl-fuzz can check it
MODES = {b"##SIG_AFL_PERSISTENT##": "__AFL_PERSISTENT", b"##SIG_AFL_DEFER_FORKSRV##": "__AFL_DEFER_FORKSRV"}
START_S = 15.0  # afl-fuzz's start: calibration of the initial inputs (AFL_FAST_CAL)


def modes_of(data: bytes) -> dict[str, str]:
    return {env: "1" for signature, env in MODES.items() if signature in data}


def cmplog_sha256(path: str, modes: dict[str, str]) -> str:
    """The SHA-256 of the CmpLog build at ``path``, an AFL build with the fork-server ``modes`` of
    the AFL build (afl-fuzz gives both fork servers one environment)."""
    field = "executor_options.cmplog_binary"
    data = read_file(field, path)
    if AFL_SHM_MARKER not in data:
        raise TargetError(field, f"{path}: not AFL-instrumented (build it with AFL_LLVM_CMPLOG=1 afl-cc)")
    if modes_of(data) != modes:
        raise TargetError(field, f"{path}: its fork-server modes ({sorted(modes_of(data))}) are not the AFL "
                                 f"build's ({sorted(modes)}): a build of another program?")
    return hashlib.sha256(data).hexdigest()


def read_file(field: str, path: str) -> bytes:
    if not os.path.isfile(path):
        raise TargetError(field, f"{path}: no such file")
    with open(path, "rb") as handle:
        return handle.read()


def dump_map_size(binary: str, target_dir: Path) -> str:
    """The size of ``binary``'s coverage map as its AFL++ runtime reports it (``AFL_DUMP_MAP_SIZE``:
    it prints it and exits), run confined like afl-fuzz runs it; "" where it reports none."""
    process = subprocess.Popen(landlock.command([str(target_dir)], [binary]), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=target_dir,
                               env={**clean_env(), "TMPDIR": str(target_dir), "AFL_DUMP_MAP_SIZE": "1"},
                               start_new_session=True)
    out, until = b"", time.monotonic() + START_S
    try:
        while len(out) < 64:
            left = until - time.monotonic()
            if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
                raise TargetError("executor_options.afl_binary", f"{binary} did not report its map size "
                                                                 f"(AFL_DUMP_MAP_SIZE) within {START_S:.0f} s")
            chunk = os.read(process.stdout.fileno(), 64)
            if not chunk:
                break
            out += chunk
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # not reaped yet: its pid still names its group
        process.stdout.close()
        process.wait()
    size = out.strip()
    return size.decode() if size.isdigit() and len(size) <= 9 else ""
