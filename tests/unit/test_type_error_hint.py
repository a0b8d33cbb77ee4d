"""core.finding.same_type_error and type_error_hint: when every input raised one TypeError, and
what the hint tells the user to do (tests/tools/test_explore_hint.py follows it for real)."""

from __future__ import annotations

from symcc_ulfm.core.finding import same_type_error, type_error_hint

TYPE_ERROR = {"kind": "exception", "signature": "TypeError at t.py:parse:2", "hits": 3}


def test_only_one_type_error_of_every_input_is_the_case():
    assert same_type_error([TYPE_ERROR], 3) == TYPE_ERROR
    assert same_type_error([{**TYPE_ERROR, "hits": 2}], 3) is None  # an input ran otherwise
    assert same_type_error([TYPE_ERROR, {**TYPE_ERROR, "signature": "TypeError at t.py:parse:5"}], 3) is None
    assert same_type_error([{**TYPE_ERROR, "signature": "TypeErrorX at t.py:parse:2"}], 3) is None
    assert same_type_error([{**TYPE_ERROR, "signature": "ValueError at t.py:parse:2"}], 3) is None
    assert same_type_error([{**TYPE_ERROR, "kind": "crash"}], 3) is None
    assert same_type_error([], 3) is None and same_type_error([TYPE_ERROR], 0) is None


def test_the_hint_names_the_exception_the_inputs_and_a_wrapper_for_the_target_form():
    row = {**TYPE_ERROR, "detail": "TypeError: a bytes-like object is required, not 'str'"}
    in_file = type_error_hint(row, 3, "dir/t.py:parse")
    assert in_file.startswith("hint: all 3 inputs raised the same exception, TypeError at t.py:parse:2 (TypeError: "
                              "a bytes-like object is required, not 'str')")
    assert "add to dir/t.py:\n    def parse_bytes(data: bytes):\n        return parse(data.decode(\"latin-1\"))\n" \
           "and run it with --target dir/t.py:parse_bytes" in in_file
    in_module = type_error_hint(row, 3, "pkg.mod:Parser.parse")
    assert "from pkg.mod import Parser\n\n    def target(data: bytes):\n        return Parser.parse(" in in_module
    assert "--target wrapper.py:target --executor-option 'modules=[\"pkg.mod\"]'" in in_module
    assert type_error_hint(TYPE_ERROR, 3, "tlv").endswith("Decode the input in a wrapper.")
