"""Findings under real `mpiexec --with-ft ulfm`: targets that crash, hang and raise on purpose.

A crash, a hang in C code and an unexpected exception sit behind deep branches of one target;
the campaign must search it to exhaustion with every rank alive, record each as one finding of
the right kind, and `symcc-ulfm replay` must reproduce each. These searches are finite and
solved, not mutated (``mutations=0``: the hybrid phase is bounded in time): a campaign ends
when its search is exhausted, and its deadline is only a bound that a passing run never reaches. An input that escapes containment on
purpose (it kills its worker rank) is quarantined after `poison_deaths` deaths; a master killed
between a findings manifest and its done mark still counts each finding once; a forged finding
record fails the oracle.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from helpers.mpi import launch

from symcc_ulfm.evidence.oracle.judge import judge
from symcc_ulfm.evidence.oracle.rules import canonical, sha256

pytestmark = pytest.mark.mpi

BUGGY = textwrap.dedent('''
    """Three bugs behind two solved comparisons each: a SIGSEGV, a hang in C code, a KeyError."""
    import ctypes
    import time

    TABLE = {"a": 1}

    def parse(data: bytes) -> str:
        if len(data) < 8:
            return "short"
        if data[:4] != b"FIND":
            return "bad magic"
        op = data[4]
        arg = int.from_bytes(data[5:7], "big")
        if op == 0x43:
            if arg == 0x1234:
                return ctypes.string_at(0x10 + data[7], 1).hex()  # SIGSEGV
            return "c"
        if op == 0x48:
            if arg == 0x4242:
                time.sleep(3600)  # stuck in C code: only the sandbox's kill ends it
            return "h"
        if op == 0x45:
            if arg == 0x0007:
                return str(TABLE["b"])  # KeyError
            return "e"
        return "ok"
''')
SEED = b"FIND" + bytes(4)
KINDS = {"crash": "SIGSEGV at buggy.py:parse:", "hang": "hang in buggy.py:parse", "exception": "KeyError at buggy.py:parse:"}


def _target(tmp_path, name: str, source: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return f"{path}:parse"


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=timeout)


def _wal_findings(state) -> set[tuple[str, str, str]]:
    out = set()
    for path in (state / "wal" / "records").glob("*.json"):
        record = json.loads(path.read_bytes().split(b"\n")[-2])
        if record["state"] == "done":
            out |= {(f["kind"], f["signature"], f["sha256"]) for f in record["manifest"]["findings"]}
    return out


SOLVED = ["--executor-option", "mutations=0"]
SAFETY_DEADLINE = "300"


def _status(run) -> str:
    return json.loads((run.state / "outcome.json").read_text())["status"]


@pytest.fixture(scope="module")
def buggy_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("buggy")
    target = _target(tmp_path, "buggy", BUGGY)
    run = launch(tmp_path / "state", "--ranks", "6", "--warm-spares", "1", "--workers-per-master", "2",
                 "--failure-schedule", "", "--deadline", SAFETY_DEADLINE, "--target", target, *SOLVED,
                 "--executor-option", "exec_timeout_s=0.5", "--executor-option", f"seeds={json.dumps([SEED.hex()])}")
    return run


def test_crash_hang_and_exception_are_found_once_each_and_no_rank_is_lost(buggy_run):
    v = buggy_run.verdict
    assert buggy_run.returncode == 0, buggy_run.stderr + json.dumps(v.get("problems"))
    assert _status(buggy_run) == "exhausted"  # the whole search, not what fit into a window
    assert v["passed"] and v["receipts"] == [] and v["final_generation"] == 0, "the target killed no rank"
    found = {f["kind"]: f for f in v["findings"]}
    assert set(found) == set(KINDS), v["findings"]
    for kind, prefix in KINDS.items():
        assert found[kind]["signature"].startswith(prefix)
    assert v["findings_unique"] == 3 and v["findings_hits"] == len(_wal_findings(buggy_run.state))
    listed = json.loads(_cli("findings", str(buggy_run.state), "--json").stdout)
    assert {f["kind"] for f in listed["findings"]} == set(KINDS) and listed["unique"] == 3
    for row in listed["findings"]:
        assert (buggy_run.state / "corpus" / "objects" / row["input_sha256"]).is_file()
    sandboxes = [e for e in buggy_run.log_events("commit") if e["findings"]]
    assert sandboxes, "findings travel in commits"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_replay_reproduces_each_finding(buggy_run, kind):
    listed = json.loads(_cli("findings", str(buggy_run.state), "--json").stdout)
    [row] = [f for f in listed["findings"] if f["kind"] == kind]
    started = time.monotonic()
    done = _cli("replay", str(buggy_run.state), row["id"], "--json", "--repeat", "3")  # a hang costs its timeout
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = json.loads(done.stdout)
    assert replayed["reproduced"] is True and replayed["observed"]["kind"] == kind
    assert time.monotonic() - started < 60


def test_a_forged_finding_record_fails_the_oracle(buggy_run, tmp_path):
    """A forger who recomputes the record's checksum is still caught by what the finding claims."""
    state = tmp_path / "state"
    shutil.copytree(buggy_run.state, state, symlinks=True)
    for path in sorted((state / "wal" / "records").glob("*.json")):
        lines = path.read_bytes().split(b"\n")
        record = json.loads(lines[-2])
        if record["state"] == "done" and record["manifest"]["findings"]:
            record["manifest"]["findings"][0]["sha256"] = "0" * 64  # an input that is nowhere
            body = {k: v for k, v in record.items() if k != "checksum"}
            record["checksum"] = sha256(canonical(body))
            lines[-2] = canonical(record)
            path.write_bytes(b"\n".join(lines))
            break
    verdict = judge(state)
    assert not verdict["passed"]
    assert any("finding names 000000000000, neither the record's input nor one of its objects" in p
               for p in verdict["problems"]), verdict["problems"]


