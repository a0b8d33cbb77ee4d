"""Hybrid campaigns: AFL++, SymCC, SymCC's helpers and our campaigns on C targets, one measurer (prints, asserts nothing).

    make bench-symcc-helpers [BENCH_QUICK=1]
    SYMCC_CC=/path/to/symcc [SYMCC_HELPER=/path/to/symcc_fuzzing_helper] [MPI_HELPER=/path/to/mpi_fuzzing_helper.py] \\
        python -m benchmarks.bench_hybrid [--quick] [--seconds 600] [--rounds 2] [--targets ...] [--systems ...] [--out DIR]

Targets: the three programs of ``c_targets/`` and two real libraries built from their Debian
source packages (``c_libraries.py``) with our harnesses (``c_targets/harnesses/``): libpng (the
PNG signature, chunk CRCs; with zlib, also from source) and cJSON. Each is built four ways
(``c_bench.BUILDS``): plain gcc, afl-cc (the AFL twin), SymCC, gcc with ASan+UBSan.

Systems (all on the same cores, ``--cores``, for the same window, in alternating order from one
round to the next, ABC CBA): ``afl1`` (afl-fuzz alone), ``afl2`` (afl-fuzz -M and -S),
``symcc-loop`` (``bench_symcc.run_loop``), ``campaign-symcc`` (our campaign, two SymCC
workers), ``helper`` (AFL main + secondary + SymCC's fuzzing helper: the Rust one when
``SYMCC_HELPER`` names a build of it, else ``helper_baseline.py``), ``mpi-helper`` (AFL main +
upstream's ``util/mpi_fuzzing_helper.py`` of symcc 7dc2ee66 under mpiexec, when ``MPI_HELPER``
names it), ``hybrid`` (our campaign, one AFL and one SymCC worker; the SymCC worker runs its
own afl-fuzz while it has nothing to analyze, ``launch --idle fuzz``), ``hybrid-2a1s`` (two AFL
workers and one SymCC worker: the helper's arrangement as a campaign). One ablation, not in the
full mode's list: ``hybrid-wait`` (``hybrid`` with ``--idle wait``: the SymCC worker waits).

One measurer for every system (:class:`Measurer`): the corpus a system holds at the end of its
window (its corpus directories as listed at that instant, seeds included): inputs, AFL edges
(union of the twin's edge ids, ``afl-showmap``), behaviours (distinct (stdout hash, exit status)
pairs of the plain build) and unique crashes (distinct sanitizer ``SUMMARY`` lines, or signals,
of the ASan+UBSan build); edges over time from the corpus listed every window/10. Everything
stays in ``--out`` (default ``runs/hybrid-<time>/``): ``results.json``, ``table.txt``,
``edges-<target>.png``, ``edges.png``, each system's directories and logs.

A full run (5 targets x 8 systems x 2 rounds x 600 s) takes longer than one sitting, so it can be
taken up again: every window writes ``round<r>/<target>/<system>/outcome.json`` (its figures, the
commit it ran on, when it started and the load average before and after), and ``--resume`` with
the same ``--out`` keeps those windows, runs the others in the same order on the same binaries
(``run.json`` records the settings and each binary's SHA-256; a resume with other settings or
other binaries is refused) and prints one table over all of them. A window that was interrupted
is moved aside (``<system>.interrupted-<n>``) and run again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import c_bench  # noqa: E402
from benchmarks.c_bench import HARNESSES, SOURCES, children_cpu, self_cpu, sha256, stop_group  # noqa: E402
from benchmarks.c_libraries import LibraryUnavailable, build_library  # noqa: E402
from symcc_ulfm.compare.measure.binary_edges import edge_sets  # noqa: E402
from symcc_ulfm.compare.systems.afl_peer import TIMEOUT_MS as AFL_TIMEOUT_MS  # noqa: E402
from symcc_ulfm.compare.systems.campaign_system import FINISH_EXTRA_S as LAUNCH_EXTRA_S  # noqa: E402
from symcc_ulfm.compare.systems.campaign_system import campaign_failure, handoff_medians  # noqa: E402
from symcc_ulfm.executors.fuzzers.afl import AFL_ENV, AFL_SYNC_ENV  # noqa: E402

SAMPLES = 10  # corpus listings per window
START_WAIT_S = 30.0  # for an AFL instance's fuzzer_stats before a helper starts
CLK_TCK = os.sysconf("SC_CLK_TCK")
FULL_SYSTEMS = ["afl1", "afl2", "symcc-loop", "campaign-symcc", "helper", "mpi-helper", "hybrid", "hybrid-2a1s"]
ALL_SYSTEMS = [*FULL_SYSTEMS, "hybrid-wait"]
NEEDS_SYMCC = set(ALL_SYSTEMS) - {"afl1", "afl2"}
QUICK = {"seconds": 45.0, "rounds": 1, "targets": "hdr_opcode,cjson", "systems": "afl2,helper,campaign-symcc,hybrid"}
FULL = {"seconds": 600.0, "rounds": 2, "targets": "hdr_opcode,tlv_records,crash_dispatch,libpng,cjson",
        "systems": ",".join(FULL_SYSTEMS)}
PAD = 48  # the c_targets' seeds are padded as bench_symcc's are (SymCC never changes an input's length)


# -- targets and their seeds ----------------------------------------------------------------------

def _hdr(version: int, body: bytes) -> bytes:
    check = (sum(body) ^ _xor(body) ^ 0xA5) & 0xFF
    return b"SQ" + bytes([version, len(body), check]) + body


def _xor(data: bytes) -> int:
    out = 0
    for byte in data:
        out ^= byte
    return out


def _frame(flags: int, body: bytes) -> bytes:
    return b"CF" + bytes([flags, len(body)]) + ((sum(body) & 0xFFFF) ^ 0xBEEF).to_bytes(2, "little") + body


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(width: int, height: int, depth: int, color: int, pixel, interlace: int = 0,
         extra: tuple[bytes, ...] = ()) -> bytes:
    """A valid PNG; ``pixel(x, y)`` gives the bytes of one pixel (for depths below 8, its sample value)."""
    def row(xs, y):
        if depth < 8:
            bits = "".join(format(pixel(x, y), f"0{depth}b") for x in xs)
            bits += "0" * (-len(bits) % 8)
            return b"\0" + int(bits, 2).to_bytes(len(bits) // 8, "big") if bits else b""
        return b"\0" + b"".join(pixel(x, y) for x in xs)

    if interlace:  # Adam7: (x0, y0, dx, dy) of the seven passes
        raw = b""
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                               (0, 1, 1, 2)):
            xs = list(range(x0, width, dx))
            if xs:
                raw += b"".join(row(xs, y) for y in range(y0, height, dy))
    else:
        raw = b"".join(row(range(width), y) for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + b"".join(extra) + _chunk(b"IDAT", zlib.compress(raw))
            + _chunk(b"IEND", b""))


def png_seeds() -> list[bytes]:
    return [
        _png(1, 1, 8, 0, lambda x, y: b"\x80"),
        _png(2, 2, 8, 2, lambda x, y: bytes([40 * x, 40 * y, 200]),
             extra=(_chunk(b"gAMA", struct.pack(">I", 45455)), _chunk(b"tEXt", b"Comment\0small"))),
        _png(4, 1, 2, 3, lambda x, y: x,
             extra=(_chunk(b"PLTE", bytes(range(12))), _chunk(b"tRNS", b"\x00\xff"))),
        _png(3, 3, 16, 4, lambda x, y: struct.pack(">HH", 1000 * x, 65535 - 999 * y), interlace=1),
    ]


@dataclass(frozen=True)
class Target:
    name: str
    harness: Path
    library: str | None  # a key of c_libraries.LIBRARIES
    seeds: tuple[bytes, ...]
    args: tuple[str, ...] = ()  # every build's arguments; the input is on standard input
    dictionary: Path | None = None  # afl-fuzz -x of every AFL system


def targets() -> dict[str, Target]:
    pad = lambda data: data.ljust(PAD, b"\0")  # noqa: E731
    return {t.name: t for t in [
        Target("hdr_opcode", SOURCES / "hdr_opcode.c", None,
               tuple(map(pad, (_hdr(1, b"\x01"), _hdr(2, b"\x02ab"), _hdr(1, b"\x10\x01\x10\x00"))))),
        Target("tlv_records", SOURCES / "tlv_records.c", None,
               tuple(map(pad, (b"TV\x01\x04\x05\x00\x00\x00", b"TV\x04\x01\x01\x02\x03bob",
                               b"TV\x03\x06\x01\x04\x01\x00\x00\x00")))),
        Target("crash_dispatch", SOURCES / "crash_dispatch.c", None,
               tuple(map(pad, (_frame(0, b"\x00\x00"), _frame(0, b"\x01ab"), _frame(1, b"\x02\x0a\x14"))))),
        Target("libpng", HARNESSES / "png_read.c", "libpng1.6", tuple(png_seeds())),
        Target("cjson", HARNESSES / "cjson_parse.c", "cjson",
               (b'{"a":1}', b'[1,-2.5e3,"x\\u0041",true,false,null]', b'{"k":{"n":[{}],"s":"t"}}')),
    ]}


def build_target(target: Target, symcc_cc: str | None, out: Path, cache: Path, log, jobs: int) -> tuple[dict, dict]:
    """Every build of ``target`` (the symcc one only with ``symcc_cc``) and the library versions used."""
    kinds = [k for k in c_bench.BUILDS if k != "symcc" or symcc_cc]
    binaries, versions = {}, {}
    for kind in kinds:
        inputs, flags, libs = [], [], []
        if target.library:
            built = build_library(target.library, kind, symcc_cc, cache, log, jobs)
            inputs, flags, libs, versions = built.archives, [f"-I{p}" for p in built.include], built.libs, built.versions
        try:
            binaries[kind] = c_bench.link(kind, symcc_cc, [target.harness], out / f"{target.name}.{kind}", flags,
                                          inputs, libs)
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"{target.name} ({kind}) does not build: "
                               f"{exc.stderr.decode(errors='replace')[-800:]}") from None
    return binaries, versions


# -- corpus listings over the window ----------------------------------------------------------------

def machine_busy_s() -> float:
    """CPU seconds this process's cores (its affinity) have been busy since boot, whoever ran on them
    (``/proc/stat``: user, nice, system, irq, softirq, steal)."""
    mine = {f"cpu{i}" for i in os.sched_getaffinity(0)}
    total = 0
    for line in Path("/proc/stat").read_text().splitlines():
        words = line.split()
        if words and words[0] in mine:
            fields = [int(v) for v in words[1:9]]
            total += sum(fields) - fields[3] - fields[4]
    return total / CLK_TCK


class Sampler(threading.Thread):
    """Lists a system's corpus directories at window x k/SAMPLES, k = 1..SAMPLES, from ``start``.

    ``globs`` are (directory, pattern) pairs evaluated at each listing (AFL creates its instance
    directories after it starts); every regular file below a match counts, except dot files and
    AFL's README.txt. ``first_seen[path]`` is the first listing's time that showed it."""

    def __init__(self, globs: list[tuple[Path, str]], seconds: float, start: float):
        super().__init__(daemon=True)
        self.globs, self.seconds, self.start_t = globs, seconds, start
        self.first_seen: dict[str, float] = {}
        self.times: list[float] = []
        self.busy0 = machine_busy_s()
        self.busy_s: float | None = None  # the machine's busy CPU seconds over the window
        self.done = threading.Event()
        self._stop_event = threading.Event()

    def listing(self) -> list[str]:
        found = []
        for base, pattern in self.globs:
            for top in base.glob(pattern) if base.is_dir() else []:
                for dirpath, dirnames, filenames in os.walk(top):
                    dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                    found += [os.path.join(dirpath, f) for f in filenames if not f.startswith(".") and f != "README.txt"]
        return found

    def run(self) -> None:
        for k in range(1, SAMPLES + 1):
            at = self.start_t + self.seconds * k / SAMPLES
            if self._stop_event.wait(max(0.0, at - time.monotonic())):
                break
            t = round(self.seconds * k / SAMPLES, 3)
            for path in self.listing():
                self.first_seen.setdefault(path, t)
            self.times.append(t)
        if len(self.times) == SAMPLES:
            self.busy_s = machine_busy_s() - self.busy0
        self.done.set()

    def wait_window(self) -> None:
        self.done.wait()

    def cancel(self) -> None:
        self._stop_event.set()


@dataclass
class Outcome:
    target: str
    system: str
    round: int
    seconds: float
    cpu_s: float = 0.0  # CPU of the system's processes that this process reaped (all but those of mpiexec jobs)
    busy_s: float | None = None  # CPU the cores spent busy over the window, whoever ran
    skipped: str | None = None  # why the system did not run
    failed: str | None = None  # what went wrong while it ran (it is still measured)
    corpus: int = 0
    edges: int = 0
    behaviours: int = 0
    crashes: int = 0
    timeline: list = field(default_factory=list)  # [t, inputs, edges]
    notes: dict = field(default_factory=dict)
    commit: str = ""  # of this checkout when the window ran ("+" when benchmarks/ or symcc_ulfm/ had changes)
    started: str = ""  # UTC
    load: list = field(default_factory=list)  # 1-minute load average before and after the window


# -- the systems ----------------------------------------------------------------------------------

@dataclass
class Context:
    target: Target
    binaries: dict[str, Path]
    seed_dir: Path
    seconds: float
    run_dir: Path
    args: argparse.Namespace


def afl_command(ctx: Context, out: Path, role: list[str]) -> list[str]:
    # By its absolute path: SymCC's helpers look for afl-showmap next to the afl-fuzz of the
    # instance's command line (the MPI helper does not find it when that is a bare "afl-fuzz").
    tokens = ["-x", str(ctx.target.dictionary)] if ctx.target.dictionary else []
    return [shutil.which("afl-fuzz") or "afl-fuzz", "-i", str(ctx.seed_dir), "-o", str(out), *role, *tokens, "-t",
            str(AFL_TIMEOUT_MS), "-m", "none", "--", str(ctx.binaries["afl"]), *ctx.target.args]


def start_afl(ctx: Context, out: Path, role: list[str], sync: bool) -> subprocess.Popen:
    name = role[1] if role else "default"
    log = open(ctx.run_dir / f"afl-{name}.log", "wb")  # noqa: SIM115 - the child keeps it
    try:
        env = {**c_bench.without_symcc_vars(), **AFL_ENV, **(AFL_SYNC_ENV if sync else {})}
        return subprocess.Popen(afl_command(ctx, out, role), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env, cwd=ctx.run_dir, start_new_session=True)
    finally:
        log.close()


def wait_for(path: Path, procs: list[subprocess.Popen], until: float) -> bool:
    while time.monotonic() < until:
        if path.exists():
            return True
        if any(p.poll() is not None for p in procs):
            return False
        time.sleep(0.1)
    return path.exists()


def afl_globs(out: Path) -> list[tuple[Path, str]]:
    return [(out, "*/queue"), (out, "*/crashes")]


def stop_all(procs: list[subprocess.Popen], names: list[str]) -> dict:
    """Stop every process (its group) and return the exit status of each (negative: the signal we sent)."""
    codes = {}
    for proc, name in zip(procs, names, strict=True):
        if proc.poll() is None:
            stop_group(proc)
        codes[name] = proc.returncode
    return codes


def exited_early(procs: list[subprocess.Popen], names: list[str], ctx: Context) -> str | None:
    for proc, name in zip(procs, names, strict=True):
        if proc.poll() is not None:
            tail = ""
            log = ctx.run_dir / f"{name}.log"
            if log.is_file():
                tail = log.read_bytes()[-600:].decode(errors="replace").strip()
            return f"{name} exited {proc.returncode} before the window ended: {tail}"
    return None


def run_processes(ctx: Context, globs, starters) -> tuple[Sampler, dict]:
    """Start processes (``starters``: (name, start function) in order, each may wait on the previous),
    list the corpus over the window, stop them all at its end."""
    start = time.monotonic()
    sampler = Sampler(globs, ctx.seconds, start)
    sampler.start()
    procs, names, notes = [], [], {}
    try:
        for name, starter in starters:
            proc = starter(procs, start)
            if proc is None:
                notes["failed"] = f"{name} did not start (see its log in {ctx.run_dir})"
                break
            procs.append(proc)
            names.append(name)
        sampler.wait_window()
        early = exited_early(procs, names, ctx)
        if early:
            notes["failed"] = early
    finally:
        sampler.cancel()
        notes["exit"] = stop_all(procs, names)
    return sampler, notes


def system_afl(ctx: Context, instances: int, main_flags: tuple[str, ...] = ()) -> tuple[Sampler, dict]:
    """afl-fuzz alone, or as -M main (with ``main_flags``, e.g. ``-c CMPLOG_BUILD``) and -S secondaries."""
    out = ctx.run_dir / "afl"
    roles = [[]] if instances == 1 else [["-M", "main", *main_flags]] + [["-S", f"secondary{i}"]
                                                                        for i in range(1, instances)]
    starters = [(f"afl-{r[1] if r else 'default'}", lambda procs, t0, r=r: start_afl(ctx, out, r, instances > 1))
                for r in roles]
    return run_processes(ctx, afl_globs(out), starters)


def helper_command(ctx: Context, out: Path) -> tuple[list[str], str]:
    rust = ctx.args.symcc_helper
    symcc = str(ctx.binaries["symcc"])
    if rust:
        return [rust, "-o", str(out), "-a", ctx.args.helper_feed, "-n", "symcc", "--", symcc], f"rust {rust}"
    return ([sys.executable, "-m", "benchmarks.helper_baseline", "-o", str(out), "-a", ctx.args.helper_feed, "-n",
             "symcc", "--", symcc], "python benchmarks/helper_baseline.py (SYMCC_HELPER not set)")


def start_logged(ctx: Context, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
    log = open(ctx.run_dir / f"{name}.log", "wb")  # noqa: SIM115 - the child keeps it
    try:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=ROOT, start_new_session=True)
    finally:
        log.close()


def system_helper(ctx: Context) -> tuple[Sampler, dict]:
    """AFL main + AFL secondary + one SymCC helper fed from ``--helper-feed``'s queue (upstream's docs: the secondary)."""
    out = ctx.run_dir / "afl"
    command, impl = helper_command(ctx, out)
    feed = out / ctx.args.helper_feed / "fuzzer_stats"

    def helper(procs, t0):
        if not wait_for(feed, procs, t0 + START_WAIT_S):
            return None
        env = {**c_bench.without_symcc_vars(), "TMPDIR": str(ctx.run_dir), "PYTHONPATH": str(ROOT)}
        return start_logged(ctx, "helper", command, env)

    starters = [("afl-main", lambda procs, t0: start_afl(ctx, out, ["-M", "main"], True)),
                ("afl-secondary", lambda procs, t0: start_afl(ctx, out, ["-S", "secondary"], True)),
                ("helper", helper)]
    sampler, notes = run_processes(ctx, afl_globs(out), starters)
    notes.update(helper=impl, helper_command=command, feed=ctx.args.helper_feed)
    stats = out / "symcc" / "stats"
    if stats.is_file() and not ctx.args.symcc_helper:
        rows = [json.loads(line) for line in stats.read_text().splitlines() if line.strip()]
        notes.update(analyzed=len(rows), tests=sum(r["tests"] for r in rows), kept=sum(r["new"] for r in rows))
    return sampler, notes


def system_mpi_helper(ctx: Context) -> tuple[Sampler, dict] | str:
    """AFL main + upstream's MPI helper (rank 0 triage, one SymCC worker rank) fed from the main's queue."""
    script = ctx.args.mpi_helper
    if not script:
        return "MPI_HELPER is not set (upstream's util/mpi_fuzzing_helper.py of symcc 7dc2ee66, not on master)"
    if not Path(script).is_file():
        return f"MPI_HELPER={script}: no such file"
    probe = subprocess.run([sys.executable, "-c", "import mpi4py.MPI"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"mpi4py does not load here: {probe.stderr.strip()[-300:]}"
    from symcc_ulfm.launch.mpiexec import ROOT_ENV, find_mpiexec, mpi_flags

    out = ctx.run_dir / "afl"
    command = [find_mpiexec(), *mpi_flags(False), "-n", str(1 + ctx.args.mpi_workers), sys.executable, script,
               "-a", "main", "-o", str(out), "-n", "symcc", "--", str(ctx.binaries["symcc"])]
    (ctx.run_dir / "tmp").mkdir()
    env = {**c_bench.without_symcc_vars(), "TMPDIR": str(ctx.run_dir / "tmp"), "PYTHONUNBUFFERED": "1",
           **(ROOT_ENV if os.geteuid() == 0 else {})}

    def helper(procs, t0):
        if not wait_for(out / "main" / "fuzzer_stats", procs, t0 + START_WAIT_S):
            return None
        return start_logged(ctx, "mpi-helper", command, env)

    starters = [("afl-main", lambda procs, t0: start_afl(ctx, out, ["-M", "main"], True)), ("mpi-helper", helper)]
    sampler, notes = run_processes(ctx, afl_globs(out), starters)
    log = ctx.run_dir / "mpi-helper.log"
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    notes.update(command=command, analyzed=sum(" -> " in line and "generated" in line for line in lines),
                 log_tail=lines[-5:])
    return sampler, notes


def system_loop(ctx: Context) -> tuple[Sampler, dict]:
    from benchmarks.bench_symcc import run_loop

    start = time.monotonic()
    sampler = Sampler([(ctx.run_dir, "corpus")], ctx.seconds, start)
    sampler.start()
    m = run_loop(ctx.target.name, ctx.binaries["symcc"], ctx.seed_dir, ctx.seconds, ctx.run_dir, 0, False)
    sampler.wait_window()
    return sampler, {"analyzed": m.analyzed, "generated": m.generated, **m.notes}


def campaign_args(ctx: Context, kinds: str | None, workers: int, idle: str = "fuzz") -> list[str]:
    from symcc_ulfm.compare.systems.campaign_system import window_args

    args = ["--executor", "symcc", "--target", str(ctx.binaries["symcc"]),
            "--executor-option", f"afl_binary={ctx.binaries['afl']}", "--seeds", str(ctx.seed_dir),
            *window_args(ctx.seconds, workers)]
    if kinds:
        args += ["--worker-kinds", kinds, "--slice", f"{ctx.args.slice:g}", "--idle", idle]
    if ctx.args.symcc_env:
        args += ["--executor-option", f"env={ctx.args.symcc_env}"]
    return args


def system_campaign(ctx: Context, args: list[str], handoffs: bool) -> tuple[Sampler, dict]:
    """``launch`` with ``args`` into ``state/`` for the window; ``handoffs``: the medians between kinds."""
    from symcc_ulfm.launch import json_child

    state = ctx.run_dir / "state"
    start = time.monotonic()
    sampler = Sampler([(state, "corpus/objects")], ctx.seconds, start)
    sampler.start()
    proc = json_child.start(state, args, cwd=ROOT, new_session=True, env={"PYTHONPATH": str(ROOT)})
    try:
        sampler.wait_window()
        done = json_child.finish(proc, timeout=LAUNCH_EXTRA_S)
    finally:
        sampler.cancel()
        if proc.poll() is None:
            json_child.kill(proc)
    (ctx.run_dir / "launch.stdout").write_text(done.stdout)
    (ctx.run_dir / "launch.stderr").write_text(done.stderr)
    verdict = done.verdict
    notes = {"command": json_child.command(state, args), "returncode": done.returncode,
             "passed": verdict.get("passed"), "problems": verdict.get("problems"),
             "analyzed": verdict.get("wal_analyzed"), "generated": verdict.get("wal_generated"),
             "wal_unique": verdict.get("wal_unique"), "lent_slices": verdict.get("lent_slices")}
    if done.returncode != 0 or verdict.get("passed") is False:
        notes["failed"] = campaign_failure(state, done)
    elif handoffs:
        notes["handoffs"] = handoff_medians(state)
    return sampler, notes


def run_system(system: str, ctx: Context) -> tuple[Sampler | None, dict, str | None]:
    """(sampler, notes, why skipped) of one system's window."""
    if system in NEEDS_SYMCC and "symcc" not in ctx.binaries:
        return None, {}, "no SymCC build (SYMCC_CC is not set)"
    if system == "afl1":
        return (*system_afl(ctx, 1), None)
    if system == "afl2":
        return (*system_afl(ctx, 2), None)
    if system == "symcc-loop":
        return (*system_loop(ctx), None)
    if system == "campaign-symcc":
        return (*system_campaign(ctx, campaign_args(ctx, None, 2), False), None)
    if system == "helper":
        return (*system_helper(ctx), None)
    if system == "mpi-helper":
        got = system_mpi_helper(ctx)
        return (None, {}, got) if isinstance(got, str) else (*got, None)
    if system == "hybrid":
        return (*system_campaign(ctx, campaign_args(ctx, "afl:1,symcc:1", 2), True), None)
    if system == "hybrid-2a1s":
        return (*system_campaign(ctx, campaign_args(ctx, "afl:2,symcc:1", 3), True), None)
    if system == "hybrid-wait":
        return (*system_campaign(ctx, campaign_args(ctx, "afl:1,symcc:1", 2, "wait"), True), None)
    raise ValueError(f"unknown system {system}; known: {', '.join(ALL_SYSTEMS)}")


