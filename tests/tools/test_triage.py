"""Triage on the command line, with real contained executions: an ``explore --out`` directory
read by findings, replay, minimize, export and sarif; replay of a user's file with its
traceback; a measured reproduction rate on a flaky target; a hostile target during minimize;
the stdlib rejections registry (plistlib)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True,
                          timeout=timeout)


TRIGGER = b"(7%(3-3))"  # the tokenizer's documented ZeroDivisionError, with room to shrink
SHIPPED = b"((4000*(3+1))-11)"  # the target's seed: a queue entry that is no finding


@pytest.fixture(scope="module")
def explored(tmp_path_factory) -> Path:
    """An exploration whose finding comes from a seed (measured first, whatever the machine), then
    two runs of counted mutants."""
    out = tmp_path_factory.mktemp("explore") / "out"
    done = cli("explore", "--target", "tokenizer", "--runs", "2", "--executor-option", "mutate_clock=false",
               "--executor-option", f'seeds=["{TRIGGER.hex()}", "{SHIPPED.hex()}"]', "--out", str(out),
               "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stopped"] == "runs", done.stdout
    assert json.loads((out / "explore.json").read_text())["target"] == "tokenizer"
    return out


def finding_of(directory: Path) -> dict:
    listed = cli("findings", str(directory), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [r for r in json.loads(listed.stdout)["findings"]
            if r["signature"].startswith("ZeroDivisionError")]
    assert len(rows) == 1, listed.stdout  # the tokenizer's documented ZeroDivisionError
    assert rows[0]["input_sha256"] == hashlib.sha256(TRIGGER).hexdigest(), rows  # first seen: the seed's
    return rows[0]


def test_explore_out_is_read_by_findings_replay_and_export(explored, tmp_path):
    row = finding_of(explored)
    done = cli("replay", str(explored), row["id"], "--repeat", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "REPRODUCIBLE 3/3" in done.stdout and "Traceback (most recent call last)" in done.stdout
    assert "ZeroDivisionError" in done.stdout and "tokenizer.py" in done.stdout
    record = json.loads((explored / "triage" / "records" / f"replay-{row['id']}.json").read_text())
    assert record["reproduction"]["rate"] == 1.0
    exported = cli("export", str(explored), str(tmp_path / "afl"), "--json")
    assert exported.returncode == 0, exported.stderr
    crashes = os.listdir(tmp_path / "afl" / "default" / "exceptions")
    assert any(f"finding:{row['id']}" in name for name in crashes)
    assert json.loads(exported.stdout)["queue"] >= 1


def test_minimize_shrinks_keeps_the_signature_stores_an_object_and_is_idempotent(explored, tmp_path):
    row = finding_of(explored)
    first = cli("minimize", str(explored), row["id"], "--json")
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    original = (explored / row["input_sha256"]).read_bytes()
    stored = Path(result["object"]).read_bytes()
    assert result["minimized_size"] == len(stored) < len(original)
    assert hashlib.sha256(stored).hexdigest() == result["minimized_sha256"] == Path(result["object"]).name
    assert result["signature"] == row["signature"] and "ddmin+simplify" in result["tools"]
    record = json.loads(Path(result["record"]).read_text())
    assert record["input_sha256"] == row["input_sha256"] and record["minimized_sha256"] == result["minimized_sha256"]
    again = json.loads(cli("minimize", str(explored), row["id"], "--json", "--out", str(tmp_path / "min")).stdout)
    assert again["minimized_sha256"] == result["minimized_sha256"]
    assert (tmp_path / "min").read_bytes() == stored
    # the minimised file, replayed as a file the user has, gives the same signature
    replayed = cli("replay", "--input", str(tmp_path / "min"), "--target", "tokenizer", "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["signature"] == row["signature"]


def test_sarif_of_the_findings(explored, tmp_path):
    row = finding_of(explored)
    out = tmp_path / "findings.sarif"
    done = cli("sarif", str(explored), str(out))
    assert done.returncode == 0, done.stderr
    log = json.loads(out.read_text())
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert run["tool"]["driver"]["name"] == "symcc-ulfm"
    result = next(r for r in run["results"] if r["partialFingerprints"]["symccUlfmFinding/v1"] == row["id"])
    assert result["ruleId"] in rules and run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    assert row["signature"] in result["message"]["text"] and result["level"] in ("error", "warning", "note")
    (location,) = result["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "tokenizer.py"
    assert location["physicalLocation"]["region"]["startLine"] > 0
    attached = run["artifacts"][result["attachments"][0]["artifactLocation"]["index"]]
    assert attached["hashes"]["sha-256"] == row["input_sha256"] == result["properties"]["input_sha256"]
    assert (explored / attached["location"]["uri"]).is_file()
    again = cli("sarif", str(explored), str(out))
    assert again.returncode == 2 and "overwrites nothing" in again.stderr


def test_a_directory_that_is_no_source_is_refused_clearly(tmp_path):
    for command in (["findings", str(tmp_path)], ["replay", str(tmp_path), "abcd"], ["minimize", str(tmp_path), "abcd"],
                    ["export", str(tmp_path), str(tmp_path / "x")], ["sarif", str(tmp_path), str(tmp_path / "s")]):
        done = cli(*command)
        assert done.returncode == 2, (command, done.stderr)
        assert "neither a state directory" in done.stderr and "explore --out" in done.stderr


def test_replay_measures_a_rate_strictly_between_0_and_1_on_a_flaky_target(tmp_path):
    target = tmp_path / "flaky.py"
    target.write_text("import os\n\ndef parse(data):\n    if os.urandom(1)[0] & 1:\n"
                      "        raise RuntimeError('half of the runs')\n    return 'ok'\n")
    (tmp_path / "input").write_bytes(b"x")
    done = cli("replay", "--input", str(tmp_path / "input"), "--target", f"{target}:parse", "--repeat", "24",
               "--min-rate", "0.99", "--json")
    row = json.loads(done.stdout)
    measured = row["reproduction"]
    assert 0 < measured["rate"] < 1 and measured["attempts"] == 24, measured
    assert measured["verdict"] == "flaky" and done.returncode == 1
    assert {o["kind"] for o in row["outcomes"]} == {"ok", "exception"}


def test_minimize_contains_a_hostile_target_that_hangs_and_forks(tmp_path):
    marker = "9876.54321"
    target = tmp_path / "hostile.py"
    target.write_text(f"import os\n\ndef parse(data):\n    if b'H' in data:\n        if os.fork() == 0:\n"
                      f"            os.execv('/bin/sleep', ['sleep', '{marker}'])\n        while True:\n"
                      f"            pass\n    return 'ok'\n")
    (tmp_path / "input").write_bytes(b"abcdHefgh")
    started = time.monotonic()
    done = cli("minimize", "--input", str(tmp_path / "input"), "--target", f"{target}:parse", "--executor-option",
               "exec_timeout_s=0.3", "--max-executions", "12", "--json", timeout=240)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["kind"] == "hang" and row["executions"] <= 13
    assert b"H" in Path(row["out"]).read_bytes() and row["minimized_size"] < 9
    assert time.monotonic() - started < 200
    left = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == f"sleep\0{marker}\0"]
    assert not left, "a process the target forked outlived its sandbox"


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_plistlib_rejections_are_expected_and_an_unexpected_exception_is_a_finding(tmp_path):
    (tmp_path / "binary").write_bytes(b"bplist00" + bytes(40))
    (tmp_path / "date").write_bytes(b"<plist><date>x</date></plist>")
    rejected = cli("replay", "--input", str(tmp_path / "binary"), "--target", "plistlib:loads", "--json")
    assert rejected.returncode == 1 and json.loads(rejected.stdout)["observed"]["detail"] == \
        "expected InvalidFileException"
    unexpected = json.loads(cli("replay", "--input", str(tmp_path / "date"), "--target", "plistlib:loads",
                                "--json").stdout)
    assert unexpected["kind"] == "exception" and unexpected["signature"].startswith("AttributeError")
    off = json.loads(cli("replay", "--input", str(tmp_path / "binary"), "--target", "plistlib:loads",
                         "--executor-option", "stdlib_rejections=false", "--json").stdout)
    assert off["kind"] == "exception" and off["signature"].startswith("InvalidFileException")
    # seeds that reach each rejection (measured first, whatever the machine) and the AttributeError,
    # then counted runs from them
    seeds = [b"bplist00" + bytes(40), b"<plist><", b"<plist><integer>x</integer></plist>",
             (tmp_path / "date").read_bytes()]
    out = tmp_path / "explore"
    explored = cli("explore", "--target", "plistlib:loads", "--runs", "3",
                   "--executor-option", "mutate_clock=false",
                   "--executor-option", f"seeds={json.dumps([s.hex() for s in seeds])}", "--out", str(out),
                   "--json")
    assert explored.returncode == 0, explored.stderr
    result = json.loads(explored.stdout)
    kinds = [f["signature"].split(" ")[0] for f in result["findings"]]
    assert result["stopped"] == "runs" and "AttributeError" in kinds, (result["stopped"], kinds)
    assert not set(kinds) & {"InvalidFileException", "ExpatError", "ValueError"}, kinds


def test_replay_and_minimize_refuse_bad_combinations(tmp_path):
    (tmp_path / "input").write_bytes(b"x")
    for args in (["replay"], ["replay", "--input", str(tmp_path / "input")],
                 ["replay", str(tmp_path), "abcd", "--input", str(tmp_path / "input"), "--target", "tlv"],
                 ["replay", "--input", str(tmp_path / "missing"), "--target", "tlv"],
                 ["replay", "--input", str(tmp_path / "input"), "--target", "tlv", "--repeat", "0"],
                 ["replay", "--input", str(tmp_path / "input"), "--target", "tlv", "--min-rate", "1.5"],
                 ["minimize", "--input", str(tmp_path / "input"), "--target", "tlv"]):
        done = cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
