"""The child process that measures a Python target (``python -m symcc_ulfm.compare.measure.python_child
JOB FD``), started and watched by :mod:`.python_arcs`.

``JOB`` is a JSON file: ``spec`` and ``modules`` (the target as the concolic executor resolves it:
:class:`~symcc_ulfm.executors.concolic.executor.PythonTarget`, whose traced files and expected
exceptions these are), ``inputs`` (``[path, first_s]`` in order), ``times`` (``[index, t]``
ascending), ``arcs`` (``{file: [[from, to], ...]}`` an earlier child measured, added to this one's
data first) and ``report`` (a file for coverage.py's JSON report). The child writes JSON lines to
the file descriptor ``FD`` only (the target's stdout and stderr are not its channel):
``{"ready": true}`` or ``{"error": why}``, then per input ``{"start": i}`` and ``{"done": i,
"outcome": "ok"|"finding"|"hang", "signature": str, "arcs": {new arcs}}``, per time ``{"point": index,
"value": n}`` as soon as the next input was first seen later, and ``{"final": n}`` at the end.

Each input runs as the concolic executor runs it concretely
(:func:`~symcc_ulfm.executors.concolic.tracing.tracer.execute`, the target's recursion bound),
under coverage.py instead of the engine's tracer, with :data:`~symcc_ulfm.compare.measure.measured.TIMEOUT_S`
of ``SIGALRM`` (then it is a hang) and the target's address-space limit (``memory_mb``); its
outcome is :func:`~symcc_ulfm.executors.concolic.tracing.run_outcome.classify`'s, so a finding's
signature is the one a campaign reports. A value is coverage.py's ``covered_branches`` total (what
``coverage json`` reports) over the traced files.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path

import coverage

from ...executors.concolic.executor import PythonTarget
from ...executors.concolic.expressions.path import ExecTimeout
from ...executors.concolic.tracing.run_outcome import classify
from ...executors.concolic.tracing.tracer import Outcome as Ended
from ...executors.concolic.tracing.tracer import execute
from .measured import TIMEOUT_S


def _alarm(_signum, _frame):
    raise ExecTimeout("measure: time limit of one input")


def branch_totals(cov: coverage.Coverage, report: str) -> dict:
    """``coverage json``'s ``totals`` of what ``cov`` (stopped) measured so far, its JSON report
    written to ``report``; {} when it measured nothing."""
    try:
        cov.json_report(outfile=report)
    except coverage.exceptions.NoDataError:
        return {}
    return json.loads(Path(report).read_text())["totals"]


def _covered(cov: coverage.Coverage, report: str) -> int:
    cov.stop()
    try:
        return int(branch_totals(cov, report).get("covered_branches", 0))
    finally:
        cov.start()


def _new_arcs(cov: coverage.Coverage, known: dict[str, set]) -> dict[str, list]:
    cov.stop()
    data = cov.get_data()
    cov.start()
    new = {}
    for name in data.measured_files():
        arcs = set(data.arcs(name) or ()) - known.setdefault(name, set())
        if arcs:
            known[name] |= arcs
            new[name] = sorted(arcs)
    return new


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    channel = int(argv[1])

    def send(message: dict) -> None:
        os.write(channel, (json.dumps(message) + "\n").encode())

    try:
        target = PythonTarget(job["spec"], {} if job["modules"] is None else {"modules": job["modules"]})
    except Exception as exc:  # the target cannot be resolved or imported: the parent reports why
        send({"error": f"{type(exc).__name__}: {exc}"})
        return 2
    cov = coverage.Coverage(branch=True, include=sorted(target.traced_files), data_file=None)
    known = {name: {tuple(arc) for arc in arcs} for name, arcs in job["arcs"].items()}
    cov.get_data().add_arcs({name: sorted(arcs) for name, arcs in known.items()})
    limit = target.memory_limit_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    signal.signal(signal.SIGALRM, _alarm)
    times = [tuple(pair) for pair in job["times"]]
    cov.start()
    send({"ready": True})
    for index, (path, first_s) in enumerate(job["inputs"]):
        while times and times[0][1] < first_s:
            send({"point": times.pop(0)[0], "value": _covered(cov, job["report"])})
        data = Path(path).read_bytes()
        send({"start": index})
        try:
            signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
            try:
                ended = execute(target.info.function, data, None, target.options["max_frames"])
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except ExecTimeout as exc:  # the alarm came as the call returned
            ended = Ended("timeout", None, None, exc)
        outcome = classify(ended, target.traced_files, target.expected)
        kind = "ok" if outcome.kind == "ok" else "hang" if outcome.kind == "hang" else "finding"
        send({"done": index, "outcome": kind, "signature": outcome.signature if kind == "finding" else "",
              "arcs": _new_arcs(cov, known)})
    for point, _t in times:
        send({"point": point, "value": _covered(cov, job["report"])})
    send({"final": _covered(cov, job["report"])})
    cov.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