POISON_INPUT = b"KILL!!!!"
POISON = textwrap.dedent(f'''
    """Kills the worker rank that owns its sandbox (the parent of the sandbox's fork server) on one
    input, chosen by a digest so that no other input leads the search to it."""
    import hashlib
    import os
    import signal

    def parse(data: bytes) -> str:
        if hashlib.sha256(data).hexdigest() == "{hashlib.sha256(POISON_INPUT).hexdigest()}":
            with open(f"/proc/{{os.getppid()}}/stat") as stat:
                rank = int(stat.read().rsplit(")", 1)[1].split()[1])
            os.kill(rank, signal.SIGKILL)  # escapes the sandbox on purpose
        if data[:1] == b"x":
            return "x"
        return "other"
''')


def test_a_poison_input_is_quarantined_after_it_killed_two_workers(tmp_path):
    """Without isolation (``--isolation none``; isolated, the target sees no process outside its
    sandbox: tests/mpi/test_hostile_campaign.py), or where the OOM killer takes the rank."""
    target = _target(tmp_path, "poison", POISON)
    seeds = json.dumps([POISON_INPUT.hex(), b"benign!!".hex()])
    run = launch(tmp_path / "state", "--ranks", "8", "--warm-spares", "2", "--workers-per-master", "2",
                 "--failure-schedule", "", "--deadline", SAFETY_DEADLINE, "--target", target, "--isolation", "none",
                 *SOLVED, "--executor-option", f"seeds={seeds}")
    v = run.verdict
    assert run.returncode == 0, run.stderr + json.dumps(v.get("problems"))
    assert _status(run) == "exhausted"  # which needs the poison input settled: quarantined
    assert len(v["receipts"]) == 2, v["receipts"]  # two workers killed, then never again
    quarantined = run.log_events("input-quarantined")
    assert len(quarantined) == 1 and quarantined[0]["strikes"] == 2
    [poison] = [f for f in v["findings"] if f["kind"] == "crash"]
    assert poison["signature"] == "worker killed while executing this input (escaped containment)"
    records = [json.loads(p.read_bytes().split(b"\n")[-2]) for p in (run.state / "wal" / "records").glob("*.json")]
    [record] = [r for r in records if r["manifest"] and "quarantine" in r["manifest"]]
    assert record["state"] == "done" and len(record["history"]) == 2, "leased twice to a worker, then settled"
    assert {s["worker"] for s in record["manifest"]["quarantine"]["strikes"]} == {
        m for r in v["receipts"] for m in r["missing"]}
    replay = json.loads(_cli("replay", str(run.state), record["input_hash"], "--json").stdout)
    assert replay["reproduced"] is None and "not replayed" in replay["note"]


