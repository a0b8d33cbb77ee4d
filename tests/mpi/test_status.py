"""Live status of real campaigns under `mpiexec --with-ft ulfm` (``symcc-ulfm status``,
``launch``'s status line, ``stats/fuzzer_stats`` and ``stats/plot_data``) and the wall-time
bound of a campaign around its deadline.

One campaign searches a finite simulate space to exhaustion (its counts are the search's, not a
window's). A running campaign is constructed from a copy of its state: without ``outcome.json``,
with ``launch.lock`` held by the test and WAL records put back while ``status --watch`` follows
it, so every state the watchers must see is there until the test moves on. Redraws and plot lines
are driven by explicit clocks; only the deadline test measures wall time, because its bound is
the behaviour.
"""

from __future__ import annotations

import io
import json
import os
import pty
import queue
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.mpi import FINITE, launch, simulate_closure, status_json, wal_accounts

from symcc_ulfm.core.master.rounds import PIPELINE
from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.launch.progress import LaunchProgress
from symcc_ulfm.store.joblock import OwnerLock
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.tools.stats_files import PLOT_HEADER, StatsWriter
from symcc_ulfm.tools.status import ALIVE_S, Tracker

pytestmark = pytest.mark.mpi

LAYOUT = ["--ranks", "4", "--warm-spares", "0", "--workers-per-master", "3"]
OPTIONS = {**FINITE, "findings": 1}  # a finite search; every input a finding
SAFETY_S = 120  # the deadline of the exhausting campaigns: a bound that a passing run never reaches
CAMPAIGN = [*LAYOUT, "--executor", "simulate", "--executor-option", "cost_s=0.05",
            *[arg for key, value in OPTIONS.items() for arg in ("--executor-option", f"{key}={value}")],
            "--deadline", str(SAFETY_S)]
