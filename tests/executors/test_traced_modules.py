"""What a user's target is traced with by default (``targets.traced``): an atheris harness's
``instrument_imports()`` block, an installed package's own modules; ``modules`` replaces both."""

from __future__ import annotations

from pathlib import Path

import pytest

from symcc_ulfm.executors import create
from symcc_ulfm.targets import resolve_target
from symcc_ulfm.tools.explore import explore

HARNESS = str(Path(__file__).resolve().parents[1] / "fixtures" / "atheris_json.py") + ":TestOneInput"
COUNTED = {"mutations": 16, "mutate_clock": False}  # the same search on any machine


def test_an_atheris_harness_is_traced_with_what_it_imports_inside_instrument_imports():
    import json  # noqa: F401 - loaded before the harness: what it names inside the block still counts

    info = resolve_target(HARNESS)
    assert {"json", "json.decoder", "json.scanner"} <= set(info.modules), info.modules
    assert "atheris" not in info.modules and "sys" not in info.modules  # imported outside the block


def test_an_installed_packages_function_is_traced_with_the_packages_modules():
    info = resolve_target("idna:decode")  # idna/__init__ re-exports idna.core's decode
    assert {"idna.core", "idna.idnadata"} <= set(info.modules), info.modules
    assert resolve_target("json:loads").modules == ()  # the standard library's: its own module only


@pytest.mark.parametrize("modules", [None, []], ids=["declared", "modules=[]"])
def test_the_declared_modules_are_covered_and_blamed(tmp_path, modules):
    """The harness catches ``JSONDecodeError`` only, so bytes that are no UTF-8 raise
    ``UnicodeDecodeError`` from inside ``json.loads``: with ``json`` traced the finding names the
    frame in ``json`` that raised it and the coverage holds ``json``'s branches; with the harness
    alone, the harness's line is blamed."""
    options = {**COUNTED, "run_timeout_s": 600} | ({} if modules is None else {"modules": modules})
    executor = create("concolic", HARNESS, options)
    try:
        stats = explore(executor, None, out_dir=tmp_path, runs=60)
    finally:
        executor.close()
    [finding] = [f["signature"] for f in stats["findings"] if f["signature"].startswith("UnicodeDecodeError")]
    if modules is None:
        assert finding.startswith("UnicodeDecodeError at __init__.py:loads:") and stats["edges"] > 40, stats
    else:
        assert finding.startswith("UnicodeDecodeError at atheris_json.py:TestOneInput:") and stats["edges"] < 20, stats
