"""core.deadlines: the deadline in force per epoch, extensions that only grow, the record's form."""

from __future__ import annotations

import json

import pytest

from symcc_ulfm.core.canonical import canonical_json, parse_canonical
from symcc_ulfm.core.deadlines import Deadlines, Extension
from symcc_ulfm.errors import PolicyError

SHA = "ab" * 32


def test_each_epoch_runs_to_the_last_extension_from_an_epoch_before_it():
    deadlines = Deadlines(SHA, 15.0).extended(1, 30.0).extended(3, 40.0)
    assert [deadlines.of_epoch(e) for e in range(5)] == [15.0, 30.0, 30.0, 40.0, 40.0]
    assert deadlines.latest == 40.0
    assert Deadlines(SHA, 15.0).latest == 15.0 and Deadlines(SHA, 15.0).of_epoch(7) == 15.0


def test_an_extension_no_job_opened_yet_is_replaced_and_a_shorter_deadline_refused():
    pending = Deadlines(SHA, 15.0).extended(2, 30.0)  # that job never started: epoch 2 again
    assert pending.extended(2, 45.0).extensions == (Extension(2, 45.0),)
    assert pending.extended(2, 30.0) is pending  # the same deadline: nothing to record
    with pytest.raises(PolicyError, match="deadline_s: stored 30, given 20"):
        pending.extended(2, 20.0)


def test_the_record_is_canonical_names_its_policy_and_is_checked_when_read():
    deadlines = Deadlines(SHA, 15.0).extended(1, 30.0)
    value = json.loads(deadlines.to_bytes())
    assert value == {"format": "symcc-ulfm-deadline/1", "policy_sha256": SHA,
                     "extensions": [{"from_epoch": 1, "deadline_s": 30.0}]}
    assert Deadlines.from_json(value, SHA, 15.0) == deadlines
    assert canonical_json(value) == deadlines.to_bytes()
    bad = [
        ({**value, "policy_sha256": "cd" * 32}, "another policy"),
        ({**value, "format": "x"}, "deadline.format"),
        ({**value, "extensions": [{"from_epoch": 1, "deadline_s": 10.0}]}, "longer than 15"),
        ({**value, "extensions": [{"from_epoch": 2, "deadline_s": 20.0}, {"from_epoch": 2, "deadline_s": 30.0}]},
         "from_epoch"),
        ({**value, "extensions": [{"from_epoch": 1}]}, "list of"),
        ({**value, "extra": 1}, "expected an object"),
    ]
    for forged, named in bad:
        with pytest.raises(PolicyError, match=named):
            Deadlines.from_json(forged, SHA, 15.0)


@pytest.mark.parametrize(("raw", "reason"), [
    (b"\x00\xff garbage", "utf-8"), (b'{"a": ', "Expecting value"), (b"", "Expecting value"),
    (b'{"a": NaN}', "NaN is not a JSON number"), (b"[-Infinity]", "-Infinity is not a JSON number"),
    (b"[" * 100_000, "nested too deeply"),
])
def test_a_state_file_that_is_no_canonical_json_is_a_value_error_with_the_reason(raw, reason):
    with pytest.raises(ValueError, match=reason):
        parse_canonical(raw)
    assert parse_canonical(canonical_json({"a": [1, 2.5, None]})) == {"a": [1, 2.5, None]}