# -- the measurer ---------------------------------------------------------------------------------

class Measurer:
    """One measurement of every corpus of a target; each distinct input is run once per build (with
    ``args``) and cached. Without a ``plain`` build (a harness directory has none) behaviours are
    not measured (0). A crash is told apart by ``state`` of the ``asan`` build's report."""

    def __init__(self, binaries: dict[str, Path], scratch: Path, jobs: int, args: tuple[str, ...] = (),
                 state=c_bench.summaries):
        self.binaries, self.scratch, self.jobs, self.args, self.state = binaries, scratch, jobs, args, state
        self.edges: dict[str, frozenset[int]] = {}
        self.behaviour: dict[str, tuple] = {}
        self.crash: dict[str, str | None] = {}

    def learn(self, inputs: dict[str, bytes]) -> None:
        new = {d: data for d, data in inputs.items() if d not in self.edges}
        if not new:
            return
        self.edges.update(edge_sets(self.binaries["afl"], new, self.scratch, self.args))
        if "plain" in self.binaries:
            self.behaviour.update(c_bench.replay_all(c_bench.behaviour_of, self.binaries["plain"], new, self.jobs,
                                                     self.args))
        self.crash.update(c_bench.replay_all(lambda asan, data, args: c_bench.crash_of(asan, data, args, self.state),
                                             self.binaries["asan"], new, self.jobs, self.args))

    def score(self, o: Outcome, sampler: Sampler | None, seeds: dict[str, bytes]) -> None:
        paths = dict(sampler.first_seen) if sampler else {}
        digest_of: dict[str, str] = {}
        inputs = dict(seeds)
        for path in paths:
            with contextlib.suppress(OSError):
                data = Path(path).read_bytes()
                digest_of[path] = sha256(data)
                inputs[digest_of[path]] = data
        self.learn(inputs)
        o.corpus = len(inputs)
        edges = set().union(*(self.edges[d] for d in inputs))
        o.edges = len(edges)
        o.behaviours = len({self.behaviour[d] for d in inputs}) if "plain" in self.binaries else 0
        crashes = {self.crash[d] for d in inputs} - {None, "timeout"}
        o.crashes = len(crashes)
        o.notes["crash_signatures"] = sorted(crashes)
        o.notes["hangs_on_replay"] = sum(self.crash[d] == "timeout" for d in inputs)
        # Edges over time: the union of what the listings up to t showed (the seeds from t = 0).
        timeline = [[0.0, len(seeds), len(set().union(*(self.edges[d] for d in seeds)))]]
        for t in sampler.times if sampler else []:
            upto = set(seeds) | {digest_of[p] for p, first in paths.items() if first <= t and p in digest_of}
            timeline.append([t, len(upto), len(set().union(*(self.edges[d] for d in upto)))])
        o.timeline = timeline