@pytest.mark.slow  # the same replay of a manifest as test_runtime's, with findings in it (22 s)
def test_a_master_killed_between_a_findings_manifest_and_done_counts_each_finding_once(tmp_path):
    target = _target(tmp_path, "buggy", BUGGY)
    # every seed is one solved comparison away from a finding, so the first commit rounds hold findings
    seeds = [(b"FINDC" + (0x1233 + i).to_bytes(2, "big") + bytes([i])).hex() for i in range(4)]
    seeds += [(b"FINDE" + (0x0006 + 2 * i).to_bytes(2, "big") + bytes([i])).hex() for i in range(4)]
    run = launch(tmp_path / "state", "--failure-schedule", "0:4@commit", "--stop-after", "2", "--deadline", "120",
                 "--target", target, "--executor-option", "exec_timeout_s=0.5",
                 "--executor-option", f"seeds={json.dumps(seeds)}")
    v = run.verdict
    assert run.returncode == 0, run.stderr + json.dumps(v.get("problems"))
    assert run.outcome == "budget-reached"
    assert v["receipts"] == [{"generation": 1, "missing": [4]}]
    occurrences = _wal_findings(run.state)
    assert v["findings_hits"] == len(occurrences) and v["findings_unique"] == len({o[:2] for o in occurrences}) >= 2
    listed = json.loads(_cli("findings", str(run.state), "--json").stdout)
    assert listed["hits"] == len(occurrences)


AFTER_THE_JOB = textwrap.dedent('''
    """Fine during the campaign; {how} on every input once the job has ended (outcome.json exists),
    i.e. exactly when launch measures the final corpus."""
    import ctypes
    import os
    import time

    def parse(data: bytes) -> str:
        if os.path.exists({outcome!r}):
            {action}
        return "ok" if data[:1] == b"o" else "other"
''')


@pytest.mark.parametrize("how, action", [("segfaults", "ctypes.string_at(0x10, 1)"), ("hangs in C", "time.sleep(3600)")])
def test_launch_prints_a_verdict_when_the_target_fails_at_coverage_time(tmp_path, how, action):
    state = tmp_path / "state"
    target = _target(tmp_path, "late", AFTER_THE_JOB.format(how=how, outcome=str(state / "outcome.json"), action=action))
    started = time.monotonic()
    run = launch(state, "--ranks", "4", "--warm-spares", "0", "--workers-per-master", "3", "--failure-schedule", "",
                 "--deadline", "4", "--target", target, "--executor-option", "exec_timeout_s=0.5",
                 "--timeout", "endpoint_s=4")
    assert run.returncode == 0, run.stderr + json.dumps(run.verdict.get("problems"))
    assert run.verdict["passed"] and time.monotonic() - started < 90
    endpoint = json.loads((state / "endpoint.json").read_text())
    # every input fails now, and the budget starts once the executor is ready: at least the first is measured
    assert endpoint["findings_on_replay"] == endpoint["objects"] >= 1, endpoint


def test_export_writes_the_afl_layout_and_refuses_to_overwrite(buggy_run, tmp_path):
    out = tmp_path / "afl"
    done = _cli("export", str(buggy_run.state), str(out), "--layout", "afl", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    instance = out / "default"
    queue, crashes, hangs, exceptions = (sorted(p for p in (instance / d).iterdir() if p.name != "README.txt")
                                         for d in ("queue", "crashes", "hangs", "exceptions"))
    hits = {f["kind"]: f["hits"] for f in buggy_run.verdict["findings"]}
    assert result["queue"] == len(queue) and result["hangs"] == len(hangs) == hits["hang"]
    assert result["crashes"] == len(crashes) == hits["crash"] and len(exceptions) == hits["exception"]
    assert [p.name.split(",", 1)[0] for p in queue] == [f"id:{n:06d}" for n in range(len(queue))]  # dense
    assert queue[0].name == f"id:000000,time:0,execs:0,orig:seed-{hashlib.sha256(SEED).hexdigest()[:16]}"
    assert queue[0].read_bytes() == SEED
    assert all(p.name.endswith(",+cov") and ",op:" in p.name for p in queue[1:])
    assert all(",sig:11," in p.name for p in crashes) and (instance / "crashes" / "README.txt").is_file()
    assert all(",exc:KeyError," in p.name for p in exceptions)
    assert not any("sig:00" in p.name for p in (*crashes, *hangs, *exceptions))
    index = json.loads((out / "symcc-ulfm-export.json").read_text())["files"]
    for path in (*queue, *crashes, *hangs, *exceptions):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == index[str(path.relative_to(out))]["sha256"]
    findings = {index[str(p.relative_to(out))]["sha256"] for p in (*crashes, *hangs, *exceptions)}
    assert not findings & {index[str(p.relative_to(out))]["sha256"] for p in queue}  # no crasher in the queue
    assert all(p.stat().st_size > 0 for p in queue)
    again = _cli("export", str(buggy_run.state), str(out))
    assert again.returncode == 2 and "overwrites nothing" in again.stderr


def test_launch_takes_seeds_from_a_directory(tmp_path):
    target = _target(tmp_path, "buggy", BUGGY)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "one").write_bytes(SEED)
    (seeds / "two").write_bytes(b"FINDE\x00\x06\x00")
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--deadline", "4", "--target", target, "--seeds", str(seeds), "--executor-option", "exec_timeout_s=0.5")
    assert run.returncode == 0, run.stderr + json.dumps(run.verdict.get("problems"))
    claims = run.state / "corpus" / "claims"
    published = {hashlib.sha256(d).hexdigest() for d in (SEED, b"FINDE\x00\x06\x00")}
    assert {p.name for p in claims.iterdir() if p.read_bytes() == b"seed"} == published
    assert run.verdict["injected"] == [] and run.verdict["receipts"] == [], "no failure unless a schedule asks"


