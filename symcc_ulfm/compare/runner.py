"""``symcc-ulfm compare PROTOCOL --out DIR``: run (or resume) a comparison study.

The study directory::

    protocol.json      the normalised protocol (canonical JSON: its SHA-256 is the protocol digest)
    plan.json          the randomised run order (:func:`.design.plan`)
    provenance.json    captured when the study starts: source tree, tools, every target's identity
                       (a harness manifest's SHA-256, a Python target's source); one live check per cell
    cells/<cell>/      one cell each (:mod:`.cell_run`); cells/.attempts/<cell>-<k>/ an earlier attempt
    attempts.json      every attempt moved aside and why (interrupted, failed)
    logs/<cell>-<k>.log  what each attempt's process printed
    selection.json, analysis/compare.json   which cells count, and the statistics (:mod:`.analyze`)
    report.json        where the study stands and what this invocation did

Each cell runs as its own process (``python -m symcc_ulfm.compare.cell_run``) pinned to its own
cores: ``taskset`` on this machine, ``--parallel N`` running N cells at once on disjoint core sets
(N x the protocol's ``cores`` must fit the cores this process may use); in a Slurm allocation
with ``--slurm-steps``, each cell is a job step (``srun --exact``, the protocol's cores as
``--cpus-per-task``, bound to them by Slurm's task plugin), N at once where the allocation has the CPUs. Before each cell the
provenance is re-verified live (a change raises ``ProvenanceChanged``, exit 6, after writing the
report) and the stop rule is checked.

The re-run rule (the protocol's ``rerun.max_attempts``): a cell whose process ended without
``COMPLETE`` (killed, a lost node, the machine lost: found on ``--resume``) or whose result is
``failed`` is moved aside to ``cells/.attempts/`` and run again, recorded in ``attempts.json``;
a cell stands failed after ``max_attempts`` failed attempts (interruptions do not count: see
:meth:`Runner.settle`). Complete, ``ok`` cells are
never rerun. A signal (SIGTERM, SIGHUP, SIGINT) stops the running cells, writes the report and
exits 128 + the signal; ``--resume`` continues. After the last cell: the selection, the analysis
and the report; ``MatrixCellsFailed`` (exit 3) when cells stand failed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from ..core.canonical import canonical_json, digest
from ..errors import (
    ConfigError,
    Interrupted,
    MatrixCellsFailed,
    ProvenanceChanged,
)
from ..evidence import provenance
from ..experiment.jsonfile import DIR_MODE, read_json, write_json, write_or_match
from ..launch.job import die_with_parent, stopped_by_signals
from ..store.dirs import ensure_dir
from . import design as protocols
from .cell_run import CELLS_DIR, PLAN_FILE, PROTOCOL_FILE
from .placement import core_sets, kill_group, step_prefix, step_slots
from .study_files import (
    ATTEMPTS_DIR,
    ATTEMPTS_FILE,
    LOGS_DIR,
    PROVENANCE_FILE,
    REPORT_FILE,
    STUDY_FILES,
    complete_results,
    is_ok,
    read_attempts,
    write_analysis,
)
from .study_targets import BINARY, resolve
from .systems.spawned import pinned

REPORT_FORMAT = "symcc-ulfm-compare-report/1"
# beyond the window: a campaign's end (endpoint, oracle), stopping the peers, the measurement
CELL_EXTRA_S = 900.0
POLL_S = 0.2


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _peer_versions() -> dict[str, str]:
    """afl-fuzz's and atheris's versions (what the peer systems ran)."""
    found = {}
    afl = shutil.which("afl-fuzz")
    if afl:
        with suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([afl, "-h"], capture_output=True, text=True, timeout=10)
            line = next((x for x in (out.stdout + out.stderr).splitlines() if "afl-fuzz++" in x), "")
            found["afl-fuzz"] = re.sub(r"\x1b\[[0-9;]*m", "", line).strip() or "present"  # without its colours
    from importlib import metadata

    with suppress(metadata.PackageNotFoundError):
        found["atheris"] = metadata.version("atheris")
    return found


def target_identities(protocol: dict, harnesses: Path | None) -> dict[str, dict]:
    """What each target is, for the provenance: a harness manifest's SHA-256, a Python target's source."""
    from ..targets import resolve_target

    found = {}
    for name, spec in sorted(protocol["targets"].items()):
        target = resolve(name, spec, harnesses)
        if target.form == BINARY:
            found[name] = {"form": BINARY, "harness": str(target.harness.root),
                           "manifest_sha256": target.manifest_sha256()}
        else:
            info = resolve_target(target.spec)
            seeds = hashlib.sha256(canonical_json([s.hex() for s in target.seed_inputs()])).hexdigest()
            found[name] = {"form": target.form, "spec": target.spec, "source_sha256": info.source_sha256,
                           "seeds_sha256": seeds}
    return found


def open_study(out: Path, protocol: dict, plan: dict, harnesses: Path | None, resume: bool) -> dict:
    """Create the study directory (or check it on resume); returns the provenance record."""
    present = [name for name in STUDY_FILES if (out / name).exists()]
    if present and not resume:
        raise ConfigError("--out", f"{out} already holds a study ({', '.join(present)}); use --resume to continue "
                                   "it, or a new directory")
    if resume and PROTOCOL_FILE not in present:
        raise ConfigError("--resume", f"{out} holds no study to resume")
    identities = target_identities(protocol, harnesses)  # a missing harness: exit 2 before anything is written
    ensure_dir(out, DIR_MODE)
    write_or_match(out / PROTOCOL_FILE, canonical_json(protocol), "protocol", "study")
    write_or_match(out / PLAN_FILE, canonical_json(plan), PLAN_FILE, "study")
    path = out / PROVENANCE_FILE
    if path.exists():
        record = read_json(path)
        if record.get("targets") != identities:
            raise ProvenanceChanged(f"{out}: the targets are not the ones this study started with: "
                                    f"{record.get('targets')} -> {identities}")
    elif (out / CELLS_DIR).exists():
        raise ConfigError(PROVENANCE_FILE, f"{path} is missing but cells exist: their provenance cannot be shown")
    else:
        record = provenance.capture("concolic")
        record.update(protocol_sha256=plan["protocol_sha256"], targets=identities, peers=_peer_versions())
        write_json(path, record)
    if record.get("protocol_sha256") != plan["protocol_sha256"]:
        raise ConfigError(PROVENANCE_FILE, "recorded for another protocol")
    ensure_dir(out / CELLS_DIR, DIR_MODE)
    ensure_dir(out / LOGS_DIR, DIR_MODE)
    return record


class Runner:
    """The scheduling of one invocation: which cells run, on which cores, what is moved aside."""

    def __init__(self, out: Path, protocol: dict, plan: dict, record: dict, harnesses: Path | None,
                 slots: list[list[int]], echo: Callable[[str], None], steps: bool = False):
        self.out, self.protocol, self.plan, self.record = out, protocol, plan, record
        self.harnesses, self.echo = harnesses, echo
        self.attempts = read_attempts(out)
        self.done = complete_results(out, plan)
        self.actions = {"started_at": _utc(), "cells_run": [], "cells_skipped": sorted(
            name for name, result in self.done.items() if is_ok(result)), "moved_aside": []}
        self.slots, self.steps = slots, steps
        self.interrupted: dict[str, int] = {}  # this invocation's interrupted attempts, by cell
        self.running: dict[int, tuple[subprocess.Popen, str, float]] = {}

    def attempts_of(self, name: str) -> int:
        return sum(1 for a in self.attempts if a["cell"] == name)

    def failures_of(self, name: str) -> int:
        return sum(1 for a in self.attempts if a["cell"] == name and a["reason"].startswith("failed"))

    def move_aside(self, name: str, reason: str) -> None:
        cell_dir = self.out / CELLS_DIR / name
        aside = ensure_dir(self.out / CELLS_DIR / ATTEMPTS_DIR, DIR_MODE)
        attempt = self.attempts_of(name) + 1
        target = aside / f"{name}-{attempt}"
        os.rename(cell_dir, target)
        entry = {"cell": name, "attempt": attempt, "reason": reason,
                 "moved_to": target.relative_to(self.out).as_posix(), "at": _utc()}
        self.attempts.append(entry)
        write_json(self.out / ATTEMPTS_FILE, self.attempts)
        self.actions["moved_aside"].append(entry)
        self.echo(f"cell {name} attempt {attempt}: {reason}; moved aside to {entry['moved_to']}")

    def settle(self, name: str) -> bool:
        """Look at a cell's directory: True when it is to run (again); moves an old attempt aside.

        A failed attempt counts towards the protocol's ``max_attempts``; an interrupted one (the
        cell's process or the whole study lost) does not, but one invocation runs a cell again
        after at most ``max_attempts`` interruptions (a cell that kills its process every time
        then stands incomplete until the next ``--resume``)."""
        cell_dir = self.out / CELLS_DIR / name
        limit = self.protocol["rerun"]["max_attempts"]
        if not os.path.lexists(cell_dir):
            return self.failures_of(name) < limit
        result = self.done.get(name)
        if is_ok(result):
            return False
        if name in self.done:
            if self.failures_of(name) + 1 >= limit:
                return False  # its last attempt stands
            why = "; ".join(result.get("problems", [])) if isinstance(result, dict) else "unreadable result.json"
            reason = f"failed: {why}"
        else:
            if self.interrupted.get(name, 0) >= limit:
                return False
            self.interrupted[name] = self.interrupted.get(name, 0) + 1
            reason = "interrupted: no COMPLETE (the cell's process was killed or the study was lost)"
        self.move_aside(name, reason)
        self.done.pop(name, None)
        return True

    def stop_reason(self) -> str | None:
        rule = self.protocol["stop_rule"]
        seconds = sum(r.get("wall_s", 0) for r in self.done.values() if isinstance(r, dict))
        if "max_seconds" in rule and seconds >= rule["max_seconds"]:
            return f"stop_rule max_seconds={rule['max_seconds']} reached: the complete cells took {seconds:.1f} s"
        return None

    def start(self, slot: int, name: str) -> None:
        provenance.verify_live(self.record, unit=f"cell {name}")
        identities = target_identities(self.protocol, self.harnesses)
        if identities != self.record["targets"]:
            raise ProvenanceChanged(f"refusing to start cell {name}: the targets changed since the study started")
        write_json(self.out / PROVENANCE_FILE, self.record)
        attempt = self.attempts_of(name) + 1
        command = [sys.executable, "-m", "symcc_ulfm.compare.cell_run", str(self.out), name, "--attempt", str(attempt)]
        if self.harnesses is not None:
            command += ["--harnesses", str(self.harnesses)]
        if self.steps:
            cores = "a job step's"
            prefix = step_prefix(self.protocol["cores"], name)
        else:
            cores = ",".join(map(str, self.slots[slot]))
            prefix = pinned(self.slots[slot])
        log = open(self.out / LOGS_DIR / f"{name}-{attempt}.log", "wb")  # noqa: SIM115 - the child keeps it
        try:
            process = subprocess.Popen([*prefix, *command], stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       preexec_fn=die_with_parent)  # a cell dies with its study runner
        finally:
            log.close()
        planned = next(c for c in self.plan["cells"] if c["cell"] == name)
        self.echo(f"[{planned['order'] + 1}/{len(self.plan['cells'])}] cell {name} (attempt {attempt}) on cores "
                  f"{cores}")
        self.running[slot] = (process, name, time.monotonic())
        self.actions["cells_run"].append(name)

    def reap(self) -> list[str]:
        """Cells whose process ended (or overran and was killed): read back; returns those to run again."""
        again = []
        limit = float(self.protocol["window_s"]) + CELL_EXTRA_S
        for slot, (process, name, started) in list(self.running.items()):
            if process.poll() is None and time.monotonic() - started > limit:
                self.echo(f"cell {name}: still running {limit:.0f} s after its start; killed")
                kill_group(process)
            if process.poll() is None:
                continue
            del self.running[slot]
            done = complete_results(self.out, {"cells": [{"cell": name}]})
            self.done.update(done)
            result = done.get(name)
            if is_ok(result):
                self.echo(f"  {name}: ok, {result['measure']['final']} {result['measure']['unit']}")
            else:
                self.echo(f"  {name}: " + ("; ".join(result.get("problems", [])) if isinstance(result, dict)
                                           else f"no result (exit {process.returncode})"))
                if self.settle(name):
                    again.append(name)
        return again

    def stop_all(self) -> None:
        for process, _, _ in self.running.values():
            kill_group(process)
        self.running.clear()

    def run(self) -> str | None:
        queue = [c["cell"] for c in self.plan["cells"] if self.settle(c["cell"])]
        stop = None
        while queue or self.running:
            for slot in range(len(self.slots)):
                if slot in self.running or not queue:
                    continue
                stop = self.stop_reason()
                if stop:
                    queue.clear()
                    break
                self.start(slot, queue.pop(0))
            time.sleep(POLL_S)
            queue = self.reap() + queue
        return stop


def build_report(out: Path, runner: Runner, stop: str | None, interrupted: str | None) -> dict:
    planned = [c["cell"] for c in runner.plan["cells"]]
    done = complete_results(out, runner.plan)
    failed = [name for name in planned if name in done and not is_ok(done[name])]
    not_run = [name for name in planned if name not in done]
    report = {
        "format": REPORT_FORMAT, "protocol_sha256": runner.plan["protocol_sha256"], "plan_sha256": digest(runner.plan),
        "source_tree_sha256": runner.record["source_tree"]["sha256"], "cells_planned": len(planned),
        "cells_complete": [n for n in planned if n in done], "cells_failed": failed, "cells_not_run": not_run,
        "attempts_moved_aside": len(runner.attempts), **runner.actions, "finished_at": _utc(),
        "complete": not not_run, "stopped_early": stop is not None, "stop_reason": stop, "interrupted": interrupted,
        "parallel": len(runner.slots), "core_sets": runner.slots,
    }
    report["summary"] = (f"{len(done)}/{len(planned)} cells complete ({len(runner.actions['cells_run'])} attempts run "
                         f"now, {len(runner.actions['cells_skipped'])} already complete), {len(failed)} failed, "
                         f"{len(runner.attempts)} attempts moved aside" + (f"; stopped early: {stop}" if stop else "")
                         + (f"; interrupted: {interrupted}" if interrupted else ""))
    write_json(out / REPORT_FILE, report)
    return report


def run_study(protocol_path: str | Path, out_dir: str | Path, harnesses: str | Path | None = None,
              resume: bool = False, parallel: int = 1, echo: Callable[[str], None] | None = None,
              slurm_steps: bool = False) -> dict:
    """Run (or continue) the study; returns the report (see the module docstring)."""
    echo = echo or _stderr
    protocol = protocols.load(protocol_path)
    plan = protocols.plan(protocol)
    out = Path(out_dir).absolute()
    harnesses = Path(harnesses).absolute() if harnesses else None
    slots = step_slots(protocol["cores"], parallel, dict(os.environ)) if slurm_steps else \
        core_sets(protocol["cores"], parallel)
    record = open_study(out, protocol, plan, harnesses, resume)
    runner = Runner(out, protocol, plan, record, harnesses, slots, echo, slurm_steps)
    echo(f"compare {out}: protocol {plan['protocol_sha256'][:12]}, {len(plan['cells'])} cells planned, "
         f"{len(runner.actions['cells_skipped'])} already complete, {len(runner.slots)} at once")
    stop = None
    try:
        with stopped_by_signals():
            stop = runner.run()
    except (Interrupted, KeyboardInterrupt, ProvenanceChanged) as exc:
        runner.stop_all()
        build_report(out, runner, None, f"{type(exc).__name__}: {exc}")
        raise
    write_analysis(out, protocol, plan)
    report = build_report(out, runner, stop, None)
    if report["cells_failed"]:
        raise MatrixCellsFailed(f"{len(report['cells_failed'])} cell(s) stand failed after "
                                f"{protocol['rerun']['max_attempts']} attempts ({', '.join(report['cells_failed'])}); "
                                f"report: {out / REPORT_FILE}")
    return report