# -- table and figures ----------------------------------------------------------------------------

def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def per_round(value):
    """A column's cell: ``value(outcome)`` of each round, "/" between them."""
    return lambda ran, ref: "/".join(str(value(o)) for o in ran)


def against(value):
    """A column's cell: the mean of ``value(outcome)`` over the rounds against the reference's mean."""
    def cell(ran: list[Outcome], ref: list[Outcome]) -> str:
        mine, base = mean([value(o) for o in ran]), mean([value(o) for o in ref])
        return f"{mine / base:.2f}" if mine is not None and base else "-"
    return cell


def busy(ran: list[Outcome], ref: list[Outcome]) -> str:
    cores = mean([o.busy_s / o.seconds for o in ran if o.busy_s is not None])
    return "-" if cores is None else f"{cores:.2f}"


def grid(results: list[Outcome], header: str, reference: str, columns: list) -> tuple[list[str], list[str]]:
    """The table's lines (a row per target and system; ``columns``: (title, width, cell(ran, reference's
    outcomes))) and the failures to list under it."""
    lines = [header, "", f"{'target':<15} {'system':<15} " + " ".join(f"{t:>{w}}" for t, w, _ in columns)]
    problems = []
    for target in dict.fromkeys(o.target for o in results):
        rows = [o for o in results if o.target == target]
        ref = [o for o in rows if o.system == reference and not o.skipped]
        for system in dict.fromkeys(o.system for o in rows):
            mine = [o for o in rows if o.system == system]
            ran = [o for o in mine if not o.skipped]
            if not ran:
                lines.append(f"{target:<15} {system:<15} skipped: {mine[0].skipped.splitlines()[0][:160]}")
                continue
            lines.append(f"{target:<15} {system:<15} " + " ".join(f"{cell(ran, ref):>{w}}" for _, w, cell in columns))
            problems += [f"{target} {o.system} round {o.round}: {o.failed.splitlines()[0]}" for o in ran if o.failed]
    return lines, problems


