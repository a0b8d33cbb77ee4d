"""The hybrid phase of the concolic executor (executors/concolic/hybrid/havoc.py): havoc mutants run
concretely after the symbolic run, kept only when they reach coverage new to the process."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from symcc_ulfm.core.coverage import coverage_id, edge_of
from symcc_ulfm.errors import PolicyError
from symcc_ulfm.executors import create
from symcc_ulfm.executors.base import Measurement
from symcc_ulfm.executors.concolic import ConcolicExecutor
from symcc_ulfm.executors.concolic.expressions import expr as E
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.hybrid import havoc
from symcc_ulfm.executors.outcome import OK, Outcome
from symcc_ulfm.tools.explore import explore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hybrid.py"


def test_mutator_is_deterministic_and_bounded():
    def mutants(seed):
        mutator = havoc.Mutator(random.Random(seed), [b"TOKEN", b"\x00\x01"], max_length=40)
        return [mutator.havoc(b"0123456789abcdef", [b"xyz" * 20]) for _ in range(500)]

    first = mutants(7)
    assert first == mutants(7)
    assert first != mutants(8)
    assert all(len(m) <= 40 for m in first)
    assert len(set(first)) > 400
    assert any(b"TOKEN" in m for m in first)  # dictionary words are used
    mutator = havoc.Mutator(random.Random(1))
    assert all(isinstance(mutator.havoc(b""), bytes) for _ in range(200))  # an empty input is fine


def test_dictionary_from_tokens_compares_and_branch_constants():
    P.start(float("inf"), 1000)
    try:
        word = E.make(E.ADD, (E.make(E.MUL, (E.var(0, 5), E.const(256))), E.var(1, 6)))
        node = E.make(E.EQ, (word, E.const(0x1234)))
        P.branch(node)
        P.token("GET")
        P.token(b"\x89PNG")
        P.token("x" * (P.MAX_TOKEN_LENGTH + 1))  # too long: not a word
        P.compare(0xCAFE, 7)
        recorded = P.stop()
    finally:
        P.stop()
    words = havoc.dictionary(recorded.entries, recorded.compares, recorded.tokens)
    assert words[:2] == [b"GET", b"\x89PNG"]
    assert b"\x07" in words and b"51966" in words and (0xCAFE).to_bytes(2, "little") in words
    assert b"4660" in words and (0x1234).to_bytes(2, "big") in words
    assert all(len(w) <= P.MAX_TOKEN_LENGTH for w in words)


def test_hybrid_keeps_only_new_coverage_and_reports_each_finding_once():
    boom = Outcome("exception", "sig", "ValueError")

    def measure(data):
        return Measurement(frozenset({coverage_id(len(data) % 4, 1)}), boom if data.startswith(b"\x00") else OK)

    covered = {0, 1, 2, 3}  # every reachable edge is already covered: nothing is kept
    reported: set = set()
    out = havoc.hybrid(measure, havoc.Mutator(random.Random(3)), [b"abcd"], [], covered, reported,
                        until=float("inf"), limit=300)
    assert out.executions == 300 and out.kept == [] and out.new_coverage == 0 and not out.cut
    assert len(out.findings) == 1 and reported == {("exception", "sig")}

    covered, reported = set(), set()
    out = havoc.hybrid(measure, havoc.Mutator(random.Random(3)), [b"abcd"], [], covered, reported,
                        until=float("inf"), limit=300)
    assert 1 <= len(out.kept) <= 4 and covered <= {0, 1, 2, 3} and out.new_coverage == len(covered)
    assert len({len(k) % 4 for k in out.kept}) == len(out.kept)
    # the time bound: a clock already past `until` measures nothing
    out = havoc.hybrid(measure, havoc.Mutator(random.Random(3)), [b"abcd"], [], set(), set(),
                        until=0.0, limit=300, clock=lambda: 1.0)
    assert out.executions == 0 and out.cut
    # ... unless a count floor is asked for: that many, up to the hard deadline
    out = havoc.hybrid(measure, havoc.Mutator(random.Random(3)), [b"abcd"], [], set(), set(),
                        until=0.0, limit=300, at_least=7, deadline=2.0, clock=lambda: 1.0)
    assert out.executions == 7
    out = havoc.hybrid(measure, havoc.Mutator(random.Random(3)), [b"abcd"], [], set(), set(),
                        until=0.0, limit=300, at_least=7, deadline=1.0, clock=lambda: 1.0)
    assert out.executions == 0
    # counted (until = deadline, at_least = limit): all of them, however late, up to the deadline
    done: list[bytes] = []  # the clock: one second per execution
    out = havoc.hybrid(lambda data: done.append(data) or measure(data), havoc.Mutator(random.Random(3)),
                        [b"abcd"], [], set(), set(), until=250.0, limit=300, at_least=300, deadline=250.0,
                        clock=lambda: float(len(done)))
    assert out.executions == 250 and out.cut


@pytest.mark.parametrize("value", [-1, 1.0, 1.5, True, "x"])
def test_mutate_share_must_be_in_unit_interval(value):
    with pytest.raises(PolicyError):
        ConcolicExecutor(f"{FIXTURE}:popcount_gate", {"mutate_share": value})


@pytest.mark.parametrize("key,value", [("mutations", -1), ("mutations", 2.5), ("mutate_seed", -3),
                                       ("mutate_clock", 0), ("mutate_clock", "false")])
def test_mutation_counts_are_non_negative_integers_and_the_clock_a_flag(key, value):
    with pytest.raises(PolicyError):
        ConcolicExecutor(f"{FIXTURE}:popcount_gate", {key: value})


def test_run_is_deterministic_and_counts_mutations_separately():
    def once(options):
        executor = ConcolicExecutor(f"{FIXTURE}:keyword_gate",
                                    {"mutations": 16, "mutate_clock": False, **options})
        return executor.run(b"hello world")

    first, second = once({}), once({})
    assert first.notes["mutations"] == second.notes["mutations"] == 16  # counted, whatever the load
    assert not first.notes["mutations_cut"]
    assert first.executions >= 1 + first.notes["mutations"]
    assert first.notes["words"] >= 1  # "frobnicate", compared with every word of the text
    assert once({"mutate_seed": 1}).notes["mutations"] == 16
    off = once({"mutations": 0})
    assert off.notes["mutations"] == 0 and off.notes["mutants_kept"] == 0


def test_the_hybrid_phase_is_deterministic_given_input_and_seed():
    """Same input, children, seed and process history: the same mutants (the solver's children of a
    symbolic run are not part of this: z3 may pick other models)."""
    def phase(seed):
        executor = ConcolicExecutor(f"{FIXTURE}:keyword_gate",
                                    {"mutations": 300, "mutate_seed": seed, "mutate_clock": False})
        measured = []
        measure = executor._measure
        executor._measure = lambda data: measured.append(data) or measure(data)
        recorded = P.Path(float("inf"), 10)
        recorded.tokens["frobnicate"] = None
        result = executor._hybrid(b"hello world", [b"hello  world"], recorded, 1.0, float("inf"), True)
        return result.executions, result.kept, [(o.kind, o.signature, m) for o, m in result.findings], measured

    first = phase(0)
    assert first[0] == 300 and first[1]
    assert first[3][:11] == havoc.truncations(b"hello world")  # every prefix first, then havoc
    assert phase(0) == first
    assert phase(1) != first


def test_a_counted_phase_cut_by_the_runs_deadline_says_so():
    executor = ConcolicExecutor(f"{FIXTURE}:keyword_gate", {"mutations": 300, "mutate_clock": False})
    recorded = P.Path(float("inf"), 10)
    cut = executor._hybrid(b"hello world", [], recorded, 0.0, 0.0, True)  # the run's deadline has passed
    assert cut.executions == 0 and cut.cut
    whole = executor._hybrid(b"hello world", [], recorded, 0.0, float("inf"), True)
    assert whole.executions == 300 and not whole.cut
    assert "mutate_clock" in executor.identity()["options"]


def test_mutate_share_zero_disables_the_phase():
    executor = ConcolicExecutor(f"{FIXTURE}:keyword_gate", {"mutate_share": 0})
    result = executor.run(b"hello world")
    assert result.notes["mutations"] == 0 and result.notes["mutants_kept"] == 0


def test_mutants_are_kept_only_for_coverage_new_to_the_process():
    executor = ConcolicExecutor(f"{FIXTURE}:keyword_gate", {"mutations": 300, "mutate_clock": False})
    first = executor.run(b"hello world")
    kept = first.notes["mutants_kept"]
    assert kept >= 1
    for mutant in first.candidates[-kept:]:
        assert {edge_of(c) for c in executor.measure(mutant).coverage} <= executor._covered
    before = set(executor._covered)
    again = executor.run(b"hello world")
    for mutant in again.candidates[len(again.candidates) - again.notes["mutants_kept"]:]:
        assert {edge_of(c) for c in executor._measure(mutant).coverage} - before  # each kept one added an edge


def test_a_dictionary_word_reaches_a_keyword_branch():
    executor = ConcolicExecutor(f"{FIXTURE}:keyword_gate", {"mutations": 2000, "mutate_clock": False})
    result = executor.run(b"hello world")
    assert any(executor.measure(c).returned == "keyword" for c in result.candidates)


def test_hybrid_reaches_a_branch_behind_an_unmodelled_c_operation(tmp_path):
    seed = b"\x01\x01?"
    alone = explore(ConcolicExecutor(f"{FIXTURE}:popcount_gate", {"mutate_share": 0}), None, tmp_path / "a",
                    [seed], runs=50, stop_returned="deep")
    assert alone["stopped"] == "queue", alone  # the solver alone cannot: bin() pins the byte
    # counted mutants: the 2000 of the first run hold the two bytes (1 run unloaded), on any machine
    hybrid = explore(ConcolicExecutor(f"{FIXTURE}:popcount_gate", {"mutations": 2000, "mutate_clock": False}),
                     None, tmp_path / "b", [seed], runs=10, stop_returned="deep")
    assert hybrid["stopped"] == "returned" and hybrid["stopped_early"], hybrid


def test_a_mutant_that_kills_the_sandbox_child_is_the_finding():
    # with seed 56 the killing mutant is the third measured
    sandbox = create("concolic", f"{FIXTURE}:popcount_kill",
                     {"memory_mb": 512, "mutate_seed": 56, "mutations": 3, "mutate_clock": False})
    try:
        result = sandbox.run(b"\x01\x01")
        [finding] = result.findings
        assert finding.outcome.kind == "crash" and finding.outcome.signature == "SIGKILL"
        assert finding.data[0] == 0xFF  # the mutant's input, not the run's own
        died = result.notes["mutant_ended_child"]
        assert died["executing"] is True and died["sandbox"]["signature"] == "SIGKILL"
        # the run itself was done again without mutants: its symbolic part is not lost
        assert result.notes["mutations"] == 0 and result.notes["outcome"] == "return"
        assert sandbox.measure(b"\x02\x02").returned == "alive"  # a fresh child serves the next request
    finally:
        sandbox.close()


def test_truncations_cut_at_every_position_or_at_evenly_spaced_ones():
    assert havoc.truncations(b"abc") == [b"", b"a", b"ab"]
    long = bytes(range(256)) * 2
    cuts = havoc.truncations(long)
    assert len(cuts) == havoc.MAX_TRUNCATIONS and cuts[0] == b"" and cuts[1] == long[:64]
    assert [len(c) for c in cuts[-8:]] == list(range(504, 512))  # every cut among the last bytes
    assert all(long.startswith(c) and len(c) < len(long) for c in cuts)


def test_the_new_edits_truncate_append_words_and_touch_only_the_trailer():
    rng = random.Random(5)
    mutator = havoc.Mutator(rng, [b"WORD"])
    data = bytes(range(100))
    for _ in range(200):
        buf = bytearray(data)
        mutator._truncate(buf)
        assert len(buf) < len(data) and data.startswith(bytes(buf))
        buf = bytearray(data)
        mutator._word_append(buf)
        assert bytes(buf) == data + b"WORD"
        buf = bytearray(data)
        mutator._tail_interesting(buf)
        assert len(buf) == len(data) and buf[:68] == data[:68]
    changed = set()
    for _ in range(500):
        buf = bytearray(data)
        mutator._tail_interesting(buf)
        changed.update(i for i in range(100) if buf[i] != data[i])
    assert min(changed) >= 68 and max(changed) == 99 and len(changed) > 24


def test_constants_are_a_second_pool_that_the_runs_words_outweigh():
    only = havoc.Mutator(random.Random(2), [], constants=[b"CONST"])
    assert any(b"CONST" in only.havoc(b"abcdef") for _ in range(200))  # constants alone enable word edits
    both = havoc.Mutator(random.Random(2), [b"RUN"], constants=[b"CONST"])
    picks = [both._word() for _ in range(2000)]
    assert 0.2 < picks.count(b"CONST") / len(picks) < 0.4 and set(picks) == {b"RUN", b"CONST"}


def test_delimited_edits_delete_or_copy_a_chunk_from_a_byte_to_a_later_occurrence_of_it():
    mutator = havoc.Mutator(random.Random(3))
    data = b"<d><k>a</k><i>1</i><k>b</k></d>"
    results = set()
    for _ in range(3000):
        buf = bytearray(data)
        mutator._delimited_edit(buf)
        results.add(bytes(buf))
    assert b"<d><k>a</k><k>b</k></d>" in results  # an element deleted: a key without its value
    assert b"<d><k>a</k><i>1</i></d>" in results  # the last key and value deleted together
    assert b"<d><k>a</k><i>1</i><k>b</k><k>a</k></d>" in results  # a key copied before another tag
    n = len(data)
    for out in results - {data}:  # one chunk from a byte to a later occurrence of it, removed or repeated
        if len(out) < n:
            assert any(data[:i] + data[j:] == out and data[i] == data[j] for i in range(n) for j in range(i + 1, n))
        else:
            k = len(out) - n
            assert any(out[:i] + out[i + k:] == data and out[i] == out[i + k] for i in range(len(out) - k))
