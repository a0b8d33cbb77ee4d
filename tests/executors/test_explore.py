"""One-process exploration: reaching every built-in target's deepest branch, and the loop itself."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from symcc_ulfm.core.coverage import coverage_id
from symcc_ulfm.executors import create
from symcc_ulfm.executors.base import Executor, Measurement, RunResult
from symcc_ulfm.targets import names, resolve_target
from symcc_ulfm.tools.explore import LOCK_NAME, explore

KEYS = {"executions", "generated", "unique", "novel", "edges", "seconds", "executions_per_s",
        "solver_queries", "solver_queries_per_s", "solver_seconds"}


def corpus(out_dir) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out_dir.iterdir() if p.name not in ("findings.json", "explore.json", LOCK_NAME)}


# counted, not timed: the same search on any machine (the hybrid phase's count floor, as mutants)
COUNTED = {"mutations": 16, "mutate_clock": False}


@pytest.fixture()
def contained(request):
    executors = []

    def make(target, **options):
        executors.append(create("concolic", target, options))
        return executors[-1]

    yield make
    for executor in executors:
        executor.close()


def reaches(executor, info, files) -> bool:
    return any(m.returned == info.deep for m in executor.measure_many(list(files.values())))


@pytest.mark.parametrize("name", [n for n in names() if n != "bundle"])
def test_explore_reaches_the_deepest_branch_from_the_shipped_seeds(name, tmp_path, contained):
    info = resolve_target(name)
    executor = contained(name, **COUNTED)
    stats = explore(executor, None, out_dir=tmp_path, runs=500, stop_returned=info.deep)  # tlv: 149 runs
    assert KEYS <= stats.keys()
    files = corpus(tmp_path)
    assert all(hashlib.sha256(data).hexdigest() == fname for fname, data in files.items())
    assert all(seed in files.values() for seed in info.seeds)
    assert stats["stopped"] == "returned" and stats["stopped_early"] and reaches(executor, info, files), stats
    finding_inputs = sum(f["hits"] for f in stats["findings"])
    assert stats["novel"] + len(info.seeds) <= len(files) <= stats["novel"] + len(info.seeds) + finding_inputs
    assert stats["novel"] <= stats["unique"] <= stats["generated"]


def test_explore_finds_a_bug_behind_real_parsers(tmp_path, contained):
    """``bundle``: its metadata is a property list parsed by plistlib, whose integers reach the
    target symbolic; build 0 is the documented ZeroDivisionError (its deepest branch, behind
    both parsers and a checksum, takes longer than a test's budget and is left to campaigns). The
    bug is among the first run's children; the runs' own clock is out of the way."""
    stats = explore(contained("bundle", **COUNTED, run_timeout_s=600), None, out_dir=tmp_path, runs=4)
    assert stats["stopped"] == "runs", stats
    assert any(f["signature"].startswith("ZeroDivisionError at bundle.py:parse:") for f in stats["findings"]), stats
    assert stats["edges"] > 300, "the parsers' own modules are traced"


def test_explore_without_stop_runs_until_an_empty_queue_and_records_the_crash(tmp_path, contained):
    executor = contained("magic32", mutations=0)  # the solver alone: its queue empties (hybrid mutants keep it full)
    stats = explore(executor, None, out_dir=tmp_path, runs=100)  # 5 runs
    assert stats["stopped"] == "queue" and not stats["stopped_early"] and stats["queue_left"] == 0, stats
    assert stats["edges"] > 0 and stats["solver_queries"] >= 2
    assert reaches(executor, resolve_target("magic32"), corpus(tmp_path))
    # the target's documented SIGSEGV: found, contained (this process lives), written with its input
    [crash] = stats["findings"]
    assert crash["kind"] == "crash" and crash["signature"].startswith("SIGSEGV at magic32.py:parse:")
    assert (tmp_path / crash["input_sha256"]).is_file() and executor.deaths >= 1
    written = json.loads((tmp_path / "findings.json").read_text())
    assert written == stats["findings"]


class Doubler(Executor):
    """Not concolic: candidates are the input with one more byte; coverage is its length."""

    name = "doubler"

    def identity(self):
        return {"executor": self.name}

    def seeds(self):
        return [b"a", b"a"]

    def run(self, data, hint=None):
        return RunResult(candidates=[data + b"b", data + b"b", b"a"], executions=1)

    def measure(self, data):
        return Measurement(frozenset({coverage_id(min(len(data), 5), 1)}))


def test_explore_works_for_any_executor_and_deduplicates(tmp_path):
    stats = explore(Doubler(), None, out_dir=tmp_path, runs=10)
    assert stats["stopped"] == "runs" and stats["runs"] == 10 and stats["generated"] == 3 * stats["runs"]
    assert stats["novel"] == 4  # 'ab'..'abbbb'; longer ones are unique but add no coverage
    assert stats["unique"] > stats["novel"], "non-novel unique inputs are still explored, last"
    assert set(corpus(tmp_path).values()) == {b"a", b"ab", b"abb", b"abbb", b"abbbb"}
    assert stats["edges"] == 5 and stats["solver_queries"] == 0
    clocked = explore(Doubler(), 0, out_dir=tmp_path / "clocked", runs=10)  # whichever comes first
    assert clocked["stopped"] == "seconds" and clocked["runs"] == 0 and clocked["inputs"] == 1


def havoc(data: bytes, rng: random.Random) -> bytes:
    """AFL-like random mutation: bit flips, random bytes, interesting values, block copies."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 2, 4, 8))):
        pos = rng.randrange(len(out))
        choice = rng.randrange(4)
        if choice == 0:
            out[pos] ^= 1 << rng.randrange(8)
        elif choice == 1:
            out[pos] = rng.randrange(256)
        elif choice == 2:
            out[pos] = rng.choice((0, 1, 0x7F, 0x80, 0xFF))
        else:
            src = rng.randrange(len(out))
            out[pos] = out[src]
    return bytes(out)


def test_concolic_reaches_magic32_where_random_mutation_does_not(tmp_path, contained):
    budget = 5000
    info = resolve_target("magic32")
    executor = contained("magic32", mutations=0)  # the solver's executions against random mutation's
    stats = explore(executor, None, out_dir=tmp_path, runs=20, stop_returned=info.deep)  # 2 runs
    assert stats["stopped"] == "returned", stats
    assert stats["executions"] <= budget
    assert reaches(executor, info, corpus(tmp_path))

    rng = random.Random(1234)
    pool = list(info.seeds)
    reached = False
    for _ in range(budget):
        child = havoc(rng.choice(pool), rng)
        if info.function(child) != "bad magic" and child not in pool:
            pool.append(child)
        reached = reached or info.function(child) == info.deep  # in-process: a 64-bit guess away from the crash
    assert not reached