def table(results: list[Outcome], header: str, reference: str = "afl2") -> str:
    columns = [("corpus", 13, per_round(lambda o: o.corpus)), ("edges", 9, per_round(lambda o: o.edges)),
               ("behaviours", 10, per_round(lambda o: o.behaviours)), ("crashes", 7, per_round(lambda o: o.crashes)),
               ("busy", 5, busy), ("edges/" + reference, 11, against(lambda o: o.edges)),
               ("behav/" + reference, 11, against(lambda o: o.behaviours))]
    lines, problems = grid(results, header, reference, columns)
    lines += ["", "corpus, edges, behaviours, crashes: each round (round 0/round 1 ...); busy: CPU seconds the cores "
              "spent busy per window second (whoever ran; mean); ratios: means over the rounds against "
              f"{reference}"]
    handed = [o for o in results if o.notes.get("handoffs")]
    if handed:
        lines += ["", "hand-off, publication -> first use by a worker of another kind (median s, inputs): "
                      "fuzzer finds -> an analysis lease; analysis finds -> a fuzzer's offer (afl-fuzz imports at "
                      "its next sync)"]
        for o in handed:
            h = o.notes["handoffs"]
            lines.append(f"  {o.target:<15} {o.system:<15} round {o.round}: "
                         + "; ".join(f"{d} {h[d]['median_s'] if h[d]['median_s'] is not None else '-'} s "
                                     f"({h[d]['n']})" for d in ("to_analysis", "to_fuzzers")))
    if problems:
        lines += ["", "failures (details in results.json):"] + [f"  {p}" for p in problems]
    return "\n".join(lines)