HELD_BACK = 30  # records of the finished run moved aside, then put back while status follows the copy


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The campaign, run until its search is exhausted."""
    run = launch(tmp_path_factory.mktemp("status") / "state", *CAMPAIGN)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def running_copy(finished, directory: Path) -> tuple[Path, bytes]:
    """A copy of the finished state that reads as running once its ``launch.lock`` is held: no
    outcome yet (its bytes are returned, to be put back)."""
    state = directory / "state"
    shutil.copytree(finished.state, state, symlinks=True)
    outcome = (state / "outcome.json").read_bytes()
    (state / "outcome.json").unlink()
    return state, outcome


def put_back(path: Path, data: bytes) -> None:
    """Write a state file whole, as the campaign does (a reader never sees half of it)."""
    partial = path.with_name(f".{path.name}.part")
    partial.write_bytes(data)
    partial.rename(path)


class Lines:
    """A child's stdout, read line by line on a thread, so that a test waits for a line with a bound."""

    def __init__(self, *args: str):
        self.process = subprocess.Popen([sys.executable, "-m", "symcc_ulfm", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, predicate, limit: float = 60.0) -> str:
        """The first line (from here on) for which ``predicate`` holds; fails naming what it saw."""
        end = time.monotonic() + limit
        while (left := end - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                self._queue.put(None)
                break
            self.lines.append(line)
            if predicate(line):
                return line
        raise AssertionError(f"no such line in {limit:g} s; the last ones: {self.lines[-3:]}")

    def end(self, timeout: float = 60.0) -> tuple[int, str, str]:
        """Wait for the child to exit: its exit status, all of its output and its stderr."""
        code = self.process.wait(timeout=timeout)
        while (line := self._queue.get(timeout=timeout)) is not None:
            self.lines.append(line)
        return code, "".join(self.lines), self.process.stderr.read()


def analyzed(line: str) -> int:
    return json.loads(line)["totals"]["analyzed"]


@pytest.fixture(scope="module")
def watched(finished, tmp_path_factory):
    """``status --watch`` (blocks, JSON lines, and one interrupted with Ctrl-C) on a constructed
    running campaign: its first records, then the rest put back, then its end."""
    state, outcome = running_copy(finished, tmp_path_factory.mktemp("watched"))
    aside = state.parent / "later"
    aside.mkdir()
    records = sorted((state / "wal" / "records").glob("*.json"))
    for path in records[-HELD_BACK:]:
        path.rename(aside / path.name)
    owner = OwnerLock(state, FileModes().snapshot)  # launch holds it while the campaign runs
    watchers = {}
    try:
        for name, extra in (("blocks", ()), ("json", ("--json",)), ("interrupted", ("--json",))):
            watchers[name] = Lines("status", str(state), "--watch", "0.2", *extra)
        first = json.loads(watchers["json"].until(bool))
        watchers["blocks"].until(str.strip)
        watchers["interrupted"].until(bool)
        watchers["interrupted"].process.send_signal(signal.SIGINT)  # Ctrl-C while the campaign still runs
        interrupted = watchers["interrupted"].end()
        for path in aside.iterdir():  # more done records, as commits write them
            path.rename(state / "wal" / "records" / path.name)
        moved = json.loads(watchers["json"].until(lambda line: analyzed(line) == len(records)))
        put_back(state / "outcome.json", outcome)  # the campaign ends: its outcome, then launch lets go
        owner.release()
        ended = {name: watchers[name].end() for name in ("blocks", "json")}
    finally:
        owner.release()
        for watcher in watchers.values():
            if watcher.process.poll() is None:
                watcher.process.kill()
    return {"state": state, "records": len(records), "first": first, "moved": moved, "interrupted": interrupted,
            **ended}


def test_status_follows_a_running_campaign(watched):
    first, moved = watched["first"], watched["moved"]
    assert first["phase"] == "running" and first["running"] and first["outcome"] is None
    assert first["totals"]["analyzed"] == watched["records"] - HELD_BACK
    assert moved["totals"]["analyzed"] == watched["records"]  # it followed the new records
    code, out, err = watched["json"]
    snapshots = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and all(s["format"] == "symcc-ulfm-status/1" for s in snapshots), err
    counts = [s["totals"]["analyzed"] for s in snapshots]
    assert counts == sorted(counts) and snapshots[-1]["phase"] == "finished"
    for live in (first, moved):
        assert live["generation"] == 0 and live["members"]["masters"] == [0]
        assert live["members"]["workers"] == [1, 2, 3] and live["members"]["workers_by_kind"] == {"simulate": [1, 2, 3]}
        assert 0 <= live["deadline_left_s"] <= SAFETY_S and live["rates"]["analyzed_per_s"] > 0


def test_status_counts_the_ranks_whose_heartbeat_is_fresh(finished, tmp_path):
    state, _ = running_copy(finished, tmp_path)
    now = time.time()
    for rank in range(4):  # ranks 0 and 2 beat just now, 1 and 3 long ago
        beat = now - 1 if rank % 2 == 0 else now - ALIVE_S - 5
        os.utime(state / "logs" / f"heartbeat-{rank}", (beat, beat))
    assert Tracker(state).poll(now=now, job_running=True)["ranks_alive"] == [0, 2]
    assert Tracker(state).poll(now=now, job_running=False)["ranks_alive"] == []  # nothing runs: nobody beats


def test_status_of_the_finished_campaign_matches_findings_and_the_oracle(finished):
    state, verdict = finished.state, finished.verdict
    final = status_json(state)
    assert final["phase"] == "finished" and final["outcome"] == "exhausted" and not final["running"]
    assert final["deadline_left_s"] is None and final["endpoint_edges"] == verdict["endpoint_edges"]
    t = final["totals"]
    assert (t["analyzed"], t["unique"], t["novel"], t["corpus"]) == (
        verdict["wal_analyzed"], verdict["wal_unique"], verdict["wal_novel"], verdict["public_objects"])
    assert t["generated"] == verdict["wal_generated"]
    closure = simulate_closure(OPTIONS)
    assert (t["analyzed"], t["generated"], t["unique"]) == (closure["analyzed"], closure["generated"], closure["unique"])
    listed = json.loads(cli("findings", str(state), "--json").stdout)
    assert listed["unique"] > 0 and listed["hits"] == t["analyzed"]  # findings=1: every analyzed input is one
    assert (final["findings"]["unique"], final["findings"]["hits"]) == (listed["unique"], listed["hits"])
    assert final["findings"]["by_kind"] == {"exception": listed["unique"]}
    text = cli("status", str(state))
    assert text.returncode == 0 and "finished: exhausted" in text.stdout
    assert f"analyzed    {t['analyzed']} inputs" in text.stdout


def test_watch_ends_when_the_campaign_does(watched):
    code, out, err = watched["blocks"]
    assert code == 0, err
    blocks = [b for b in out.split("\n\n") if b.strip()]
    assert len(blocks) >= 2 and "running" in blocks[0] and "finished: exhausted" in blocks[-1], blocks
    assert "\x1b[" not in out  # not a terminal: blocks one after the other, no redraw


def test_ctrl_c_ends_a_watch_with_exit_0(watched):
    code, out, err = watched["interrupted"]
    assert code == 0, err
    snapshots = [json.loads(line) for line in out.splitlines()]  # one JSON object per redraw
    assert snapshots and snapshots[-1]["running"]  # stopped by Ctrl-C, not by the campaign's end
    assert "Traceback" not in err


def test_no_status_line_without_a_terminal(finished):
    assert "\r\x1b[K" not in finished.stderr and "analyzed" not in finished.stderr


def test_status_reads_a_run_directory_and_survives_torn_lines(finished, tmp_path):
    before = status_json(finished.state)
    run = tmp_path / "run"
    shutil.copytree(finished.state, run / "state", symlinks=True)
    state = run / "state"
    record = sorted((state / "wal" / "records").iterdir())[0]
    with open(record, "ab") as handle:  # an append cut short: not a state yet
        handle.write(b'{"checksum":"00')
    with open(state / "logs" / "rank-0.jsonl", "ab") as handle:
        handle.write(b'{"event":"commit","t":1')
    after = status_json(run)  # the run directory, as oracle and findings accept it
    assert after["state_dir"] == str(state) and after["unreadable_records"] == 0
    assert after["totals"] == before["totals"] and after["findings"] == before["findings"]


def plot_rows(state: Path) -> list[list[str]]:
    lines = (state / "stats" / "plot_data").read_text().splitlines()
    assert lines[0] == PLOT_HEADER
    return [[c.strip() for c in line.split(",")] for line in lines[1:]]


def test_stats_files_read_as_afl_files(finished):
    stats = finished.state / "stats"
    fields = {}
    for line in (stats / "fuzzer_stats").read_text().splitlines():
        key, sep, value = line.partition(":")
        assert sep and key.strip() and " " not in key.strip()
        fields[key.strip()] = value.strip()
    final = status_json(finished.state)
    for key in ("start_time", "last_update", "run_time", "fuzzer_pid", "execs_done", "corpus_count",
                "saved_crashes", "saved_hangs", "edges_found"):
        assert fields[key].isdigit(), (key, fields[key])
    assert int(fields["execs_done"]) == final["totals"]["executions"]
    assert int(fields["corpus_count"]) == final["totals"]["corpus"]
    assert int(fields["saved_crashes"]) == final["saved_crashes"] > 0
    assert int(fields["start_time"]) <= int(fields["last_update"])
    assert fields["campaign_phase"] == "finished" and float(fields["execs_per_sec"]) > 0
    rows = plot_rows(finished.state)
    assert rows and all(len(r) == 13 for r in rows)
    times = [int(r[0]) for r in rows]
    assert times == sorted(set(times)) and times[-1] == int(final["elapsed_s"])  # the last line: the end
    for r in rows:  # numeric columns as afl-plot reads them (map_size is a percentage)
        assert r[6].endswith("%") and all(float(c) >= 0 for c in r[:6] + r[7:])
    total_execs = [int(r[11]) for r in rows]
    assert total_execs == sorted(total_execs) and total_execs[-1] == final["totals"]["executions"]


@pytest.mark.parametrize("ends_s, times", [(8.4, [1, 6, 8]), (6.9, [1, 6])])
def test_plot_data_has_a_line_every_interval_and_one_for_the_end(finished, tmp_path, ends_s, times):
    """Polls at chosen times of a constructed running campaign: a line at the first poll, none until
    ``interval_s`` has passed, and the end's line (in place of a line of the same second)."""
    state, outcome = running_copy(finished, tmp_path)
    shutil.rmtree(state / "stats")
    last = sorted((state / "wal" / "records").glob("*.json"))[-1]
    last.rename(tmp_path / last.name)  # committed after the last poll while running
    begun = json.loads((state / "membership" / "generation-0-snapshot.json").read_text())["epoch_started_at"]
    tracker = Tracker(state)
    writer = StatsWriter(tracker, "symcc-ulfm launch", interval_s=5.0)
    for at in (1.2, 3.0, 6.5):
        writer.write(tracker.poll(now=begun + at, job_running=True))
    (tmp_path / last.name).rename(last)
    put_back(state / "outcome.json", json.dumps({**json.loads(outcome), "ended_at": begun + ends_s}).encode())
    end = tracker.poll(now=begun + ends_s + 1, job_running=False)
    writer.write(end, final=True)
    rows = plot_rows(state)
    assert [int(r[0]) for r in rows] == times
    assert int(rows[-1][11]) == end["totals"]["executions"] and int(rows[-1][3]) == end["totals"]["corpus"]


# a fuzzer kind beside an analysis kind, by count: the fuzzer's slices and the analyses both execute
KINDS = ["--ranks", "3", "--warm-spares", "0", "--workers-per-master", "2", "--executor", "simulate",
         "--executor-option", "cost_s=0.02", "--worker-kinds", "simfuzz:1,simulate:1", "--keep", "novel",
         "--slice", "0.2", "--stop-after", "3", "--deadline", "240"]


def fuzzer_stats(state: Path) -> dict[str, str]:
    fields = {}
    for line in (state / "stats" / "fuzzer_stats").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def test_fuzzer_stats_count_every_kinds_executions_map_coverage_and_the_command(tmp_path):
    """``execs_done`` is the sum of what the WAL's done records account for, of every kind (the
    simfuzz slices' and the simulate analyses'), ``execs_by_kind`` and ``status`` break it down,
    ``bitmap_cvg`` is the published edges over the map size the kinds reported (simulate's edge
    universe, 2048) and ``command_line`` splits back into the launch's own arguments (a state
    directory whose name needs quoting)."""
    state = tmp_path / "a state's dir"
    run = launch(state, *KINDS)
    assert run.returncode == 0, run.stderr[-3000:]
    by_kind, edges = wal_accounts(state)
    assert set(by_kind) == {"simfuzz", "simulate"} and all(by_kind.values()), by_kind
    fields = fuzzer_stats(state)
    assert int(fields["execs_done"]) == sum(by_kind.values())
    assert fields["execs_by_kind"] == ",".join(f"{kind}={n}" for kind, n in sorted(by_kind.items()))
    assert int(fields["edges_found"]) == len(edges) > 0 and fields["total_edges"] == "2048"
    assert fields["bitmap_cvg"] == f"{100 * len(edges) / 2048:.2f}%"
    assert shlex.split(fields["command_line"]) == ["symcc-ulfm", "launch", "--state-dir", str(state), "--json", *KINDS]
    final = status_json(state)
    assert final["totals"]["executions_by_kind"] == by_kind and final["totals"]["edges"] == len(edges)
    block = cli("status", str(state)).stdout
    assert f"executions  {sum(by_kind.values())} (" in block
    assert f"simfuzz {by_kind['simfuzz']}, simulate {by_kind['simulate']}" in block
    last = plot_rows(state)[-1]
    assert last[6] == fields["bitmap_cvg"] and int(last[11]) == sum(by_kind.values()) and int(last[12]) == len(edges)


def test_the_status_line_is_redrawn_every_interval_and_ended_after_the_job(finished, tmp_path):
    state, _ = running_copy(finished, tmp_path)
    now = [0.0]
    stream = io.StringIO()
    progress = LaunchProgress(StateDir(state), "symcc-ulfm launch", line=True, stream=stream, every_s=2.0,
                              clock=lambda: now[0])
    for now[0] in (0.0, 1.0, 1.9, 2.0, 3.5, 4.1):  # drawn at 0, 2 and 4.1
        progress()
    progress.finish()
    drawn = stream.getvalue().split("\r\x1b[K")
    assert drawn[0] == "" and len(drawn) == 1 + 3 + 1 and drawn[-1].endswith("\n")
    assert all("] gen 0  analyzed" in line for line in drawn[1:])


@pytest.mark.skipif(shutil.which("afl-whatsup") is None, reason="afl-whatsup (AFL++) is not installed")
def test_afl_whatsup_reads_the_state(finished):
    """AFL++'s own summary tool finds stats/fuzzer_stats below the state directory."""
    done = subprocess.run(["afl-whatsup", "-d", str(finished.state)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "stats" in done.stdout and "Total execs" in done.stdout, done.stdout


def test_launch_draws_a_status_line_on_a_terminal(tmp_path):
    state = tmp_path / "state"
    pid, fd = pty.fork()
    if pid == 0:  # the child: launch with a terminal as stdout and stderr
        os.execv(sys.executable, [sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state), *CAMPAIGN])
    output = b""
    limit = time.monotonic() + 120
    while time.monotonic() < limit:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
    _, status = os.waitpid(pid, 0)
    text = output.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text[-3000:]
    lines = [part for part in text.split("\r\x1b[K") if part.strip()]
    drawn = [line for line in lines if "] gen 0  analyzed" in line]
    assert drawn, text[-3000:]  # drawn in place (how often: the test above)
    assert "finished: exhausted" in drawn[-1] and "oracle: PASS" in text


def test_a_campaign_ends_within_its_bound_of_the_deadline(tmp_path):
    """Leases that take three seconds each, three workers with full pipelines: past its deadline no
    worker starts a lease (it returns its queued ones), so the campaign ends about one execution
    after the deadline, not a pipeline later. ``--worker-kinds`` makes the workers log each start."""
    deadline, cost = 6.0, 3.0
    started = time.time()
    done = launch(tmp_path / "state", *LAYOUT, "--executor", "simulate", "--executor-option", f"cost_s={cost}",
                  "--worker-kinds", "simulate:3", "--deadline", str(deadline))
    wall = time.time() - started
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads((done.state / "outcome.json").read_text())
    assert outcome["status"] == "deadline-reached"
    policy = json.loads((done.state / "policy.json").read_text())
    snapshot = json.loads((done.state / "membership" / "generation-0-snapshot.json").read_text())
    deadline_at = snapshot["epoch_started_at"] + deadline
    starts = [e["t"] for e in done.log_events("lease-start")]
    # the last start decided before the deadline is logged a moment later; a queued lease run after
    # the one running at the deadline would start a whole run later
    assert starts and max(starts) < deadline_at + cost / 2, (max(starts) - deadline_at)
    returned = done.log_events("leases-returned")
    stops = done.log_events("master-stop")
    assert stops and all(s["abandoned"] == 0 for s in stops)
    assert returned, "no worker held an unstarted lease at the deadline"
    run_limit = cost + 0.25  # simulate's run limit
    window = outcome["ended_at"] - outcome["started_at"]
    assert deadline - 0.5 <= window, window
    # docs/campaigns.md "Wall time": one run past the deadline, then the stop phase; a worker that ran the leases
    # queued in its pipeline would end (PIPELINE - 1) runs later still
    assert window < deadline + (PIPELINE - 1) * cost, (window, deadline + run_limit)
    after = wall - (outcome["started_at"] - started) - window  # finalize, then the endpoint and the oracle
    assert after <= policy["timeouts"]["finalize_s"] + policy["timeouts"]["shutdown_grace_s"], after
