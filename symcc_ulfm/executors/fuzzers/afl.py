"""``afl``: AFL++'s ``afl-fuzz`` on a binary target's AFL build, as a fuzzer worker kind.

The worker's fuzzer is one ``afl-fuzz`` process that runs for as long as the worker keeps this
kind (across slices and generations), started at the first slice in the worker's scratch
directory: ``-i IN -o SYNC -M worker`` (or ``-S worker``) on the AFL twin of the campaign's target
(the executor's ``afl_binary``, with its ``args``; ``@@`` is AFL's own), with the flags of its
variant (below). Each slice
(``core.slices``) waits for the slice's seconds and returns what afl-fuzz kept meanwhile:
its own new ``queue/`` entries (not those it imported) and its new ``crashes/`` and ``hangs/``; the
worker measures them on the same twin (``afl-showmap``, ``executors.binary.afl_coverage``; a failing
input's outcome from the campaign's ``sanitizer_binary`` when it has one), so their coverage ids
and findings are those of every other worker. The executor beside it is ``symcc`` (a hybrid
campaign) or ``native`` (a campaign of AFL++ builds alone, ``executors.native``). A slice's
``executions`` are afl-fuzz's own since the slice before (its ``execs_done``; see
:meth:`AflFuzzer._executions`), its notes the map size (``map_size``) that afl-fuzz fuzzes with,
and in the slice that started afl-fuzz its ``settings`` (position, variant, command line), which
the worker logs.

Each afl-fuzz of a campaign runs the variant of its position among the campaign's
(``core.afl_diversity``, AFL++'s advice for many instances; the runtime gives the position as the
own option ``position``): the first a main instance with CmpLog ``-l 2AT``, the others secondaries
with their own power schedules, MOpt on some, CmpLog on one more, no trimming on half.
``diversity: "off"`` runs every afl-fuzz as the same main instance without CmpLog (the plain
``-M`` arrangement). CmpLog needs the CmpLog build (``cmplog_binary``, afl-fuzz's ``-c``), which
runs confined like the main build (``.afl_command``); the identity pins its SHA-256 and names the
diversity, so a position's flags follow from the identity and the layout.

What the other workers found reaches afl-fuzz through its own import, as a foreign instance's
queue in its sync directory (``.afl_sync``). With ``AFL_IMPORT_FIRST`` and ``AFL_SYNC_TIME=1`` it
imports them at start and then, as ``-M``, every 30 s (half the sync time: AFL++ 4.04c's rule for
a main instance; its sync time is in whole minutes), as ``-S`` every 60 s.

afl-fuzz writes its directory; the target may not. afl-fuzz starts the target through
:mod:`..sandbox.landlock` (``python -I -S landlock.py --rw afl-target -- BINARY ARGS``), which
confines it before it executes the binary: the target (and all it starts) may write only beneath
``afl-target/`` in the worker's scratch (its ``TMPDIR``) and ``/dev``, by any path, and cannot ptrace or
reach through ``/proc`` the processes outside it; the worker's own runs of the twin (its
measurements) are confined the same way to their run directories. So what is collected from
``queue/``, ``crashes/`` and ``hangs/`` was written by afl-fuzz. Where the kernel has no Landlock
the kind is refused (CapabilityError). afl-fuzz is told what its own check of the binary would
have found (it cannot check a launcher): ``AFL_SKIP_BIN_CHECK``, the larger of the main and CmpLog
builds' map sizes (``AFL_DUMP_MAP_SIZE``, from a confined run: CmpLog instrumentation adds edges,
and afl-fuzz aborts on a build whose map exceeds ``AFL_MAP_SIZE``) as ``AFL_MAP_SIZE``, and
persistent and deferred fork-server modes by the binary's signatures, as AFL++'s ``check_binary``
sets them (``.afl_builds``).

The fuzzer is hosted in the worker's sandbox child like the symcc executor (``hosted``), a
child subreaper (``reaps_own_orphans``): afl-fuzz is that child's child, in a session of its own with
``PR_SET_PDEATHSIG``, so it dies with the child; a child that died is forked again and starts
afl-fuzz again, resuming its directory (``AFL_AUTORESUME``), as it does for an afl-fuzz that exited.
Its own
options (``executor_options.afl``): ``afl_fuzz`` (default: on PATH), ``dictionary`` (a file in AFL's
``-x`` format; ``launch --dictionary`` gives every kind that takes one its tokens instead, written
back as ``afl-fuzz/dictionary.txt`` for ``-x``; every variant takes it), ``extra_args`` (more
afl-fuzz flags, e.g. ``["-p", "fast"]``, which win over the variant's; no ``-c``: the kind's),
``diversity`` (``guide``, the default, or ``off``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ...core.slices import is_descriptor
from ...errors import CapabilityError, TargetError
from ..base import Fuzzer, Measurement, RunResult
from ..binary.afl_coverage import AflTwin, check_instrumented, which_showmap
from ..binary.options import DEFAULTS as SYMCC_DEFAULTS
from ..binary.options import parse_options
from ..binary.runs import Scratch, clean_env
from ..dictionary import afl_text, tokens_of
from ..sandbox import landlock
from ..sandbox.frames import MAX_EXECUTIONS
from ..sandbox.reaper import is_subreaper, sweep_leftovers
from .afl_builds import START_S, cmplog_sha256, dump_map_size, modes_of, read_file
from .afl_command import check_diversity, check_extra, check_position, flags, variant_of
from .afl_files import count, execs_done, plotted_execs, stats_of
from .afl_sync import INSTANCE, SyncDirectory

VERSION = 2
OWN = {"afl_fuzz": None, "dictionary": None, "extra_args": [], "diversity": "guide", "position": None}
TARGET_DIR = "afl-target"  # beside afl-fuzz's directory: the only one its target may write
FORKSRV_INIT_MS = 10_000  # the confined start of the fork server: a Python start-up before the binary
PR_SET_PDEATHSIG = 1
# afl-fuzz's environment wherever it runs (this kind, a study's afl system, the benchmarks): no UI,
# no CPU binding of its own (the caller pins it), a fast calibration
AFL_ENV = {
    "AFL_NO_UI": "1", "AFL_SKIP_CPUFREQ": "1", "AFL_NO_AFFINITY": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",
    "AFL_NO_WARN_INSTABILITY": "1", "AFL_FAST_CAL": "1", "AFL_QUIET": "1",
}
# instances that sync: import at start, then every 30 s as a main instance (AFL++'s sync time is in
# whole minutes; by default it syncs every tens of minutes)
AFL_SYNC_ENV = {"AFL_SYNC_TIME": "1", "AFL_IMPORT_FIRST": "1"}
_ENV = {**AFL_ENV, **AFL_SYNC_ENV, "AFL_AUTORESUME": "1", "AFL_SKIP_BIN_CHECK": "1"}


class AflFuzzer(Fuzzer):
    name = "afl"
    target_kind = "binary"
    hosted = True  # in the sandbox child, like the symcc executor
    measures_in_batches = True  # one afl-showmap per chunk
    reaps_own_orphans = True
    uses_dictionary = True
    keeps_running_between_slices = True  # afl-fuzz
    varies_by_position = True  # core.afl_diversity

    def __init__(self, target: str | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        own = {k: options.pop(k) for k in list(options) if k in OWN}
        symcc = parse_options({k: v for k, v in options.items() if k in SYMCC_DEFAULTS})
        if symcc.afl_binary is None:
            raise TargetError("executor_options.afl_binary", "the afl worker kind fuzzes the target's AFL build: "
                                                             "set afl_binary (built with afl-cc)")
        reason = landlock.unavailable()
        if reason is not None:
            raise CapabilityError(f"the afl kind confines the writes of its target with Landlock: {reason}")
        self._binary = os.path.abspath(symcc.afl_binary)
        data = read_file("executor_options.afl_binary", self._binary)
        check_instrumented(symcc.afl_binary, data)
        self._modes = modes_of(data)
        self._binary_sha256 = hashlib.sha256(data).hexdigest()
        self._cmplog: str | None = None  # the CmpLog build (afl-fuzz's -c, through the launcher)
        self._cmplog_sha256: dict[str, str] = {}
        if symcc.cmplog_binary is not None:
            self._cmplog = os.path.abspath(symcc.cmplog_binary)
            self._cmplog_sha256 = {"cmplog_sha256": cmplog_sha256(self._cmplog, self._modes)}
        self._args = symcc.args
        self._timeout_ms = max(5, round(symcc.measure_timeout_s * 1000))
        fuzz = own.get("afl_fuzz") or shutil.which("afl-fuzz")
        if not fuzz:
            raise TargetError("executor_options.afl.afl_fuzz", "afl-fuzz not on PATH: install AFL++ (apt-get install afl++)")
        self._afl_fuzz = os.path.abspath(fuzz)
        self._afl_fuzz_sha256 = hashlib.sha256(read_file("executor_options.afl.afl_fuzz", self._afl_fuzz)).hexdigest()
        dictionary = own.get("dictionary")
        self._dictionary: str | None = None  # a file of AFL's -x format
        self._tokens: tuple[bytes, ...] = ()  # or the tokens of launch --dictionary, written as one at start
        self._dictionary_sha256 = None
        if isinstance(dictionary, str):
            self._dictionary = os.path.abspath(dictionary)
            self._dictionary_sha256 = hashlib.sha256(read_file("executor_options.afl.dictionary",
                                                               self._dictionary)).hexdigest()
        elif dictionary is not None:
            self._tokens = tokens_of(dictionary)
            self._dictionary_sha256 = dictionary["sha256"]
        self._extra = check_extra(own.get("extra_args", OWN["extra_args"]))
        self._diversity = check_diversity(own.get("diversity", OWN["diversity"]))
        self._position = check_position(own.get("position"))
        self._variant = variant_of(self._diversity, self._position, self._cmplog is not None)
        self._sanitizer: dict[str, str] = {}  # the build that decides a failing input's outcome, if any
        judge = None
        if symcc.sanitizer_binary is not None:
            judge = os.path.abspath(symcc.sanitizer_binary)
            sanitizer_data = read_file("executor_options.sanitizer_binary", judge)
            self._sanitizer = {"sanitizer_sha256": hashlib.sha256(sanitizer_data).hexdigest()}
        self._twin = AflTwin(self._binary, symcc.afl_showmap or which_showmap(), self._args, symcc.measure_timeout_s,
                             confined=True, judge=judge)
        self._map_size: str | None = None  # AFL_MAP_SIZE, from the builds at the first start
        self._scratch: Scratch | None = None
        self._adopt = is_subreaper()
        self._process: subprocess.Popen | None = None
        self._sync = SyncDirectory()  # what goes into afl-fuzz and comes out of it
        self._execs = 0  # afl-fuzz's count of executions (execs_done) up to which the slices returned them
        self._started_at = 0.0  # the wall time the running afl-fuzz was started
        self.starts = 0
        self._settings: dict[str, Any] = {}  # how the running afl-fuzz was started: its variant and argv

    # -- the Fuzzer interface ------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"executor": self.name, "version": VERSION, "afl_binary_sha256": self._binary_sha256,
                "args": self._args, "timeout_ms": self._timeout_ms, "afl_fuzz_sha256": self._afl_fuzz_sha256,
                "dictionary_sha256": self._dictionary_sha256, "extra_args": self._extra, "diversity": self._diversity,
                **self._cmplog_sha256, **self._sanitizer}

    def offer(self, inputs: list[bytes]) -> None:
        self._sync.offer(inputs)
        if self._process is not None:
            self._sync.flush(self.root / "sync")

    def fuzz(self, descriptor: dict[str, Any]) -> RunResult:
        if not is_descriptor(descriptor):
            raise TargetError("worker_kinds", "the afl kind runs slices: its work must carry a slice descriptor")
        started = time.monotonic()
        notes: dict[str, Any] = {}
        if self._process is None or self._process.poll() is not None:
            notes["started"] = self._start()
            notes["settings"] = self._settings  # what the worker logs (Event.FUZZER_STARTED)
        end = started + float(descriptor["seconds"])
        while time.monotonic() < end and self._process.poll() is None:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
        if self._process.poll() is not None:
            notes["afl_fuzz_exit"] = self._process.returncode
        kept, counts = self._sync.collect(self.root / "sync")
        notes.update(counts)
        map_size = int(self._map_size) if self._map_size else self._twin.map_size
        if map_size:
            notes["map_size"] = map_size
        return RunResult(candidates=kept, executions=self._executions(), seconds=time.monotonic() - started,
                         notes=notes)

    def measure(self, data: bytes) -> Measurement:
        return self.measure_many([data])[0]

    def measure_many(self, inputs: list[bytes], budget_s: float | None = None) -> list[Measurement | None]:
        """On the twin, with afl-showmap; afl-fuzz, a child of this process, goes on fuzzing."""
        running = self._process is not None and self._process.poll() is None
        return self._twin.measure_many(inputs, budget_s, self._work(), adopt=self._adopt,
                                       spare=frozenset([self._process.pid]) if running else frozenset())

    @property
    def execution_limit_s(self) -> float:
        return self._timeout_ms / 1000 * 3 + 1.0

    @property
    def run_limit_s(self) -> float:
        """Beyond the slice's own seconds: afl-fuzz's start, then reading what it kept."""
        return START_S + 2.0

    def close(self) -> None:
        self._stop()
        if self._scratch is not None:
            self._scratch.close()
            self._scratch = None

    # -- afl-fuzz -------------------------------------------------------------------------------

    def _work(self) -> Scratch:
        """Per-process scratch of the measurements (removed with the process that made it)."""
        if self._scratch is None:
            self._scratch = Scratch(self._base())
        return self._scratch

    def _base(self) -> Path:
        return Path(self.scratch_dir) if self.scratch_dir else Path(tempfile.gettempdir())

    @property
    def root(self) -> Path:
        """afl-fuzz's directory: ``afl-fuzz/`` in the worker's scratch, kept by a sandbox child
        that replaces one that died, so that afl-fuzz resumes on it."""
        root = self._base() / "afl-fuzz"
        root.mkdir(exist_ok=True)
        return root

    def _start(self) -> str:
        """Start afl-fuzz: on what was offered so far, or resuming its directory (an afl-fuzz of this
        worker that exited, or died with its sandbox child)."""
        if self._adopt:  # the fork servers an afl-fuzz before this one left, re-parented here
            sweep_leftovers()
        root = self.root
        sync = root / "sync"
        inputs = root / "in"
        resume = self._sync.prepare(sync, inputs, self._variant.main)
        self._execs = (execs_done(stats_of(sync / INSTANCE / "fuzzer_stats")) or 0) if resume else 0
        if self._tokens and self._dictionary is None:
            self._dictionary = str(root / "dictionary.txt")
            Path(self._dictionary).write_bytes(afl_text(self._tokens))
        target_dir = self._base() / TARGET_DIR
        target_dir.mkdir(exist_ok=True)
        target = landlock.command([str(target_dir)], [self._binary, *self._args], self._cmplog)
        env = {**clean_env(), **_ENV, **self._modes, **self._variant.env(), "TMPDIR": str(target_dir),
               "AFL_FORKSRV_INIT_TMOUT": str(max(FORKSRV_INIT_MS, 10 * self._timeout_ms))}
        if self._map_size is None:  # the larger of the two builds' maps
            sizes = [dump_map_size(binary, target_dir) for binary in (self._binary, self._cmplog) if binary]
            self._map_size = str(max(int(size) for size in sizes if size)) if any(sizes) else ""
        if self._map_size:
            env["AFL_MAP_SIZE"] = self._map_size
        argv = [self._afl_fuzz, "-i", "-" if resume else str(inputs), "-o", str(sync),
                "-M" if self._variant.main else "-S", INSTANCE, "-t", str(self._timeout_ms), "-m", "none",
                *(["-x", self._dictionary] if self._dictionary else []),
                *flags(self._variant, self._extra, target[0] if self._cmplog else None), "--", *target]
        self._settings = {"position": list(self._position), **self._variant.to_json(), "argv": argv[1:],
                         "env": self._variant.env()}
        log = open(root / "afl-fuzz.log", "ab")  # noqa: SIM115 - the child keeps it; closed below
        self._started_at = time.time()
        try:
            self._process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             cwd=root, env=env, start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as exc:
            raise TargetError("executor_options.afl.afl_fuzz", f"{self._afl_fuzz}: cannot execute ({exc})") from None
        finally:
            log.close()
        self.starts += 1
        self._wait_started(root, sync)
        self._sync.flush(sync)
        return "resumed" if resume else "fresh"

    def _executions(self) -> int:
        """afl-fuzz's executions since the last slice: what its ``execs_done`` grew by. afl-fuzz writes
        ``fuzzer_stats`` at its start, then every 60 s (AFL++'s ``STATS_UPDATE_SEC``), and after its
        first minute a ``plot_data`` line every 5 s with the same count (``total_execs``); the newest
        of the two that the running afl-fuzz wrote is taken (``fuzzer_stats`` with its pid, a
        ``plot_data`` changed since it started). A resumed afl-fuzz goes on from the count its
        directory holds; one that counts from 0 again is counted from 0. So the slices together never
        report more executions than afl-fuzz ran, and fall behind by at most what it ran since its
        last write; a count beyond what one result may hold is returned by the next slices."""
        base = self.root / "sync" / INSTANCE
        stats = stats_of(base / "fuzzer_stats")
        done = [execs_done(stats)] if count(stats.get("fuzzer_pid")) == self._process.pid else []
        done.append(plotted_execs(base / "plot_data", self._started_at))
        now = max((n for n in done if n is not None), default=None)
        if now is None:
            return 0
        if now < self._execs:  # this afl-fuzz counts from 0
            self._execs = 0
        new = min(now - self._execs, MAX_EXECUTIONS)
        self._execs += new
        return new

    def _wait_started(self, root: Path, sync: Path) -> None:
        """Until afl-fuzz writes its stats (its fuzzing began: a ``fuzzer_stats`` with its own pid, not
        the one an afl-fuzz before it left) or exits: a target it refuses is a TargetError."""
        until = time.monotonic() + START_S
        stats = sync / INSTANCE / "fuzzer_stats"
        while time.monotonic() < until:
            if count(stats_of(stats).get("fuzzer_pid")) == self._process.pid:
                return
            if self._process.poll() is not None:
                tail = (root / "afl-fuzz.log").read_bytes()[-1500:].decode(errors="replace")
                raise TargetError("executor_options.afl_binary", f"afl-fuzz exited {self._process.returncode} at "
                                                                 f"start: {tail.strip()}")
            time.sleep(0.05)

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=3.0)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