def figures(results: list[Outcome], out: Path) -> list[str]:
    """Edges over time, one line per system and round: edges-<target>.png and all targets in edges.png."""
    try:
        import altair as alt
    except ImportError as exc:
        return [f"no figures: {exc}"]
    rows = [{"target": o.target, "system": o.system, "round": o.round, "seconds": t, "edges": edges}
            for o in results if not o.skipped for t, _n, edges in o.timeline]
    if not rows:
        return []
    written = []

    def chart(values, title):
        return alt.Chart(alt.Data(values=values), title=title).mark_line(point=True).encode(
            x=alt.X("seconds:Q", title="seconds into the window"), y=alt.Y("edges:Q", title="AFL edges (union)"),
            color=alt.Color("system:N"), strokeDash=alt.StrokeDash("round:N"),
            detail="round:N").properties(width=420, height=260)

    try:
        targets_seen = list(dict.fromkeys(r["target"] for r in rows))
        for target in targets_seen:
            path = out / f"edges-{target}.png"
            chart([r for r in rows if r["target"] == target], target).save(str(path))
            written.append(path.name)
        combined = alt.vconcat(*(chart([r for r in rows if r["target"] == t], t) for t in targets_seen))
        combined.save(str(out / "edges.png"))
        written.append("edges.png")
    except Exception as exc:  # a figure is not worth the run's results
        written.append(f"figure failed: {exc!r}")
    return written


