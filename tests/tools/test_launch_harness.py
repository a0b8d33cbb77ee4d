"""``launch --harness DIR``: what it derives from a harness directory's manifest (the executor, its
target and options, the default worker kinds), and the bad input it refuses before anything is
written: --target or --executor beside it, an option the harness sets given again, a directory
without a manifest. The builds here are stand-in files (their SHA-256 is all the manifest checks);
tests/mpi/test_harness_campaign.py runs a campaign on real ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from symcc_ulfm.cli.launch_cmd import from_harness
from symcc_ulfm.harness import directory


def made(root, *builds: str) -> directory.Harness:
    made_builds = {}
    for name in builds:
        (root / name).mkdir(parents=True)
        (root / name / "h").write_bytes(f"\x7fELF {name} build".encode())
        made_builds[name] = directory.Build(f"{name}/h", directory.sha256_file(root / name / "h"), "cc 1", [])
    harness = directory.Harness(root, "h", made_builds, ["@@"])
    directory.write(harness)
    return directory.read(root)


def test_without_a_symcc_build_the_campaign_is_native_on_the_sanitizer_build_and_afl_workers(tmp_path):
    harness = made(tmp_path, "afl", "sanitizer", "cmplog")
    executor, target, options, kinds = from_harness(harness, 3)
    assert (executor, target, kinds) == ("native", str(tmp_path / "sanitizer" / "h"), "afl:3")
    assert options["afl_binary"] == str(tmp_path / "afl" / "h") and options["sanitizer_binary"] == target
    assert options["cmplog_binary"] == str(tmp_path / "cmplog" / "h")  # afl-fuzz's -c, through the launcher
    assert options["args"] == ["@@"]
    assert options["harness"] == {"manifest": str(tmp_path / "harness.json"),
                                  "sha256": directory.sha256_file(tmp_path / "harness.json")}


def test_with_a_symcc_build_it_is_the_executor_beside_one_afl_worker(tmp_path):
    harness = made(tmp_path, "afl", "symcc")
    executor, target, options, kinds = from_harness(harness, 3)
    assert (executor, target, kinds) == ("symcc", str(tmp_path / "symcc" / "h"), "afl:1,symcc:2")
    assert "sanitizer_binary" not in options and "cmplog_binary" not in options  # a harness without them
    assert from_harness(made(tmp_path / "afl-only", "afl"), 2)[::3] == ("native", "afl:2")  # the AFL build it runs


def launch(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(tmp_path / "state"),
                           *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "named"), [
    (["--target", "x"], "--harness: --harness DIR names the executor and its target; not with --target"),
    (["--executor", "symcc"], "not with --executor"),
    (["--executor-option", "afl_binary=/bin/true"], "--executor-option: afl_binary is the harness's"),
    (["--executor-option", "cmplog_binary=/bin/true"], "--executor-option: cmplog_binary is the harness's"),
])
def test_what_the_harness_names_is_not_given_again(tmp_path, args, named):
    made(tmp_path / "h", "afl", "cmplog")
    done = launch(tmp_path, "--harness", str(tmp_path / "h"), *args)
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert not (tmp_path / "state").exists()


def test_a_directory_without_a_manifest_is_named(tmp_path):
    done = launch(tmp_path, "--harness", str(tmp_path))
    assert done.returncode == 2 and "no harness.json" in done.stderr, done.stderr
