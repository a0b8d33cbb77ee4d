"""Seal and verify a real run: agreement with the oracle, and every kind of tampering named."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.evidence import flip_byte, fresh_copy, sealed_run

from symcc_ulfm.errors import EvidenceTampered
from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.evidence.verify import verify

pytestmark = pytest.mark.mpi


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=120)


def first(run, pattern: str) -> str:
    return sorted(p for p in run.glob(pattern) if p.is_file())[0].relative_to(run).as_posix()


def test_sealed_run_verifies_and_agrees_with_the_oracle():
    run = sealed_run()
    result = verify(run)
    assert result["passed"], result["problems"]
    assert result["files_checked"] == len((run / "SHA256SUMS.txt").read_text().splitlines())
    assert result["result_sha256"] == judge(run)["result_sha256"] == result["oracle_result_sha256"]
    assert result["result_sha256"] == json.loads((run / "oracle.json").read_text())["result_sha256"]
    assert subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS.txt"], cwd=run).returncode == 0


def test_cli_oracle_and_verify_print_the_same_result_sha256():
    run = sealed_run()
    oracle = cli("oracle", str(run), "--json")
    checked = cli("verify", str(run), "--json")
    assert oracle.returncode == 0 and checked.returncode == 0, checked.stdout + checked.stderr
    verdict, result = json.loads(oracle.stdout), json.loads(checked.stdout)
    assert {"passed", "result_sha256", "files_checked", "problems"} <= set(result)
    assert verdict["result_sha256"] == result["result_sha256"]


@pytest.mark.parametrize("pattern", [
    "state/policy.json", "state/membership/receipt-1.json", "state/membership/generation-1-layout.json",
    "state/wal/records/*.json", "state/corpus/objects/*", "state/logs/rank-0.jsonl", "state/outcome.json",
    "provenance.json", "oracle.json", "figures/membership.svg", "state/query-store/*/*/*",
])
def test_one_changed_byte_is_named(tmp_path, pattern):
    run = fresh_copy(tmp_path)
    rel = first(run, pattern)
    flip_byte(run / rel, offset=len((run / rel).read_bytes()) // 2)
    result = verify(run)
    assert not result["passed"]
    assert any(p.startswith(f"{rel}: SHA-256 mismatch") for p in result["problems"]), result["problems"]
    if pattern == "state/policy.json":  # the command line prints the same problems (one case: a process each)
        done = cli("verify", str(run))
        assert done.returncode == 1 and rel in done.stdout


@pytest.mark.parametrize("rel", ["extra.txt", "state/corpus/objects/added", "figures/more/deep.png"])
def test_an_added_file_is_named(tmp_path, rel):
    run = fresh_copy(tmp_path)
    (run / rel).parent.mkdir(parents=True, exist_ok=True)
    (run / rel).write_bytes(b"not sealed")
    problems = verify(run)["problems"]
    assert f"{rel}: present but not listed in SHA256SUMS.txt (an added file)" in problems


@pytest.mark.parametrize("pattern", ["state/membership/prepare-1.json", "figures/membership.png",
                                     "state/corpus/claims/*"])
def test_a_removed_file_is_named(tmp_path, pattern):
    run = fresh_copy(tmp_path)
    rel = first(run, pattern)
    (run / rel).unlink()
    result = verify(run)
    assert not result["passed"]
    assert f"{rel}: listed in SHA256SUMS.txt but missing" in result["problems"]


def test_symlinks_are_problems_and_cannot_be_sealed(tmp_path):
    run = fresh_copy(tmp_path)
    os.symlink("provenance.json", run / "alias.json")
    assert any(p.startswith("alias.json: a symlink") for p in verify(run)["problems"])
    with pytest.raises(EvidenceTampered, match="alias.json"):
        seal(run)


def test_ipyparallel_keys_are_never_sealed(tmp_path):
    run = fresh_copy(tmp_path)
    (run / "security").mkdir()
    (run / "security" / "ipcontroller-client.json").write_text("{}")
    with pytest.raises(EvidenceTampered, match="security"):
        seal(run)


@pytest.mark.parametrize("line, why", [
    ("0" * 64 + " provenance.json", "not '<sha256>  <path>'"),
    ("0" * 64 + "  ../outside", "not a plain relative path"),
    ("0" * 64 + "  /etc/passwd", "not a plain relative path"),
    ("0" * 63 + "  provenance.json", "not '<sha256>  <path>'"),
])
def test_sums_file_is_parsed_strictly(tmp_path, line, why):
    run = fresh_copy(tmp_path)
    sums = run / "SHA256SUMS.txt"
    sums.write_text(sums.read_text() + line + "\n")
    problems = verify(run)["problems"]
    assert any(why in p and "SHA256SUMS.txt line" in p for p in problems), problems


def test_duplicate_and_unsorted_lines_are_problems(tmp_path):
    run = fresh_copy(tmp_path)
    sums = run / "SHA256SUMS.txt"
    lines = sums.read_text().splitlines()
    sums.write_text("\n".join([lines[-1], *lines, lines[0]]) + "\n")
    problems = verify(run)["problems"]
    assert any("listed twice" in p for p in problems) and any("out of order" in p for p in problems)


def test_an_unsealed_run_fails(tmp_path):
    run = fresh_copy(tmp_path)
    (run / "SHA256SUMS.txt").unlink()
    assert "SHA256SUMS.txt: missing (the run is not sealed)" in verify(run)["problems"]


def test_a_doctored_wal_resealed_is_still_rejected(tmp_path):
    """Re-sealing after editing the state passes sha256sum -c, but the oracle and the verifier both fail."""
    run = fresh_copy(tmp_path)
    rel = first(run, "state/wal/records/*.json")
    *earlier, last = (run / rel).read_text().splitlines(keepends=True)  # a line per state, the last is current
    record = json.loads(last)
    record["manifest"]["generated"] += 1  # count one more candidate than the worker returned
    (run / rel).write_text("".join(earlier) + json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
    seal(run)
    assert subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS.txt"], cwd=run).returncode == 0
    result = verify(run)
    assert not result["passed"]
    assert any(p.startswith("oracle:") and "checksum" in p for p in result["problems"]), result["problems"]
    assert any(p.startswith("verifier:") and "checksum" in p for p in result["problems"]), result["problems"]
    assert any("oracle.json: records result_sha256" in p for p in result["problems"])
    assert cli("verify", str(run)).returncode == 1


def test_seal_cli_reports_the_file_count(tmp_path):
    run = fresh_copy(tmp_path)
    (run / "SHA256SUMS.txt").unlink()
    done = cli("seal", str(run))
    assert done.returncode == 0 and done.stdout.startswith("sealed ")
    assert verify(run)["passed"]


def test_a_changed_byte_in_any_directory_is_named(tmp_path):
    """One file from every directory of the run, each with one byte changed, all in one verify."""
    run = fresh_copy(tmp_path)
    listed = [line.split("  ", 1)[1] for line in (run / "SHA256SUMS.txt").read_text().splitlines()]
    per_dir: dict[str, str] = {}
    for rel in listed:
        if (run / rel).stat().st_size:
            per_dir.setdefault(rel.rpartition("/")[0], rel)
    for rel in per_dir.values():
        flip_byte(run / rel)
    problems = verify(run)["problems"]
    assert len(per_dir) >= 10
    for rel in per_dir.values():
        assert any(p.startswith(f"{rel}: SHA-256 mismatch") for p in problems), rel