# -- main -----------------------------------------------------------------------------------------

def write_seeds(target: Target, out: Path) -> Path:
    seed_dir = out / "seeds" / target.name
    seed_dir.mkdir(parents=True)
    for i, data in enumerate(target.seeds):
        (seed_dir / f"seed{i}").write_bytes(data)
    return seed_dir


def set_cores(count: int | None) -> list[int]:
    """Restrict this process (and so every system it starts) to ``count`` of its allowed cores."""
    allowed = sorted(os.sched_getaffinity(0))
    if count and count < len(allowed):
        os.sched_setaffinity(0, allowed[:count])
    return sorted(os.sched_getaffinity(0))


def settings_of(args: argparse.Namespace, symcc_cc: str | None, cores: int) -> dict:
    """What every window of one run must share (``run.json``)."""
    return {"seconds": args.seconds, "rounds": args.rounds, "targets": args.targets, "systems": args.systems,
            "cores": cores, "slice": args.slice, "helper_feed": args.helper_feed, "symcc_env": args.symcc_env,
            "mpi_workers": args.mpi_workers, "symcc_cc": symcc_cc, "symcc_helper": args.symcc_helper,
            "mpi_helper": args.mpi_helper}


def kept_binaries(recorded: dict, target: str) -> dict[str, Path] | None:
    """A resumed run's binaries of ``target``, when they are all still there unchanged (else None)."""
    mine = recorded.get(target)
    if not mine:
        return None
    paths = {kind: Path(entry["path"]) for kind, entry in mine.items()}
    if all(p.is_file() and sha256(p.read_bytes()) == mine[kind]["sha256"] for kind, p in paths.items()):
        return paths
    return None


