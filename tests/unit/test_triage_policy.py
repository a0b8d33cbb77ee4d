"""The pure triage decisions: reproduction verdicts and input reduction (core.triage_policy,
core.reduction); the stdlib rejections registry resolves to real exception classes."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.reduction import FILL, Reducer
from symcc_ulfm.core.triage_policy import reproduction
from symcc_ulfm.errors import ConfigError
from symcc_ulfm.executors.concolic.tracing.run_outcome import Expected
from symcc_ulfm.targets import rejections


def test_verdicts_follow_the_measured_rate():
    assert reproduction(10, 10).verdict == "reproducible" and reproduction(10, 10).passed
    assert reproduction(8, 10, 0.8).verdict == "reproducible"
    assert reproduction(7, 10, 0.8).verdict == "flaky" and not reproduction(7, 10, 0.8).passed
    assert reproduction(0, 10).verdict == "not reproduced" and reproduction(0, 10).rate == 0
    with pytest.raises(ConfigError):
        reproduction(1, 0)
    with pytest.raises(ConfigError):
        reproduction(1, 1, min_rate=0)


def test_ddmin_keeps_the_bytes_that_matter_and_is_bounded():
    data = b"xxxxAxxxxxxxxBxxxxxxxxxxxxxxxxC"
    reducer = Reducer(lambda d: b"A" in d and b"B" in d, max_tests=500)
    assert reducer.reduce(data) == b"AB"
    again = Reducer(lambda d: b"A" in d and b"B" in d, max_tests=500)
    assert again.reduce(data) == b"AB" and again.tests == reducer.tests  # deterministic
    bounded = Reducer(lambda d: b"A" in d, max_tests=3)
    out = bounded.reduce(data)
    assert bounded.tests == 3 and b"A" in out and len(out) <= len(data)


def test_simplification_replaces_bytes_that_do_not_matter():
    reducer = Reducer(lambda d: len(d) == 4 and d[0] == 0x41, max_tests=100)
    assert reducer.reduce(b"A\x01\x02\x03") == b"A" + bytes([FILL]) * 3


def test_every_registered_rejection_is_a_real_exception_class():
    entries = rejections.registered()
    assert {module for module, _ in entries} >= {"plistlib", "json", "tomllib", "csv", "email", "base64", "zipfile"}
    for names in entries.values():
        Expected(names)  # resolves every module.Class, raising PolicyError otherwise
    assert "plistlib.InvalidFileException" in rejections.expected_for("plistlib", "loads")
    assert rejections.expected_for("zipfile", "ZipFile") == ("zipfile.BadZipFile", "zipfile.LargeZipFile")
    assert rejections.expected_for("mypkg.parser", "loads") == ()  # not the standard library
