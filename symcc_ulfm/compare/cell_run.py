"""One cell of a comparison study: one system on one target for one window, then the one measurer.

``python -m symcc_ulfm.compare.cell_run STUDY CELL [--harnesses DIR]`` runs the planned cell ``CELL``
of the study directory ``STUDY`` on the cores this process may run on (the study runner pins it:
``taskset``, or a Slurm job step), into ``STUDY/cells/CELL/`` (which must not exist yet)::

    seeds/          the target's seed inputs, one file each (every system starts from them)
    system/         what the system wrote (its AFL++ output, atheris corpus, campaign state, logs)
    listing.json    every file the system held, first seen when (:mod:`.listing`)
    inputs/<sha256> the distinct inputs (seeds, corpus, findings): what the measurer ran, kept
    result.json     the cell's record (format ``symcc-ulfm-compare-cell/1``, below)
    COMPLETE        empty, written last: a cell directory without it never counts

The window starts when the system is started and ends ``window_s`` later, whatever the system
(a campaign's start-up is its own cost), or earlier when every process of the system has ended
(a campaign that stops by count); the listing taken then is the system's final corpus.
``result.json``: ``cell, trial, target, system, attempt, seed, status ("ok" | "failed"), problems,
window_s, wall_s, started_at, cores, placement`` (host, Slurm job and step), ``load_before,
load_after, cpu_s`` (CPU seconds of the system's processes), ``system`` (what the system reports: commands, exit statuses, a campaign's
verdict), ``measure`` (:func:`symcc_ulfm.compare.measure.measure`). A cell is ``failed`` when the
system reports a problem (an instance exited early, a campaign whose oracle did not pass) or the
measurement failed; the study's re-run rule then decides (:mod:`.runner`).

Exit status: 0 when ``result.json`` and ``COMPLETE`` were written (whatever the status), else the
error's exit code (the cell directory is then incomplete, and the runner moves it aside).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import SymccUlfmError
from ..experiment.jsonfile import DIR_MODE, FILE_MODE, read_json, write_json
from ..store.atomic import write_new
from ..store.dirs import ensure_dir
from . import design as protocols
from . import systems
from .analyze import CELL_FORMAT
from .listing import Sampler, keep_inputs
from .measure import measure
from .study_targets import resolve

CELLS_DIR = "cells"
RESULT_FILE = "result.json"
COMPLETE_MARKER = "COMPLETE"
PROTOCOL_FILE = "protocol.json"
PLAN_FILE = "plan.json"
SEEDS_DIR = "seeds"
SYSTEM_DIR = "system"
MEASURE_SCRATCH = ".measure"
MAX_LISTING_INTERVAL_S = 1.0
POLL_S = 0.2


def listing_interval(window_s: float) -> float:
    """How often a cell lists the system's files: every second, more often in short windows."""
    return min(MAX_LISTING_INTERVAL_S, window_s / 20)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def placed_on(env: dict) -> dict[str, str | None]:
    """Where the cell runs: the host, and in a Slurm job step its job and step. A step's Slurm
    variables are then taken out of this process's environment: the system runs on the step's
    cores only (``launch`` must not read the allocation and spread its ranks over the job's nodes)."""
    found = {"host": platform.node(), "slurm_job": env.get("SLURM_JOB_ID"), "slurm_step": env.get("SLURM_STEP_ID")}
    if found["slurm_step"] is not None:
        for name in [n for n in env if n.startswith(("SLURM_", "SLURMD_", "PMI_", "PMIX_"))]:
            del env[name]
    return found


def wait_window(processes: list, until: float) -> None:
    """Until the window ends, or earlier when every process of the system has ended (a campaign that
    stops by count, an instance that died: its notes say so); a system without processes holds its seeds."""
    while processes and time.monotonic() < until and any(p.poll() is None for p in processes):
        time.sleep(min(POLL_S, max(0.0, until - time.monotonic())))


def write_seeds(seeds: list[bytes], folder: Path) -> Path:
    ensure_dir(folder, DIR_MODE)
    for k, data in enumerate(seeds):
        write_new(folder / f"seed-{k:04d}", data, FILE_MODE)
    return folder


def run_cell(study: Path, name: str, harnesses: Path | None, attempt: int) -> dict[str, Any]:
    """Run the planned cell ``name`` into ``study/cells/name`` and return its ``result.json``."""
    protocol = protocols.validate(read_json(study / PROTOCOL_FILE))
    planned = {c["cell"]: c for c in read_json(study / PLAN_FILE)["cells"]}.get(name)
    if planned is None:
        raise protocols.CompareProtocolError("cell", f"{name!r} is not a cell of {study / PLAN_FILE}")
    cell_dir = study / CELLS_DIR / name
    ensure_dir(study / CELLS_DIR, DIR_MODE)
    os.mkdir(cell_dir, DIR_MODE)  # FileExistsError: the runner moves an old attempt aside first
    target = resolve(planned["target"], protocol["targets"][planned["target"]], harnesses)
    system = protocol["systems"][planned["system"]]
    window = float(protocol["window_s"])
    cores = sorted(os.sched_getaffinity(0))
    placement = placed_on(os.environ)
    seeds = target.seed_inputs()
    seeds_dir = write_seeds(seeds, cell_dir / SEEDS_DIR)
    load_before = os.getloadavg()[0]
    cpu_before = _children_cpu()
    started_at = time.time()
    started = time.monotonic()
    running = systems.start(system, target, ensure_dir(cell_dir / SYSTEM_DIR, DIR_MODE), seeds_dir, window, cores,
                            planned["seed"])
    sampler = Sampler(running.corpus, running.findings, started, listing_interval(window))
    sampler.start()
    try:
        wait_window(running.processes, started + window)
    finally:
        sampler.stop()
        notes = running.finish()
    wall = time.monotonic() - started
    load_after = os.getloadavg()[0]
    problems = [f"system: {p}" for p in notes.get("problems", [])]
    inputs = keep_inputs(sampler.first_seen, seeds, cell_dir)
    scratch = ensure_dir(cell_dir / MEASURE_SCRATCH, DIR_MODE)
    try:
        measured = measure(target, inputs, cell_dir / "inputs", protocols.curve_times(protocol), scratch,
                           jobs=len(cores))
    except SymccUlfmError as exc:
        measured = None
        problems.append(f"measure: {exc}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "format": CELL_FORMAT, "cell": name, "trial": planned["trial"], "target": planned["target"],
        "system": planned["system"], "attempt": attempt, "seed": planned["seed"],
        "status": "failed" if problems else "ok", "problems": problems,
        "window_s": protocol["window_s"], "wall_s": round(wall, 3),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started_at)),
        "cores": cores, "placement": placement, "load_before": round(load_before, 2), "load_after": round(load_after, 2),
        "cpu_s": round(_children_cpu() - cpu_before, 2),
        "system_notes": notes, "measure": measured,
    }
    write_json(cell_dir / RESULT_FILE, result)
    write_new(cell_dir / COMPLETE_MARKER, b"", FILE_MODE)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcc_ulfm.compare.cell_run")
    parser.add_argument("study")
    parser.add_argument("cell")
    parser.add_argument("--harnesses")
    parser.add_argument("--attempt", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        result = run_cell(Path(args.study).absolute(), args.cell,
                          Path(args.harnesses).absolute() if args.harnesses else None, args.attempt)
    except SymccUlfmError as exc:
        print(f"symcc-ulfm compare cell {args.cell}: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"{args.cell}: {result['status']}" + "".join(f"\n  {p}" for p in result["problems"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