def load_outcome(path: Path) -> Outcome:
    return Outcome(**json.loads(path.read_text()))


def move_aside(run_dir: Path) -> Path:
    """An interrupted window's directory, kept under a name no window uses."""
    n = 1
    while (aside := run_dir.with_name(f"{run_dir.name}.interrupted-{n}")).exists():
        n += 1
    run_dir.rename(aside)
    return aside


def spread(results: list[Outcome]) -> str:
    """The commits and load averages of the windows of a table."""
    commits: dict[str, int] = {}
    for o in results:
        if o.commit:
            commits[o.commit] = commits.get(o.commit, 0) + 1
    loads = [v for o in results for v in o.load]
    starts = sorted(o.started for o in results if o.started)
    return (f"windows: {starts[0] if starts else '-'} .. {starts[-1] if starts else '-'}; commits: "
            + (", ".join(f"{c} ({n})" for c, n in commits.items()) or "-")
            + (f"; load average {min(loads):.2f}-{max(loads):.2f}" if loads else ""))


def open_run(parser: argparse.ArgumentParser, out: Path, settings: dict, resume: bool) -> dict:
    """The record (``run.json``) of the run in ``out``: a resumed one's, refused (exit 2) when it was
    run with other ``settings``, or a new one's (``out/bin/`` made)."""
    if resume:
        try:
            recorded = json.loads((out / "run.json").read_text())
        except (OSError, ValueError) as exc:
            parser.error(f"--resume: {out} holds no readable run.json ({exc})")
        differ = {k: (recorded["settings"].get(k), v) for k, v in settings.items() if recorded["settings"].get(k) != v}
        if differ:
            parser.error(f"--resume: {out} was run with other settings (recorded, now): {differ}")
        return recorded
    (out / "bin").mkdir(parents=True)
    return {"settings": settings, "binaries": {}, "libraries": {}}


def not_built(name: str, systems: list[str], seconds: float, exc: Exception, log) -> list[Outcome]:
    """Every system's window of a target that was not built, skipped saying why."""
    log(f"target {name} skipped: {exc}")
    return [Outcome(name, s, 0, seconds, skipped=f"target not built: {str(exc)[:200]}") for s in systems]


def record_builds(parser: argparse.ArgumentParser, recorded: dict, name: str, binaries: dict[str, Path],
                  versions: dict[str, str], rebuilt_on_resume: bool, packages: dict[str, str], log) -> None:
    """Record a target's builds (their SHA-256) and its Debian packages' versions in the run's
    record (and ``packages``); a resumed run whose rebuilt builds differ from its own is refused."""
    for package, version in versions.items():
        packages[package] = version
        log(f"package {package} {version} (Debian source package, apt-get source) for {name}")
    shas = {kind: {"path": str(path), "sha256": sha256(Path(path).read_bytes())} for kind, path in binaries.items()}
    if rebuilt_on_resume and name in recorded["binaries"] and shas != recorded["binaries"][name]:
        parser.error(f"--resume: {name}'s builds were rebuilt differently from the run's: start a new --out")
    recorded["binaries"][name], recorded["libraries"][name] = shas, versions


def run_windows(out: Path, args: argparse.Namespace, systems: list[str], known: dict[str, Target],
                builds: dict[str, dict], seed_dirs: dict[str, Path], measurers: dict[str, Measurer], log,
                runner) -> list[Outcome]:
    """Every window (``args.rounds`` x system x built target, systems in alternating order, each
    ``args.seconds``) not already in ``out``: ``runner(system, ctx)`` gives (sampler, notes, why
    skipped), the target's measurer scores it."""
    from benchmarks.harness import checkout

    commit = checkout()
    results = []
    for rnd in range(args.rounds):
        for system in systems if rnd % 2 == 0 else systems[::-1]:
            for name in builds:
                run_dir = out / f"round{rnd}" / name / system
                if (run_dir / "outcome.json").is_file():
                    o = load_outcome(run_dir / "outcome.json")
                    log(f"round {rnd} {name} {system}: kept from {o.started} ({o.commit}): edges {o.edges}")
                    results.append(o)
                    continue
                if run_dir.exists():
                    log(f"round {rnd} {name} {system}: interrupted earlier, moved to {move_aside(run_dir).name}")
                run_dir.mkdir(parents=True)
                ctx = Context(known[name], builds[name], seed_dirs[name], args.seconds, run_dir, args)
                o = Outcome(name, system, rnd, args.seconds, commit=commit,
                            started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), load=[os.getloadavg()[0]])
                cpu0 = children_cpu() + self_cpu()
                t0 = time.monotonic()
                try:
                    sampler, notes, skipped = runner(system, ctx)
                except Exception as exc:  # a system that breaks is reported, the others still run
                    sampler, notes, skipped = None, {"failed": f"{type(exc).__name__}: {exc}"}, None
                o.cpu_s = children_cpu() + self_cpu() - cpu0
                o.busy_s = sampler.busy_s if sampler else None
                o.notes = {**notes, "wall_s": round(time.monotonic() - t0, 2)}
                o.failed = o.notes.pop("failed", None)
                o.load.append(os.getloadavg()[0])
                if skipped:
                    o.skipped = skipped
                    log(f"round {rnd} {name} {system}: skipped: {skipped}")
                else:
                    seeds = {sha256(d): d for d in known[name].seeds}
                    measurers[name].score(o, sampler, seeds)
                    log(f"round {rnd} {name} {system}: corpus {o.corpus}, edges {o.edges}, behaviours "
                        f"{o.behaviours}, crashes {o.crashes}" + (f"; FAILED: {o.failed}" if o.failed else ""))
                (run_dir / "outcome.json").write_text(json.dumps(asdict(o), indent=1, default=str))
                results.append(o)
    return results


