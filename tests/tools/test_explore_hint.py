"""A Python target that takes ``str``: every input raises the same TypeError, and ``explore``
says so with the wrapper to write; the wrapper it shows, added to the target's file, works."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

TAKES_STR = textwrap.dedent('''
    def parse(text: str) -> str:
        fields = text.split(",")
        if fields[0] == "GET":
            return "get"
        return "other"
''')


def explore(target: str, out, *more: str) -> dict:
    """``explore`` for a few runs of counted mutants: the same search on any machine."""
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "explore", "--target", target, "--runs", "3",
                           "--executor-option", "mutate_clock=false", "--out", str(out), "--json", *more],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_target_taking_str_gets_a_hint_that_works(tmp_path):
    source = tmp_path / "takes_str.py"
    source.write_text(TAKES_STR)
    result = explore(f"{source}:parse", tmp_path / "out")
    hint = result["hint"]
    assert f"all {result['inputs']} inputs raised the same exception, TypeError at takes_str.py:parse:3" in hint
    assert "a bytes-like object is required, not 'str'" in hint
    wrapper = re.search(r"add to \S+:\n((?:    .*\n)+)and run it with --target (\S+)", hint)
    source.write_text(TAKES_STR + "\n\n" + textwrap.dedent(wrapper[1]))
    fixed = explore(wrapper[2], tmp_path / "fixed")
    assert fixed["stopped"] in ("runs", "queue"), fixed
    assert "hint" not in fixed and fixed["findings"] == [] and fixed["novel"] >= 1  # "GET" was found


def test_no_hint_when_some_inputs_run(tmp_path):
    source = tmp_path / "sometimes.py"
    source.write_text("def parse(data):\n    if data[:1] == b'A':\n        return data.decode('latin-1') + 1\n")
    result = explore(f"{source}:parse", tmp_path / "out", "--executor-option", 'seeds=["41", "42"]')
    assert [f["signature"].split()[0] for f in result["findings"]] == ["TypeError"] and "hint" not in result
