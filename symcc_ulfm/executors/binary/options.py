"""The options of a binary target, shared by the ``symcc`` and ``native`` executors and the ``afl``
fuzzer: their defaults and checks (a PolicyError or TargetError naming the option), and the SymCC
runtime variables a campaign may set.

``cmplog_binary`` is the AFL build's CmpLog build, which only the ``afl`` kind runs (afl-fuzz's
``-c``). ``sanitizer_binary`` is the build every kind takes an input's outcome from when the input did not
end cleanly on the AFL build (the AFL twin's direct run, a SymCC run's confirmation, a replay), so
that a finding has one signature, its sanitizer report, whichever kind found it. ``harness`` is
what ``launch --harness`` records of the harness directory it took the builds from: the path and
SHA-256 of its manifest (which holds every build's SHA-256, compiler and flags). Every kind checks
it when it is built, so a campaign never runs on a harness directory built again since
(ProvenanceChanged).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any

from ...errors import PolicyError, ProvenanceChanged, TargetError
from ..seed_dirs import read_seed_blobs

# SymCC never changes an input's length, and a target's length checks are concrete: one seed
# length reaches one side of each. Zero bytes at lengths from 1 B to 1 KiB reach both sides of
# the usual header and minimum-size checks.
DEFAULT_SEED_LENGTHS = (1, 4, 16, 64, 256, 1024)
DEFAULT_SEEDS = tuple(bytes(length) for length in DEFAULT_SEED_LENGTHS)
MEASURE_RUNS = 3  # runs of the AFL twin for an input that fails: in its batch, alone under afl-showmap, directly
MAX_TIMEOUT_S = 3600.0
DEFAULTS: dict[str, Any] = {
    "args": [],
    "input_mode": None,  # derived from args: "file" when an argument contains @@, else "stdin"
    "timeout_s": 8.0,  # one SymCC run (and one concrete run of the same binary); fits the default lease
    "measure_timeout_s": None,  # one concrete run of the AFL twin: 1 s (afl-fuzz's default), at most timeout_s / 3
    "env": {},  # SymCC runtime variables of every run (RUNTIME_ENV)
    "afl_binary": None,
    "afl_showmap": None,  # afl-showmap on PATH when afl_binary is set
    "sanitizer_binary": None,  # the build that decides the outcome of an input that fails (a sanitizer build)
    "cmplog_binary": None,  # the AFL build with CmpLog (AFL_LLVM_CMPLOG=1): afl-fuzz's -c (the afl kind)
    "harness": None,  # {"manifest": ..., "sha256": ...}: the harness directory's manifest (launch --harness)
    "seeds": None,  # DEFAULT_SEEDS: zero bytes of several lengths, all of them symbolic
    "max_output_bytes": 1024 * 1024,
}


def _flag(value: str) -> str | None:
    return None if value in ("0", "1") else "expected '0' or '1'"


def _count(value: str) -> str | None:
    return None if value.isascii() and value.isdigit() and 0 < int(value) < 2**63 else "expected a positive integer"


def _map_path(value: str) -> str | None:
    if os.path.isabs(value):
        return None if os.path.isdir(os.path.dirname(value)) else "its directory does not exist"
    if not value or "/" in value or value in (".", ".."):
        return "expected a file name (one per worker, in its scratch directory) or an absolute path"
    return None


# The SymCC runtime variables (symcc-rt's Config.cpp) a campaign may set, each with its check.
# Left out on purpose: SYMCC_OUTPUT_DIR and SYMCC_INPUT_FILE (set per run), SYMCC_NO_SYMBOLIC_INPUT
# (a run would write nothing; reproduce() sets it), SYMCC_MEMORY_INPUT (needs a harness that
# calls symcc_make_symbolic, not stdin or @@), SYMCC_LOG_FILE (a file per run nobody reads).
RUNTIME_ENV = {
    # QSYM's pruning of expressions (linearization of non-linear ones). SymCC's drivers set 1;
    # the campaign's default is 0: with 1, SymCC's test cases that negate an opcode behind a
    # checksum-guarded header (benchmarks/c_targets/hdr_opcode.c) fail the checksum, and the two
    # libraries measured gained nothing from it (benchmarks/README.md, "Hybrid campaigns").
    "SYMCC_ENABLE_LINEARIZATION": _flag,
    # QSYM's record of the branches it already tried to negate, read at start and rewritten at
    # each new one; later runs skip those branches. A file name is a map per worker (in the
    # worker's scratch directory, kept across its runs); an absolute path is one map shared by
    # every worker that sees it, which QSYM rewrites without locking (a torn read is an empty map).
    "SYMCC_AFL_COVERAGE_MAP": _map_path,
    # Expressions alive before the runtime collects garbage.
    "SYMCC_GC_THRESHOLD": _count,
}


@dataclass(frozen=True)
class SymccOptions:
    args: list[str]
    input_mode: str  # "stdin" or "file" (the input file's path replaces @@)
    timeout_s: float
    measure_timeout_s: float
    max_output_bytes: int
    env: dict[str, str]
    seeds: tuple[bytes, ...]
    afl_binary: Any
    afl_showmap: Any
    sanitizer_binary: Any
    cmplog_binary: Any
    harness: dict[str, str] | None


def parse_options(options: dict[str, Any]) -> SymccOptions:
    """The checked options, each missing one at its default (:data:`DEFAULTS`)."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise PolicyError(f"executor_options.{unknown[0]}", f"unknown option; known: {', '.join(sorted(DEFAULTS))}")
    opts = {**DEFAULTS, **options}
    args = _string_list("args", opts["args"])
    input_mode = _input_mode(opts["input_mode"], args)
    timeout_s = _number("timeout_s", opts["timeout_s"], 0.01, MAX_TIMEOUT_S)
    measure_timeout_s = opts["measure_timeout_s"]
    if measure_timeout_s is None:
        measure_timeout_s = min(1.0, timeout_s / MEASURE_RUNS)
    measure_timeout_s = _number("measure_timeout_s", measure_timeout_s, 0.001, MAX_TIMEOUT_S)
    if measure_timeout_s * MEASURE_RUNS > timeout_s:
        raise PolicyError(
            "executor_options.measure_timeout_s",
            f"{measure_timeout_s:g} s is more than timeout_s / {MEASURE_RUNS} ({timeout_s:g} s / "
            f"{MEASURE_RUNS}): measuring an input that crashes or hangs takes up to {MEASURE_RUNS} runs of the "
            "AFL twin, and one measurement must fit in the time of one execution (timeout_s), the sandbox's bound",
        )
    max_output_bytes = _integer("max_output_bytes", opts["max_output_bytes"], 1, 256 * 1024 * 1024)
    env = _runtime_env(opts["env"])
    seeds = _seeds(opts["seeds"])
    if opts["afl_showmap"] is not None and opts["afl_binary"] is None:
        raise PolicyError("executor_options.afl_showmap", "only used with afl_binary (the AFL-instrumented twin)")
    if opts["cmplog_binary"] is not None and opts["afl_binary"] is None:
        raise PolicyError("executor_options.cmplog_binary", "only used with afl_binary (afl-fuzz's main target)")
    return SymccOptions(args, input_mode, timeout_s, measure_timeout_s, max_output_bytes, env, seeds,
                        opts["afl_binary"], opts["afl_showmap"], opts["sanitizer_binary"], opts["cmplog_binary"],
                        _harness(opts["harness"]))



