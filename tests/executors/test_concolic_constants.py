"""Dictionary words from the target's own modules (executors/concolic/hybrid/module_words.py): code
constants, regex literals and samples, and their use by the hybrid phase; and the literals that
instrumented code compares concrete text with (executors/concolic/tracing/literal_compares.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from symcc_ulfm.executors.concolic import ConcolicExecutor
from symcc_ulfm.executors.concolic.expressions import path as P
from symcc_ulfm.executors.concolic.hybrid import havoc, input_to_state, module_words
from symcc_ulfm.executors.concolic.tracing import literal_compares

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hybrid.py"
TEXTS = Path(__file__).resolve().parents[1] / "fixtures" / "texts.py"

SOURCE = '''
def outer(x):
    if x in {"gamma", "alpha"}:  # a constant frozenset
        return None
    def inner(y):
        return y == b"\\x89PNG" or y == "GIF8" or y == 4242 or y is True
    if x in ("one", "two"):
        return "This is a long message with spaces %r" % x
    return inner(x), "x" * 100, 3.5

class Parser:
    pass
'''


def test_code_words_reach_nested_code_and_skip_names_messages_and_long_strings():
    words = module_words.code_words(compile(SOURCE, "<fixture>", "exec"))
    for word in (b"\x89PNG", b"GIF8", b"4242", b"one", b"two", b"alpha", b"gamma"):
        assert word in words
    assert words.index(b"alpha") < words.index(b"gamma")  # frozenset members in a fixed order
    for absent in (b"outer", b"inner", b"Parser", b"outer.<locals>.inner", b"x" * 100, b"True", b"1"):
        assert absent not in words
    assert not any(b"long message" in w for w in words)
    assert all(0 < len(w) <= P.MAX_TOKEN_LENGTH for w in words)


def test_regex_words_are_literals_class_members_and_matching_samples():
    pattern = r"(\d{4})-(0[1-9]|1[0-2])(?:[Tt ](\d\d):(\d\d)(?:Z|[+-]\d\d)?)?"
    words = module_words.regex_words(pattern)
    samples = [w for w in words if re.fullmatch(pattern, w.decode())]
    assert b"0000-01" in samples and b"0000-01T00:00Z" in samples  # minimal, and every part once
    assert any(s.startswith(b"0000-1") for s in samples)  # another alternative of the month
    assert {b"T", b"t", b" ", b"+", b"-", b"Z"} <= set(words)  # small classes and literals
    assert module_words.regex_words(rb"\x00\x01AB[^\x00]") == (b"\x00\x01ABa", b"\x00\x01AB")
    assert module_words.regex_words("(unbalanced") == ()
    assert module_words.regex_words("(?x) a b  # comment", re.VERBOSE) == (b"ab",)


def test_module_words_put_regex_words_first_and_encode_as_utf8():
    import tests.fixtures.hybrid  # noqa: F401 - imported by name so that its loader gives its code

    module = sys.modules["tests.fixtures.hybrid"]
    words = module_words.module_words([module, module])
    assert words[0] == b"0000-01-00"  # the date pattern's minimal sample
    assert b"opensesame" in words and b"december" in words and b"12" in words
    assert len(words) == len(set(words)) <= module_words.MAX_WORDS
    assert words.index(b"0000-01-00") < words.index(b"opensesame")
    assert module_words.code_words(compile("x = 'é'", "<fixture>", "exec")) == ["é".encode()]


def test_a_constant_behind_a_hash_is_reached_through_the_modules_words():
    # counted, not timed: the mutant that writes the word is the 180th measured, whatever the load
    executor = ConcolicExecutor(f"{FIXTURE}:digest_gate", {"mutations": 2000, "mutate_clock": False})
    result = executor.run(b"hello")
    assert result.notes["mutations"] == 2000 and not result.notes["mutations_cut"]
    assert any(executor.measure(c).returned == "open" for c in result.candidates)


def test_the_pattern_matched_against_the_input_is_recorded_and_its_samples_reach_the_branch():
    executor = ConcolicExecutor(f"{FIXTURE}:date_gate", {"mutations": 2000, "mutate_clock": False})
    recorded, _ = executor._symbolic(b"1999-05-05")
    assert list(recorded.patterns) == [(r"(\d{4})-(0[1-9]|1[0-2])-\d\d", re.UNICODE)]
    words = havoc.dictionary(recorded.entries, recorded.compares, recorded.tokens, recorded.patterns)
    assert b"0000-12-00" in words  # the last alternative of the month
    result = executor.run(b"hello")
    returned = {executor.measure(c).returned for c in result.candidates}
    assert "december" in returned


def test_equality_with_a_literal_records_the_literal_when_the_text_differs():
    path = P.start(float("inf"), 100)
    try:
        assert literal_compares.equals("text", "multipart", 1) is False
        assert literal_compares.not_equals(b"GIF8", b"\x89PNG", 0) is True
        assert literal_compares.equals("same", "same", 1) is True  # equal: nothing to learn
        assert literal_compares.equals(b"bytes", "str", 1) is False  # other kinds: not recorded
        assert literal_compares.not_equals(3, "three", 1) is True
    finally:
        P.stop()
    assert list(path.tokens) == ["multipart", b"GIF8"]


def test_a_literal_compared_with_concrete_text_in_instrumented_code_is_a_token():
    executor = ConcolicExecutor(f"{FIXTURE}:kind_gate", {"mutations": 0})
    recorded, _ = executor._symbolic(b"text/plain")
    assert "multipart" in recorded.tokens
    assert executor.measure(b"multipart/x").returned == "multipart"


def test_regex_matches_pair_their_text_with_the_patterns_samples():
    date = (r"(\d{4})-(0[1-9]|1[0-2])-\d\d", 0)
    pairs = input_to_state.regex_pairs([(date, "hello world", None), (date, "1999-05-05", 10), ((rb"x+", 0), "str", None)])
    assert (0, "hello worl", "0000-01-00") in pairs  # a failed match: overwritten, as long as the sample
    assert (0, "1999-05-05", "0000-12-00") in pairs  # a match: replaced by another accepted form
    assert all(isinstance(region, str) for _, region, _ in pairs)  # a bytes pattern pairs with bytes only
    assert input_to_state.propose(b"say hello world", pairs[:1], 4) == [b"say 0000-01-00d"]


def test_regex_children_are_measured_first_and_reach_the_matching_branch():
    executor = ConcolicExecutor(f"{FIXTURE}:date_gate", {"mutations": 8, "mutate_clock": False})
    recorded, _ = executor._symbolic(b"hello")
    assert recorded.matches == [((r"(\d{4})-(0[1-9]|1[0-2])-\d\d", re.UNICODE), "hello", None)]
    result = executor.run(b"hello")
    assert result.notes["regex_children"] >= 2
    assert "december" in {executor.measure(c).returned for c in result.candidates}


def test_text_compared_with_a_literal_and_different_is_recorded_as_a_pair():
    path = P.start(float("inf"), 100)
    try:
        literal_compares.equals("text", "multipart", 1)
        literal_compares.not_equals(b"GIF8", b"\x89PNG", 0)
        literal_compares.equals("same", "same", 1)  # equal: nothing to replace
        literal_compares.equals("a", "b", 1)  # single characters: left to the solver and the byte edits
    finally:
        P.stop()
    assert list(path.texts) == [("text", "multipart"), (b"\x89PNG", b"GIF8")]  # (text, literal)


def test_text_pairs_replace_the_text_in_the_input_lower_cased_if_need_be_and_in_one_direction():
    pairs = [(0, "content-type", "content-length"), (0, "text", "multipart")]
    assert input_to_state.propose(b"Content-Type: text/x", pairs, 8, directed=True) == [
        b"content-length: text/x", b"Content-Type: multipart/x"]
    assert b"Content-Type: text/x" in input_to_state.propose(b"Content-Type: multipart/x", pairs, 8)  # undirected: both ways
    assert input_to_state.propose(b"Content-Type: multipart/x", pairs[1:], 8, directed=True) == []


def test_a_literal_compared_with_concrete_text_is_tried_in_its_place_first():
    executor = ConcolicExecutor(f"{FIXTURE}:kind_gate", {"mutations": 1, "mutate_clock": False})
    result = executor.run(b"text/plain")
    assert result.notes["text_children"] == 1
    assert "multipart" in {executor.measure(c).returned for c in result.candidates}


def test_a_literal_compared_with_pinned_symbolic_text_is_tried_in_its_place():
    executor = ConcolicExecutor(f"{TEXTS}:pinned_kind_gate", {"mutations": 1, "mutate_clock": False})
    recorded, _ = executor._symbolic(b"text/plain")
    assert ("text", "multipart") in recorded.texts
    result = executor.run(b"text/plain")
    assert "multipart" in {executor.measure(c).returned for c in result.candidates}


def test_text_given_to_an_uninstrumented_module_is_replaced_by_that_modules_words():
    executor = ConcolicExecutor(f"{TEXTS}:address_gate", {"mutations": 64, "mutate_clock": False})
    recorded, _ = executor._symbolic(b"hello")
    assert ("ipaddress", "hello") in recorded.callees
    result = executor.run(b"hello")
    assert result.notes["mutations"] == 64 and not result.notes["mutations_cut"]
    assert b"0.0.0.0" in result.candidates  # a word of ipaddress's code, the first address among them
    assert executor.measure(b"0.0.0.0").returned == "address"
    instrumented = ConcolicExecutor(f"{TEXTS}:address_gate", {"modules": ["ipaddress"]})
    assert not instrumented._symbolic(b"hello")[0].callees  # its words are among the constants already
    reexported = ConcolicExecutor(f"{TEXTS}:toml_gate", {"modules": ["tomllib._parser"]})
    assert not reexported._symbolic(b"a = 1")[0].callees  # a function of it reached through its package


def test_a_name_looked_up_with_getattr_is_paired_with_the_names_of_the_same_prefix():
    executor = ConcolicExecutor(f"{TEXTS}:dispatch_gate", {"mutations": 2, "mutate_clock": False})
    recorded, _ = executor._symbolic(b"beta:x")
    assert {("beta", "alpha"), ("beta", "omega")} <= set(recorded.texts)
    result = executor.run(b"beta:x")
    assert {"alpha", "omega"} <= {executor.measure(c).returned for c in result.candidates}


def test_a_text_that_occurs_several_times_is_also_replaced_everywhere_at_once():
    children = input_to_state.propose(b"<data>x</data>", [(0, "data", "date")], 8, directed=True)
    assert children == [b"<date>x</data>", b"<data>x</date>", b"<date>x</date>"]
    assert input_to_state.propose(b"\x00\x00\x00", [(0, 0, 7)], 8, directed=True)[:2] == [b"\x07\x00\x00", b"\x00\x07\x00"]


def test_text_that_lacks_an_affix_is_tried_with_it():
    executor = ConcolicExecutor(f"{TEXTS}:affix_gate", {"mutations": 1, "mutate_clock": False})
    recorded, _ = executor._symbolic(b"name=x")
    assert ("name", "name*") in recorded.texts and "*" in recorded.tokens
    result = executor.run(b"name=x")
    assert "continued" in {executor.measure(c).returned for c in result.candidates}
