"""What the benchmarks on C targets share (``bench_symcc.py``, ``bench_hybrid.py``): the builds of a
target (SymCC, plain gcc, afl-cc, gcc with sanitizers), one SymCC run as a direct ``Popen``, the
clean SymCC environment, and the measurer's primitives (corpus files, behaviours of the plain
build, AFL edges, sanitizer crashes of the ASAN build).

Nothing here starts a campaign; ``harness.py`` does that for the Python targets.
"""

from __future__ import annotations

import hashlib
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = Path(__file__).resolve().parent / "c_targets"
HARNESSES = SOURCES / "harnesses"
RUN_TIMEOUT_S = 8.0  # per SymCC run, the symcc executor's default timeout_s
REPLAY_TIMEOUT_S = 5.0
STOP_GRACE_S = 5.0

# How each build of a target is compiled: the compiler (None: the SymCC wrapper given) and its flags.
# "plain" replays behaviours, "afl" is the AFL twin (edges, and what AFL fuzzes), "symcc" is what
# SymCC runs, "asan" replays crashes (AddressSanitizer and UBSan reports).
BUILDS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "plain": ("gcc", ("-O2",)),
    "afl": ("afl-cc", ("-O2",)),
    "symcc": (None, ("-O2",)),
    "asan": ("gcc", ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined")),
}
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:allocator_may_return_null=1:handle_abort=1",
    "UBSAN_OPTIONS": "print_stacktrace=0:halt_on_error=0",
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- builds ---------------------------------------------------------------------------------------

def compiler_of(kind: str, symcc_cc: str | None) -> str:
    compiler = BUILDS[kind][0] or symcc_cc
    if not compiler:
        raise ValueError(f"the {kind} build needs a SymCC compiler wrapper (SYMCC_CC)")
    return compiler


def compile_env() -> dict[str, str]:
    return {**os.environ, "AFL_QUIET": "1"}


def compile_objects(kind: str, symcc_cc: str | None, sources: Sequence[Path], out: Path,
                    flags: Sequence[str] = (), jobs: int = 1) -> list[Path]:
    """Each C source compiled (``-c``) into ``out`` with the build's compiler and flags."""
    out.mkdir(parents=True, exist_ok=True)
    compiler = compiler_of(kind, symcc_cc)

    def one(source: Path) -> Path:
        obj = out / (source.stem + ".o")
        subprocess.run([compiler, *BUILDS[kind][1], *flags, "-c", "-o", str(obj), str(source)], check=True,
                       env=compile_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return obj

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(one, sources))