def _runtime_env(value: Any) -> dict[str, str]:
    """``{"SYMCC_ENABLE_LINEARIZATION": "0"}`` updated with the checked ``env`` option."""
    if not isinstance(value, dict):
        raise PolicyError("executor_options.env", f"{value!r}: expected a mapping of SymCC runtime variables")
    env = {"SYMCC_ENABLE_LINEARIZATION": "0"}
    for name, setting in value.items():
        field = f"executor_options.env.{name}"
        check = RUNTIME_ENV.get(name)
        if check is None:
            raise PolicyError(field, f"not a SymCC runtime variable a campaign may set; allowed: {', '.join(RUNTIME_ENV)}")
        problem = "expected a string" if not isinstance(setting, str) else check(setting)
        if problem:
            raise PolicyError(field, f"{setting!r}: {problem}")
        env[name] = setting
    return dict(sorted(env.items()))


def _string_list(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyError(f"executor_options.{name}", f"{value!r}: expected a list of strings")
    return list(value)


def _input_mode(value: Any, args: list[str]) -> str:
    derived = "file" if any("@@" in arg for arg in args) else "stdin"
    if value is None:
        return derived
    if value not in ("stdin", "file"):
        raise PolicyError("executor_options.input_mode", f"{value!r}: expected 'stdin' or 'file'")
    if value != derived:
        why = "file mode needs @@ in args" if value == "file" else "stdin mode cannot have @@ in args"
        raise PolicyError(
            "executor_options.input_mode", f"{value!r}: {why} (the input file's path replaces @@)"
        )
    return value


def _number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise PolicyError(f"executor_options.{name}", f"{value!r}: expected a number in {low}..{high}")
    return float(value)


def _integer(name: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise PolicyError(f"executor_options.{name}", f"{value!r}: expected an integer in {low}..{high}")
    return value


def _seeds(value: Any) -> tuple[bytes, ...]:
    """Seeds from a list of hex strings, or from a directory as ``--seeds`` reads one
    (``..seed_dirs``: plain, an AFL++ output or instance directory, a libFuzzer corpus)."""
    field = "executor_options.seeds"
    if value is None:
        return DEFAULT_SEEDS
    if isinstance(value, str):
        return read_seed_blobs(value, field)
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise PolicyError(field, f"{value!r}: expected a non-empty list of hex strings or a directory path")
    try:
        return tuple(bytes.fromhex(item) for item in value)
    except ValueError as exc:
        raise PolicyError(field, f"{value!r}: not hex ({exc})") from None


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _harness(value: Any) -> dict[str, str] | None:
    """The checked ``harness`` record, once its manifest is found to be the one recorded."""
    field = "executor_options.harness"
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"manifest", "sha256"} or \
            not isinstance(value["manifest"], str) or not os.path.isabs(value["manifest"]) or \
            not isinstance(value["sha256"], str) or not _SHA256.fullmatch(value["sha256"]):
        raise PolicyError(field, f"{value!r}: expected {{\"manifest\": ABSOLUTE PATH, \"sha256\": HEX}}")
    try:
        fd = os.open(value["manifest"], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise TargetError(field, f"{value['manifest']}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        found = hashlib.sha256(handle.read()).hexdigest()
    if found != value["sha256"]:
        raise ProvenanceChanged(f"{value['manifest']}: its SHA-256 is {found}, the campaign recorded {value['sha256']} "
                                "(the harness was built again since)")
    return dict(value)