SMALL = textwrap.dedent('''
    def parse(data: bytes) -> str:
        if data[:1] == b"A":
            if data[1:2] == b"B":
                return "ab"
            return "a"
        return "other"
''')


def test_an_exhausted_search_stops_early_and_a_resume_with_new_seeds_continues_it(tmp_path):
    target = _target(tmp_path, "small", SMALL)
    args = ["--ranks", "6", "--warm-spares", "1", "--workers-per-master", "2", "--deadline", SAFETY_DEADLINE,
            "--target", target]
    first = launch(tmp_path / "state", *args, "--executor-option", f"seeds={json.dumps([b'xx'.hex()])}")
    v = first.verdict
    assert first.returncode == 0, first.stderr + json.dumps(v.get("problems"))
    assert _status(first) == "exhausted"
    assert any("exhausted" in n and "before the deadline" in n for n in v["notes"])
    analyzed = v["wal_analyzed"]
    stops = {e["rank"]: e["reason"] for e in first.log_events("worker-stop")}
    assert set(stops.values()) == {"exhausted"} and sorted(stops) == [1, 2, 4]
    seeds = tmp_path / "more"
    seeds.mkdir()
    (seeds / "new").write_bytes(b"Zq")
    again = launch(first.state, *args, "--executor-option", f"seeds={json.dumps([b'xx'.hex()])}", "--resume",
                   "--seeds", str(seeds))
    assert again.returncode == 0, again.stderr + json.dumps(again.verdict.get("problems"))
    assert again.verdict["epochs"] == 2 and again.verdict["wal_analyzed"] > analyzed
    assert _status(first) == "exhausted"


def test_run_to_deadline_keeps_an_exhausted_campaign_up(tmp_path):
    target = _target(tmp_path, "small", SMALL)
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--deadline", "5", "--target", target, "--run-to-deadline")
    assert run.returncode == 0, run.stderr
    assert json.loads((run.state / "outcome.json").read_text())["status"] == "deadline-reached"
    state = tmp_path / "forged"
    shutil.copytree(run.state, state, symlinks=True)
    outcome = json.loads((state / "outcome.json").read_text())
    (state / "outcome.json").write_text(json.dumps({**outcome, "status": "exhausted"}))
    assert "outcome.json says exhausted, but the policy runs to the deadline" in judge(state)["problems"]


TAKES_STR = textwrap.dedent('''
    def parse(text: str) -> str:
        fields = text.split(",")
        return "get" if fields[0] == "GET" else "other"
''')


def test_a_target_taking_str_gets_a_hint_in_the_summary(tmp_path):
    target = _target(tmp_path, "takes_str", TAKES_STR)
    run = launch(tmp_path / "state", "--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2",
                 "--deadline", SAFETY_DEADLINE, "--target", target, *SOLVED)
    assert run.returncode == 0, run.stderr
    assert _status(run) == "exhausted"  # every input analyzed: each raised the TypeError
    hint = run.verdict["hint"]
    assert f"all {run.verdict['public_objects']} inputs raised the same exception, TypeError at takes_str.py:parse:" \
           in hint and "a bytes-like object is required, not 'str'" in hint
    assert f"--target {tmp_path / 'takes_str.py'}:parse_bytes" in hint
