"""A Python target's measurer: coverage.py branch arcs of its inputs, run in order of first_s in a
child process (:mod:`.python_child`) that survives nothing of the target but its results.

The parent starts the child in a session of its own with stdin, stdout and stderr on
``/dev/null``, reads its JSON lines from a pipe (no other channel), and bounds every wait: the
child's start-up and each curve value by :data:`WAIT_S`, each input by
:data:`~symcc_ulfm.compare.measure.measured.TIMEOUT_S` plus :data:`GRACE_S`. An input the child does not
finish in time (a target that ignores ``SIGALRM`` or spins in C) counts in ``hangs``; an input
the child dies on (``os._exit``, a fatal signal) is a finding ``exit:N`` or ``signal:NAME``. Either
way the child's group is killed and a new child goes on with the next input, given the arcs
measured so far (an input's own arcs are lost with the child it ended). A child that fails to
start, or dies or stalls between inputs, is a TargetError naming why.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from ...errors import TargetError
from ...executors.outcome import signal_name
from ..listing import Input
from ..study_targets import StudyTarget
from .measured import TIMEOUT_S, first_of, summary

MEASURER = "coverage.py branch arcs"
WAIT_S = 60.0  # the child's start-up (imports, the target's modules) and one curve value
GRACE_S = 10.0  # beyond an input's time limit, before the child is killed
LINE_BYTES = 1 << 24  # a line of the child's longer than this is not a line of its protocol


class _Child:
    """One child process and its result pipe."""

    def __init__(self, job: Path, scratch: Path):
        read, write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "symcc_ulfm.compare.measure.python_child", str(job), str(write)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(write,), start_new_session=True, cwd=scratch)
        finally:
            os.close(write)
        self.read = read
        self.buffer = b""

    def line(self, wait_s: float) -> dict | None:
        """The next message; None at the end of the pipe (the child is gone); TimeoutError after ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.read], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(self.read, 1 << 16)
            if not chunk or len(self.buffer) > LINE_BYTES:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            return {}  # not the child's (a target writing to a descriptor it inherited): ignored
        return message if isinstance(message, dict) else {}

    def end(self) -> int:
        """Kill the child's group; its exit status."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.read)
        return self.proc.wait()


def measure_python(target: StudyTarget, inputs: list[Input], inputs_dir: Path, times: list[float],
                   scratch: Path) -> dict:
    """:func:`~symcc_ulfm.compare.measure.measure` of a Python target (``inputs`` in order of first_s)."""
    values: dict[int, int] = {}
    arcs: dict[str, set[tuple[int, int]]] = {}
    findings: dict[str, Input] = {}
    hangs, position, final = 0, 0, None
    scratch, inputs_dir = scratch.absolute(), inputs_dir.absolute()  # the child runs in scratch
    job = scratch / "job.json"
    while final is None:
        job.write_text(json.dumps({
            "spec": target.spec, "modules": list(target.modules) or None, "report": str(scratch / "report.json"),
            "inputs": [[str(inputs_dir / item.sha256), item.first_s] for item in inputs[position:]],
            "times": sorted(([k, t] for k, t in enumerate(times) if k not in values), key=lambda pair: pair[1]),
            "arcs": {name: sorted(found) for name, found in arcs.items()}}))
        child = _Child(job, scratch)
        current, ready, hung = None, False, False
        try:
            while True:
                wait_s = TIMEOUT_S + GRACE_S if current is not None else WAIT_S
                message = child.line(wait_s)
                if message is None:
                    break
                if "error" in message and not ready:
                    raise TargetError("target", f"{target.spec}: the measurer cannot load it: {message['error']}")
                ready = ready or message.get("ready") is True
                if "start" in message:
                    current = position + int(message["start"])
                elif "done" in message:
                    for name, found in message["arcs"].items():
                        arcs.setdefault(name, set()).update(tuple(arc) for arc in found)
                    hangs += message["outcome"] == "hang"
                    if message["outcome"] == "finding":
                        first_of(findings, message["signature"], inputs[current])
                    current = None
                elif "point" in message:
                    values[int(message["point"])] = int(message["value"])
                elif "final" in message:
                    final = int(message["final"])
                    break
        except TimeoutError:
            if current is None:
                raise TargetError("target", f"{target.spec}: the measurer's child gave no answer in {WAIT_S:.0f} s "
                                            f"{'between inputs' if ready else 'at start-up'}") from None
            hangs, hung = hangs + 1, True
        finally:
            status = child.end()
        if final is not None:
            break
        if current is None:
            raise TargetError("target", f"{target.spec}: the measurer's child ended ({_death(status)}) "
                                        f"{'between inputs' if ready else 'at start-up'}")
        if not hung:
            first_of(findings, _death(status), inputs[current])
        position = current + 1
    curve = [[t, values[k]] for k, t in enumerate(times)]
    return summary(MEASURER, "arcs", curve, final, inputs, findings, hangs)


def _death(status: int) -> str:
    return f"signal:{signal_name(-status)}" if status < 0 else f"exit:{status}"