def link(kind: str, symcc_cc: str | None, sources: Sequence[Path], output: Path, flags: Sequence[str] = (),
         inputs: Sequence[Path] = (), libs: Sequence[str] = ()) -> Path:
    """One binary: ``sources`` compiled and linked with ``inputs`` (objects, archives) and ``libs``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = [compiler_of(kind, symcc_cc), *BUILDS[kind][1], *flags, "-o", str(output), *map(str, sources),
               *map(str, inputs), *libs]
    subprocess.run(command, check=True, env=compile_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return output


def build_single(symcc_cc: str | None, name: str, out: Path, kinds: Iterable[str]) -> dict[str, Path]:
    """The builds of one ``c_targets/NAME.c`` (a single file), each ``out/NAME.KIND``."""
    return {kind: link(kind, symcc_cc, [SOURCES / f"{name}.c"], out / f"{name}.{kind}") for kind in kinds}


# -- one SymCC run, as the loops do it --------------------------------------------------------

def without_symcc_vars() -> dict[str, str]:
    return {key: val for key, val in os.environ.items() if not key.startswith("SYMCC_")}


def symcc_env(output_dir: Path) -> dict[str, str]:
    """What the symcc executor gives a run: no inherited SYMCC_*, an output dir, no linearization."""
    return {**without_symcc_vars(), "SYMCC_OUTPUT_DIR": str(output_dir), "SYMCC_ENABLE_LINEARIZATION": "0"}


def exited(pid: int, timeout_s: float) -> bool:
    """Whether the process exits within ``timeout_s``, told by its pidfd the moment it does.

    ``Popen.wait(timeout=...)`` polls with sleeps that double up to 50 ms, 15-30 ms too late for
    a 50-ms SymCC run (``docs/notes.md``)."""
    fd = os.pidfd_open(pid)
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])
    finally:
        os.close(fd)


def symcc_run(binary: Path, data: bytes, scratch: Path, timeout_s: float, env: dict[str, str]) -> list[bytes] | None:
    """Every file one SymCC run wrote (``NNNNNN`` and ``NNNNNN-optimistic`` alike); None on timeout."""
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        (work / "out").mkdir()
        (work / "input").write_bytes(data)
        with open(work / "input", "rb") as stdin:
            proc = subprocess.Popen([str(binary)], stdin=stdin, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env={**env, "SYMCC_OUTPUT_DIR": str(work / "out")},
                                    start_new_session=True)
        if not exited(proc.pid, timeout_s):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None
        proc.wait()
        return [path.read_bytes() for path in sorted((work / "out").iterdir()) if path.is_file()]
    finally:
        shutil.rmtree(work)


def stop_group(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to the process group of ``proc`` (started with ``start_new_session``), SIGKILL after ``grace_s``."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


# -- the measurer's primitives --------------------------------------------------------------------

def corpus_inputs(*dirs: Path) -> dict[str, bytes]:
    inputs = {}
    for directory in dirs:
        if directory.is_dir():
            for path in directory.iterdir():
                if path.is_file():
                    data = path.read_bytes()
                    inputs[sha256(data)] = data
    return inputs


def behaviours(plain: Path, inputs: dict[str, bytes]) -> set[tuple[str, int | str]]:
    """Distinct (stdout, exit status) pairs of the plain build; status "timeout" past the replay bound."""
    seen = set()
    for data in inputs.values():
        try:
            proc = subprocess.run([str(plain)], input=data, capture_output=True, timeout=REPLAY_TIMEOUT_S)
            seen.add((proc.stdout.decode(errors="replace").strip(), proc.returncode))
        except subprocess.TimeoutExpired:
            seen.add(("", "timeout"))
    return seen


def afl_edges(afl: Path, inputs: dict[str, bytes], scratch: Path) -> int:
    """Edges of the union of the corpus, from ``afl-showmap -C`` (its fork server, one process)."""
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        for digest, data in inputs.items():
            (work / digest).write_bytes(data)
        out = work.with_suffix(".edges")
        subprocess.run(["afl-showmap", "-q", "-i", str(work), "-o", str(out), "-C", "-t",
                        str(int(REPLAY_TIMEOUT_S * 1000)), "--", str(afl)],
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        edges = len(out.read_text().split()) if out.is_file() else 0
        out.unlink(missing_ok=True)
        return edges
    finally:
        shutil.rmtree(work)


def edge_sets(afl: Path, inputs: dict[str, bytes], scratch: Path, args: Sequence[str] = ()) -> dict[str, frozenset[int]]:
    """The edge ids each input covers on the AFL twin: one ``afl-showmap -i DIR -o DIR`` (one map per input),
    the twin run with ``args`` and the input on standard input.

    The union of these sets over a corpus is what ``afl-showmap -C`` counts for it."""
    if not inputs:
        return {}
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        (work / "in").mkdir()
        for digest, data in inputs.items():
            (work / "in" / digest).write_bytes(data)
        subprocess.run(["afl-showmap", "-q", "-i", str(work / "in"), "-o", str(work / "maps"), "-t",
                        str(int(REPLAY_TIMEOUT_S * 1000)), "-m", "none", "--", str(afl), *args],
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "AFL_QUIET": "1"})
        found = {}
        for digest in inputs:
            path = work / "maps" / digest
            lines = path.read_text().split() if path.is_file() else []
            found[digest] = frozenset(int(line.split(":", 1)[0]) for line in lines)
        return found
    finally:
        shutil.rmtree(work)


def behaviour_of(plain: Path, data: bytes, args: Sequence[str] = ()) -> tuple[str, int | str]:
    """(SHA-256 of stdout, first 12 hex digits; exit status) of the plain build run with ``args``, "timeout"
    past the bound."""
    try:
        proc = subprocess.run([str(plain), *args], input=data, capture_output=True, timeout=REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ("", "timeout")
    return (sha256(proc.stdout)[:12], proc.returncode)


def summaries(stderr: str) -> str | None:
    """A sanitizer report's distinct ``SUMMARY:`` lines (the crash's type and top frame), "|" between them."""
    found = sorted({line.strip() for line in stderr.splitlines() if line.startswith("SUMMARY: ")})
    return " | ".join(found) if found else None


def crash_of(asan: Path, data: bytes, args: Sequence[str] = (), state=summaries) -> str | None:
    """What the sanitizer build run with ``args`` reports for ``data``: ``state`` of its standard
    error, else the signal that ended it, "timeout" past the bound; None when it ran cleanly."""
    try:
        proc = subprocess.run([str(asan), *args], input=data, capture_output=True, timeout=REPLAY_TIMEOUT_S,
                              env={**os.environ, **SANITIZER_ENV})
    except subprocess.TimeoutExpired:
        return "timeout"
    found = state(proc.stderr.decode(errors="replace"))
    if found:
        return found
    if proc.returncode < 0:
        return f"signal {signal.Signals(-proc.returncode).name}"
    return None


def replay_all(function, binary: Path, inputs: dict[str, bytes], jobs: int, args: Sequence[str] = ()) -> dict[str, object]:
    """``function(binary, data, args)`` for every input, ``jobs`` at a time."""
    digests = list(inputs)
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return dict(zip(digests, pool.map(lambda d: function(binary, inputs[d], args), digests), strict=True))
