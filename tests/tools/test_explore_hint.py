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


FLAGGED = "def parse(data):\n    if data[:2] != b'FZ':\n        return None\n    return len(data) > 3 and data[2] == 7\n"


def test_seeds_that_all_take_the_same_shallow_path_are_reported_as_afl_would(tmp_path):
    """Three seeds the target rejects at its first check reach what one of them reaches: two are
    "useless" as AFL++'s dry run says, and ``explore`` warns that all take the same path; seeds
    that pass the check are not."""
    source = tmp_path / "flagged.py"
    source.write_text(FLAGGED)
    rejected = ["--executor-option", 'seeds=["41", "42", "4343"]']
    result = explore(f"{source}:parse", tmp_path / "out", *rejected)
    assert (result["seeds"], result["useless_seeds"]) == (3, 2) and result["seed_coverage_ids"] > 0, result
    text = subprocess.run([sys.executable, "-m", "symcc_ulfm", "explore", "--target", f"{source}:parse", "--runs", "1",
                           "--executor-option", "mutate_clock=false", "--out", str(tmp_path / "text"), *rejected],
                          capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "warning: 2 of 3 seeds reach no coverage the seeds before them did not" in text.stdout
    assert "all 3 take the same path" in text.stdout
    passing = explore(f"{source}:parse", tmp_path / "passing", "--executor-option", 'seeds=["41", "465a0007"]')
    assert (passing["seeds"], passing["useless_seeds"]) == (2, 0), passing


def test_launch_says_the_same_of_its_seeds_before_it_starts(tmp_path):
    """``launch``'s probe of the executor (contained, before anything is written) measures the seeds
    as AFL++'s dry run does; ``launch`` prints what it found (cli/launch_cmd.py)."""
    from symcc_ulfm.core.policy import Policy
    from symcc_ulfm.launch.prepare import check_executor

    source = tmp_path / "flagged.py"
    source.write_text(FLAGGED)
    policy = Policy(executor="concolic", target=f"{source}:parse")
    note = check_executor(policy, [b"A", b"B", b"CC"]).seeds_note
    assert note is not None and note.startswith("warning: 2 of 3 seeds") and "all 3 take the same path" in note
    assert check_executor(policy, [b"A", b"FZ\x00\x07"]).seeds_note is None
