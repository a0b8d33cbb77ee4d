"""``symcc-ulfm minimize``: shrink a finding's input (or any file) while it keeps its signature.

The test a candidate must pass: executed contained (the executor's sandbox, its time and memory
limits), it gives the same ``(kind, signature)`` as the input it came from, the finding's dedup
key (``executors.outcome``). Python targets are reduced by ``core.reduction`` (ddmin, then byte
simplification); binary targets with an AFL build (the ``symcc`` executor's ``afl_binary``) go
first through AFL++'s own ``afl-tmin`` on that build (its crash mode keeps *a* crash; in the
same namespaces as every target, with a time bound), and its result is kept only when it still
gives the finding's signature, then ``core.reduction`` goes on from it. At most
``max_executions`` contained executions are spent by our reduction, so it is bounded, and
deterministic for a deterministic target.

The minimised input is stored as ``triage/objects/<sha256>`` of its source with a record
``triage/records/minimize-<id>.json`` (finding, both SHA-256s and sizes, executions, tool); a
sealed run directory is never written (``--out FILE`` is required there), and ``--out`` writes a
copy wherever it names, overwriting nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ..core.finding import finding_id
from ..core.modes import FileModes
from ..core.reduction import Reducer
from ..errors import CheckFailed, ConfigError
from ..executors.base import Executor
from ..executors.binary.runs import clean_env
from ..executors.outcome import Outcome
from ..executors.sandbox import isolation
from ..store.atomic import write_new
from ..store.reads import read_bytes
from .replay import executor_of
from .sources import Run, open_source

MINIMIZE_FORMAT = "symcc-ulfm-minimize/1"
DEFAULT_MAX_EXECUTIONS = 1000
TMIN_TIMEOUT_S = 120.0  # one afl-tmin in all


def minimize(path: str | Path, key: str, modes: FileModes, out: str | Path | None = None,
             max_executions: int = DEFAULT_MAX_EXECUTIONS) -> dict:
    source = open_source(path, modes)
    if source.sealed is not None and out is None:
        raise ConfigError("--out", f"{source.root} is in the sealed run {source.sealed}, which is never modified: "
                                   "name a file for the minimised input with --out FILE")
    found = source.select(key)
    data = source.read_input(found.input_sha256)
    row = _shrink(source.run, data, (found.kind, found.signature), max_executions)
    row.update(id=found.id, input_sha256=found.input_sha256)
    if source.sealed is None:
        store = source.triage()
        row["object"] = str(store.objects / store.put(row.pop("data")))
        row["record"] = str(store.record("minimize", found.id, {k: v for k, v in row.items() if k != "data"}))
        data_out = store.read(row["minimized_sha256"])
    else:
        data_out = row.pop("data")
    if out is not None:
        row["out"] = _write_out(Path(out), data_out)
    return row


def minimize_input(run: Run, input_path: str | Path, out: str | Path | None = None,
                   max_executions: int = DEFAULT_MAX_EXECUTIONS) -> dict:
    """Minimise a file the user has: the finding it gives on its first execution is the one kept."""
    data = read_bytes(input_path)
    row = _shrink(run, data, None, max_executions)
    row["out"] = _write_out(Path(out) if out is not None else Path(f"{input_path}.min"), row.pop("data"))
    return row


def _write_out(path: Path, data: bytes) -> str:
    if not path.parent.is_dir():
        raise ConfigError("--out", f"{path.parent} is not a directory")
    if not write_new(path, data, 0o644) and read_bytes(path) != data:
        raise ConfigError("--out", f"{path} exists (with other bytes); minimize overwrites nothing")
    return str(path)


def _shrink(run: Run, data: bytes, expected: tuple[str, str] | None, max_executions: int) -> dict:
    if type(max_executions) is not int or max_executions < 1:
        raise ConfigError("--max-executions", f"{max_executions!r}: expected a positive integer")
    executor = executor_of(run)
    try:
        first = executor.reproduce(data)
        if expected is None:
            if not first.is_finding:
                raise ConfigError("--input", f"the input gives no finding (it ran {first.kind}"
                                             f"{': ' + first.detail if first.detail else ''}): nothing to keep while "
                                             "shrinking it")
            expected = (first.kind, first.signature)
        elif (first.kind, first.signature) != expected:
            raise CheckFailed(f"the input does not give its finding now (observed {first.kind}: "
                              f"{first.signature or first.detail or '-'}); `symcc-ulfm replay --repeat N` measures how "
                              "often it does")

        def keeps(candidate: bytes) -> bool:
            outcome: Outcome = executor.reproduce(candidate)
            return (outcome.kind, outcome.signature) == expected

        tools, start = [], data
        tmin = _afl_tmin(run, data, expected[0], executor)
        if tmin is not None:
            tools.append("afl-tmin")
            if len(tmin) < len(data) and keeps(tmin):
                start = tmin
        reducer = Reducer(keeps, max_executions)
        tools.append("ddmin+simplify")
        result = reducer.reduce(start)
    finally:
        executor.close()
    return {"format": MINIMIZE_FORMAT, "id": finding_id(*expected), "kind": expected[0], "signature": expected[1],
            "input_size": len(data), "minimized_size": len(result),
            "minimized_sha256": hashlib.sha256(result).hexdigest(), "executions": 1 + reducer.tests + bool(tmin),
            "max_executions": max_executions, "budget_spent": reducer.exhausted, "tools": tools, "data": result}


def _afl_tmin(run: Run, data: bytes, kind: str, executor: Executor) -> bytes | None:
    """afl-tmin's minimisation of a crash on the AFL build of a binary target; None where it does
    not apply (no AFL build, not a crash, no afl-tmin on PATH) or fails."""
    binary, tmin = run.options.get("afl_binary"), shutil.which("afl-tmin")
    if run.executor not in ("symcc", "native") or kind != "crash" or not isinstance(binary, str) or tmin is None:
        return None
    args = [str(a) for a in run.options.get("args", [])]
    timeout_ms = max(100, int(1000 * min(executor.execution_limit_s, 10.0)))
    with tempfile.TemporaryDirectory(prefix="symcc-ulfm-tmin-") as work:
        source, result = Path(work) / "input", Path(work) / "minimized"
        source.write_bytes(data)
        command = [tmin, "-i", str(source), "-o", str(result), "-t", str(timeout_ms), "-m", "none", "--",
                   os.path.abspath(binary), *args]
        if run.isolation == "namespaces":
            command = isolation.wrap(command, [work])
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=work, start_new_session=True,
                                env={**clean_env(), "TMPDIR": work})
        try:
            proc.wait(timeout=TMIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return result.read_bytes() if proc.returncode == 0 and result.is_file() else None