def report(out: Path, text: str, results: list[Outcome], fields: dict, started: float, log_lines: list[str]) -> None:
    """The figures, ``table.txt`` and ``results.json`` (``fields``, the log and every window) of a run in ``out``."""
    written = figures(results, out)
    total_s = time.monotonic() - started
    (out / "table.txt").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps(
        {**fields, "total_s": round(total_s, 1), "figures": written, "log": log_lines,
         "results": [asdict(o) for o in results]}, indent=1, default=str))
    print(f"figures: {', '.join(written) or '-'}; build {fields['build_s']:.0f} s, total {total_s:.0f} s; "
          f"raw outputs: {out}")


def window_parser(description: str, quick: dict, targets: str, systems: list[str]) -> argparse.ArgumentParser:
    """The options every benchmark of windows shares (``parse_windows`` completes them)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=f"short run: {quick}")
    parser.add_argument("--seconds", type=float, default=None, help="window of every system (full: 600)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds, in alternating order (full: 2)")
    parser.add_argument("--targets", default=None, help=f"comma separated ({targets})")
    parser.add_argument("--systems", default=None, help=f"comma separated, from {','.join(systems)}")
    parser.add_argument("--cores", type=int, default=2,
                        help="cores every system shares (this process's affinity; 0: all it has)")
    parser.add_argument("--slice", type=float, default=5.0, help="an AFL worker's slice in the campaigns")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "hybrid-cache",
                        help="the Debian packages' sources and the libraries' archives, kept between runs")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--resume", action="store_true",
                        help="take up the run in --out: keep its finished windows, run the others")
    return parser


def parse_windows(parser: argparse.ArgumentParser, argv: list[str] | None, quick: dict,
                  full: dict) -> argparse.Namespace:
    """The options, with those not given from the mode (``quick`` or ``full``)."""
    args = parser.parse_args(argv)
    if args.resume and args.out is None:
        parser.error("--resume takes up the run in --out: name it")
    mode = quick if args.quick else full
    for key in ("seconds", "rounds", "targets", "systems"):
        if getattr(args, key) is None:
            setattr(args, key, mode[key])
    return args


def logger(name: str) -> tuple[list[str], object]:
    """The lines logged so far and the function that logs (and prints) one."""
    lines: list[str] = []

    def log(text: str) -> None:
        lines.append(text)
        print(f"{name}: {text}", flush=True)

    return lines, log


def main(argv: list[str] | None = None) -> int:
    parser = window_parser(__doc__.splitlines()[0], QUICK, f"full: {FULL['targets']}", ALL_SYSTEMS)
    parser.add_argument("--helper-feed", default="secondary",
                        help="the AFL instance whose queue feeds the helper (upstream's docs: the secondary)")
    parser.add_argument("--symcc-env", default=None,
                        help='the campaigns\' SymCC runtime variables, a JSON object (executor option env), '
                             'e.g. \'{"SYMCC_ENABLE_LINEARIZATION":"0"}\' for an ablation')
    parser.add_argument("--mpi-workers", type=int, default=1, help="SymCC worker ranks of the MPI helper")
    args = parse_windows(parser, argv, QUICK, FULL)
    symcc_cc = os.environ.get("SYMCC_CC") or None
    args.symcc_helper = os.environ.get("SYMCC_HELPER") or None
    args.mpi_helper = os.environ.get("MPI_HELPER") or None
    cpus = set_cores(args.cores)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = (args.out or ROOT / "runs" / f"hybrid-{stamp}").resolve()
    recorded = open_run(parser, out, settings_of(args, symcc_cc, len(cpus)), args.resume)
    jobs = len(cpus)
    log_lines, log = logger("bench_hybrid")

    log(f"cores {cpus}; SYMCC_CC={symcc_cc or '-'} SYMCC_HELPER={args.symcc_helper or '-'} "
        f"MPI_HELPER={args.mpi_helper or '-'}; out {out}")
    systems = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(systems) - set(ALL_SYSTEMS))
    if unknown:
        parser.error(f"unknown systems {unknown}; known: {', '.join(ALL_SYSTEMS)}")
    known = targets()
    builds, seed_dirs, libraries, results = {}, {}, {}, []
    started = time.monotonic()
    for name in args.targets.split(","):
        target = known[name]
        kept = kept_binaries(recorded["binaries"], name) if args.resume else None
        try:
            if kept:
                builds[name], versions = kept, recorded["libraries"].get(name, {})
            else:
                builds[name], versions = build_target(target, symcc_cc, out / "bin", args.cache.resolve(), log, jobs)
        except (LibraryUnavailable, RuntimeError) as exc:
            results += not_built(name, systems, args.seconds, exc, log)
            continue
        record_builds(parser, recorded, name, builds[name], versions, bool(args.resume and not kept), libraries, log)
        seed_dirs[name] = out / "seeds" / name if (out / "seeds" / name).is_dir() else write_seeds(target, out)
    (out / "run.json").write_text(json.dumps(recorded, indent=1))
    build_s = time.monotonic() - started
    measurers = {name: Measurer(builds[name], out, jobs) for name in builds}
    results += run_windows(out, args, systems, known, builds, seed_dirs, measurers, log, run_system)
    header = (f"bench_hybrid: {args.seconds:g} s windows, {args.rounds} round(s), cores={len(cpus)}, {stamp}, "
              f"{'quick' if args.quick else 'full'} mode\n"
              f"command: {' '.join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])}\n"
              f"SYMCC_CC={symcc_cc or '-'}; helper: "
              f"{'rust ' + args.symcc_helper if args.symcc_helper else 'python re-implementation (helper_baseline.py)'}"
              f"; MPI_HELPER={args.mpi_helper or '-'}\n"
              f"libraries: {', '.join(f'{p} {v}' for p, v in libraries.items()) or '-'}\n{spread(results)}")
    text = table(results, header)
    print(text)
    report(out, text, results, {"header": header, "seconds": args.seconds, "rounds": args.rounds, "systems": systems,
                                "cores": cpus, "libraries": libraries, "build_s": round(build_s, 1)}, started, log_lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
