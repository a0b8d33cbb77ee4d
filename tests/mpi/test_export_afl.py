"""``export`` on a real campaign on a C target (the SymCC stand-in, NOT SymCC, with its afl-cc
twin for coverage) under real ``mpiexec --with-ft ulfm``, seeded from a real AFL++ output
directory: the AFL++ layout is what afl-fuzz takes without a "useless" warning, the libFuzzer
layout names files as libFuzzer does, a relative OUT works.

AFL++ runs a fixed number of executions with a fixed seed (``-E``, ``-s``): far too few to solve the
stand-in's three-byte magic, which the campaign then solves; the campaign searches until its finite
search is exhausted (its deadline is only a bound)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers.mpi import launch
from helpers.symcc import AFL_MISSING, afl_available, afl_twin, stand_in

pytestmark = pytest.mark.mpi
AFL_ENV = {"AFL_SKIP_CPUFREQ": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_NO_UI": "1",
           "AFL_NO_AFFINITY": "1"}


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


@pytest.fixture(scope="module")
def c_run(tmp_path_factory):
    if not afl_available() or shutil.which("afl-fuzz") is None:
        pytest.skip(AFL_MISSING)
    base = tmp_path_factory.mktemp("c-campaign")
    binary, twin = stand_in(base), afl_twin(base)
    (base / "in").mkdir()
    (base / "in" / "zero.bin").write_bytes(b"\x00\x00\x00\x00")
    (base / "in" / "crasher").write_bytes(b"CRSH")
    fuzzed = subprocess.run(["afl-fuzz", "-i", str(base / "in"), "-o", str(base / "afl-out"), "-E", "500", "-s", "0",
                             "--", str(twin)], env={**os.environ, **AFL_ENV}, capture_output=True, timeout=120)
    assert fuzzed.returncode == 0, fuzzed.stdout[-2000:]
    run = launch(base / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--deadline", "120", "--executor", "symcc", "--target", str(binary), "--seeds", str(base / "afl-out"),
                 "--executor-option", f"afl_binary={twin}", "--executor-option", "timeout_s=5")
    assert run.returncode == 0, run.stderr[-3000:] + json.dumps(run.verdict.get("problems"))
    assert json.loads((base / "state" / "outcome.json").read_text())["status"] == "exhausted"
    return base, run, twin


def test_the_afl_layout_is_dense_in_discovery_order_and_afl_fuzz_finds_nothing_useless(c_run):
    base, run, twin = c_run
    done = _cli("export", str(run.state), "exported", "--json", cwd=base)  # a relative OUT
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    out = base / "exported"
    queue = sorted((out / "default" / "queue").iterdir())
    assert result["queue"] == len(queue) > 1
    assert [p.name.split(",", 1)[0] for p in queue] == [f"id:{n:06d}" for n in range(len(queue))]
    seeds = [p for p in queue if ",orig:" in p.name]
    assert seeds == queue[:len(seeds)] and any(p.name.endswith("orig:zero.bin") for p in seeds)
    found = queue[len(seeds):]
    assert found and all(re.fullmatch(r"id:\d{6}(,src:\d{6})?,time:\d+,op:symcc,\+cov", p.name) for p in found)
    times = [int(re.search(r",time:(\d+)", p.name)[1]) for p in found]
    assert times == sorted(times)  # discovery (commit) order
    crashes = [p for p in (out / "default" / "crashes").iterdir() if p.name != "README.txt"]
    assert crashes and all(",sig:11," in p.name for p in crashes)  # CRSH raises SIGSEGV
    crashing = {p.read_bytes() for p in crashes}
    assert b"CRSH" in crashing and not crashing & {p.read_bytes() for p in queue}
    assert all(p.stat().st_size > 0 for p in queue)
    print(f"queue {len(queue)} of {run.verdict['public_objects']} corpus objects; left out {result['skipped']}")
    # AFL++ itself on the exported queue: its dry run names every input that adds nothing "useless"
    dry = subprocess.run(["afl-fuzz", "-i", str(out / "default" / "queue"), "-o", str(base / "afl-again"), "-V", "1",
                          "--", str(twin)], env={**os.environ, **AFL_ENV}, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stdout[-3000:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", dry.stdout)
    useless = re.findall(r"Attempting dry run with '([^']*)'\.\.\.\n[^\n]*\n\[!\] WARNING: No new instrumentation output, "
                         r"test case may be useless", text)
    print(f"afl-fuzz dry run on {len(queue)} exported inputs ({len(seeds)} seeds): {len(useless)} 'useless' "
          f"warnings: {useless}")
    # only a seed can be one: the manifests hold no coverage of theirs to leave a redundant seed out
    assert not [name for name in useless if ",op:symcc," in name], text[-3000:]


def test_the_libfuzzer_layout_names_files_by_sha1(c_run, tmp_path):
    base, run, _ = c_run
    done = _cli("export", str(run.state), str(tmp_path / "lf"), "--layout", "libfuzzer", "--json")
    assert done.returncode == 0, done.stderr
    corpus = list((tmp_path / "lf" / "corpus").iterdir())
    artifacts = list((tmp_path / "lf" / "artifacts").iterdir())
    assert corpus and all(p.name == hashlib.sha1(p.read_bytes()).hexdigest() for p in corpus)
    assert artifacts and all(re.fullmatch(r"(crash|timeout|oom)-[0-9a-f]{40}", p.name) for p in artifacts)
    assert f"crash-{hashlib.sha1(b'CRSH').hexdigest()}" in {p.name for p in artifacts}
    inside = _cli("export", str(run.state), str(run.state / "x"))
    assert inside.returncode == 2 and "inside" in inside.stderr
