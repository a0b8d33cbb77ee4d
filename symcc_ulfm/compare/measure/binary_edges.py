"""A binary target's measurer: edges of its AFL++ build under ``afl-showmap``, findings from one
replay of every input on its sanitizer build.

Edges (:func:`edge_sets`): one ``afl-showmap -i DIR -o DIR`` per chunk of inputs (one fork server,
one text map per input: ``edge:count`` lines; AFL++ 4.x), the build run with the harness's
``args`` (``@@``: afl-showmap gives each input its own file; else on stdin). afl-showmap skips
an empty file, and an input whose map is missing (afl-showmap ended early) is mapped alone
(``afl-showmap -o FILE``). The union of the sets over a corpus is what ``afl-showmap -C`` counts.
The curve's value at ``t`` is the size of the union over the inputs first seen at or before ``t``.

Findings (:func:`replay`): every input, whatever its role (a crashing input may sit in a queue),
runs once on the sanitizer build (else the AFL build) as the ``native`` executor runs it
(:func:`~symcc_ulfm.executors.binary.runs.run_input`: its own session, its group killed after
:data:`~symcc_ulfm.compare.measure.measured.TIMEOUT_S`, stdout discarded, every file it writes, stderr
included, capped at :data:`FILE_LIMIT_BYTES`: a run that writes more ends with SIGXFSZ, a finding
``signal:SIGXFSZ``). A sanitizer report's signature is the project's
crash state (:func:`~symcc_ulfm.executors.outcome.sanitizer_state`, what every binary kind reports),
a death by a signal without a report ``signal:NAME``; a time-out counts in ``hangs``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...executors.binary.afl_coverage import PER_RUN_SLACK_S, STARTUP_S, TERM_GRACE_S, which_showmap
from ...executors.binary.runs import clean_env, remove_tree, run_binary, run_input
from ...executors.outcome import sanitizer_summary
from ..listing import Input
from ..study_targets import StudyTarget
from .measured import TIMEOUT_S, first_of, summary

MEASURER = "afl-showmap edges"
CHUNK = 512  # inputs per afl-showmap run (their files and maps in the scratch directory at once)
FILE_LIMIT_BYTES = 64 << 20
DEVNULL = Path(os.devnull)


def measure_binary(target: StudyTarget, inputs: list[Input], inputs_dir: Path, times: list[float], scratch: Path,
                   jobs: int) -> dict:
    """:func:`~symcc_ulfm.compare.measure.measure` of a harness target (``inputs`` in order of first_s)."""
    harness = target.harness
    edges: dict[str, frozenset[int]] = {}
    for start in range(0, len(inputs), CHUNK):
        chunk = {item.sha256: (inputs_dir / item.sha256).read_bytes() for item in inputs[start:start + CHUNK]}
        edges.update(edge_sets(harness.path("afl"), chunk, scratch, harness.args))
    judge = harness.path("sanitizer" if "sanitizer" in harness.builds else "afl")
    findings: dict[str, Input] = {}
    hangs = 0
    replays = replay(judge, harness.args, inputs, inputs_dir, scratch, jobs)
    for item, (kind, signature) in zip(inputs, replays, strict=True):
        hangs += kind == "hang"
        if kind == "crash":
            first_of(findings, signature, item)
    curve = [[t, len(set().union(*(edges[item.sha256] for item in inputs if item.first_s <= t)))] for t in times]
    final = len(set().union(*edges.values())) if edges else 0
    return summary(MEASURER, "edges", curve, final, inputs, findings, hangs)


def edge_sets(afl: Path, inputs: dict[str, bytes], scratch: Path, args: Sequence[str] = (),
              timeout_s: float = TIMEOUT_S) -> dict[str, frozenset[int]]:
    """The edge ids each input (name -> content) covers on the AFL build ``afl`` run with ``args``."""
    if not inputs:
        return {}
    work = Path(tempfile.mkdtemp(prefix="showmap-", dir=scratch))
    try:
        (work / "in").mkdir()
        names = {}
        for index, (name, data) in enumerate(inputs.items()):
            names[name] = f"{index:06d}"
            (work / "in" / names[name]).write_bytes(data)
        ms = str(max(1, round(timeout_s * 1000)))
        run_binary("afl-showmap", [which_showmap(), "-q", "-m", "none", "-t", ms, "-i", str(work / "in"),
                                   "-o", str(work / "maps"), "--", str(afl), *args],
                   stdin=DEVNULL, stderr=work / "stderr", env=clean_env(), cwd=work,
                   timeout_s=STARTUP_S + len(inputs) * (timeout_s + PER_RUN_SLACK_S), adopt=False,
                   term_grace_s=TERM_GRACE_S, file_limit_bytes=FILE_LIMIT_BYTES)
        found = {}
        for name in inputs:
            path = work / "maps" / names[name]
            if not path.is_file():
                path = _map_alone(afl, args, work / "in" / names[name], work, ms, timeout_s)
            found[name] = _edges(path)
        return found
    finally:
        remove_tree(work)


def _map_alone(afl: Path, args: Sequence[str], input_path: Path, work: Path, ms: str, timeout_s: float) -> Path:
    """The map of one input (an empty one, or one afl-showmap's directory run left without a map)."""
    out = work / "map-alone"
    out.unlink(missing_ok=True)
    argv = [arg.replace("@@", str(input_path)) for arg in args]
    run_binary("afl-showmap", [which_showmap(), "-q", "-m", "none", "-t", ms, "-o", str(out), "--", str(afl), *argv],
               stdin=input_path, stderr=work / "stderr-alone", env=clean_env(), cwd=work,
               timeout_s=STARTUP_S + timeout_s, adopt=False, term_grace_s=TERM_GRACE_S,
               file_limit_bytes=FILE_LIMIT_BYTES)
    return out


def _edges(path: Path) -> frozenset[int]:
    """The edge ids of an afl-showmap text map (``edge:count`` lines); none when it wrote no map."""
    try:
        lines = path.read_text().split()
    except OSError:
        return frozenset()
    return frozenset(int(line.split(":", 1)[0]) for line in lines)


def replay(binary: Path, args: Sequence[str], inputs: list[Input], inputs_dir: Path, scratch: Path,
           jobs: int) -> list[tuple[str, str]]:
    """Each input's ``(kind, signature)`` on ``binary``: ``ok``, ``hang`` or ``crash`` with its signature."""
    root = scratch / "replay"
    root.mkdir()

    def one(index: int) -> tuple[str, str]:
        work = root / str(index)
        work.mkdir()
        try:
            input_path = work / "input"
            input_path.write_bytes((inputs_dir / inputs[index].sha256).read_bytes())
            outcome, stderr = run_input("sanitizer", str(binary), list(args), input_path, work, "stderr",
                                        env=clean_env(), timeout_s=TIMEOUT_S, adopt=False,
                                        file_limit_bytes=FILE_LIMIT_BYTES)
        finally:
            remove_tree(work)
        if outcome.kind != "crash":
            return outcome.kind, ""
        return "crash", outcome.signature if sanitizer_summary(stderr) else f"signal:{outcome.detail}"

    try:
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            return list(pool.map(one, range(len(inputs))))
    finally:
        remove_tree(root)
