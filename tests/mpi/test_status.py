"""Live status of real campaigns under `mpiexec --with-ft ulfm` (``symcc-ulfm status``,
``launch``'s status line, ``stats/fuzzer_stats`` and ``stats/plot_data``) and the wall-time
bound of a campaign around its deadline.

One campaign is started in the background and watched with ``status --json`` while it runs;
the other tests read the state it left (or copies of it) or run their own short campaign.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest
from helpers.mpi import launch, status_json

from symcc_ulfm.launch import json_child as launch_process
from symcc_ulfm.tools.stats_files import PLOT_HEADER

pytestmark = pytest.mark.mpi

CAMPAIGN = ["--ranks", "4", "--warm-spares", "0", "--workers-per-master", "3", "--executor", "simulate",
            "--executor-option", "cost_s=0.05", "--executor-option", "findings=7"]


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symcc_ulfm", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """A campaign started in the background, its status polled while it runs; then what it left."""
    state = tmp_path_factory.mktemp("status") / "state"
    process = launch_process.start(state, [*CAMPAIGN, "--deadline", "8"])
    seen, watch, interrupted = [], None, None
    try:
        limit = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < limit:
            if (state / "policy.json").exists():
                snapshot = status_json(state)
                seen.append(snapshot)
                if watch is None and snapshot["phase"] == "running":
                    # --watch on the running campaign: it must end by itself once the campaign has
                    watch = subprocess.Popen([sys.executable, "-m", "symcc_ulfm", "status", str(state), "--watch",
                                              "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    interrupted = subprocess.Popen([sys.executable, "-m", "symcc_ulfm", "status", str(state),
                                                    "--watch", "0.5", "--json"], stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE, text=True)
                elif interrupted is not None and interrupted.returncode is None and len(seen) % 4 == 0:
                    interrupted.send_signal(signal.SIGINT)  # Ctrl-C while the campaign still runs
                    interrupted.wait(timeout=30)
            time.sleep(0.5)
        done = launch_process.finish(process, timeout=120)
        watched_out = watch.communicate(timeout=30) if watch is not None else None
        interrupted_out = interrupted.communicate(timeout=30) if interrupted is not None else None
    finally:
        launch_process.kill(process)
        for child in (watch, interrupted):
            if child is not None and child.poll() is None:
                child.kill()
    return {"state": state, "seen": seen, "launch": done, "watch": (watch, watched_out),
            "interrupted": (interrupted, interrupted_out)}


def test_status_follows_a_running_campaign(watched):
    assert watched["launch"].returncode == 0, watched["launch"].stderr[-3000:]
    running = [s for s in watched["seen"] if s["running"]]
    assert running, "status never saw the campaign running"
    assert all(s["format"] == "symcc-ulfm-status/1" for s in watched["seen"])
    progress = [s for s in running if s["phase"] == "running" and s["totals"]["analyzed"] > 0]
    assert progress, [s["phase"] for s in running]
    analyzed = [s["totals"]["analyzed"] for s in progress]
    assert analyzed == sorted(analyzed) and analyzed[-1] > analyzed[0]  # it moved while we watched
    live = progress[-1]
    assert live["generation"] == 0 and live["members"]["masters"] == [0] and live["members"]["workers"] == [1, 2, 3]
    assert live["members"]["workers_by_kind"] == {"simulate": [1, 2, 3]}
    assert 0 <= live["deadline_left_s"] <= 8 and live["outcome"] is None
    assert live["rates"]["analyzed_per_s"] > 0 and len(live["ranks_alive"]) >= 1


def test_status_of_the_finished_campaign_matches_findings_and_the_oracle(watched):
    state, verdict = watched["state"], watched["launch"].verdict
    final = status_json(state)
    assert final["phase"] == "finished" and final["outcome"] == "deadline-reached" and not final["running"]
    assert final["deadline_left_s"] is None and final["endpoint_edges"] == verdict["endpoint_edges"]
    t = final["totals"]
    assert (t["analyzed"], t["unique"], t["novel"], t["corpus"]) == (
        verdict["wal_analyzed"], verdict["wal_unique"], verdict["wal_novel"], verdict["public_objects"])
    assert t["generated"] == verdict["wal_generated"]
    listed = json.loads(cli("findings", str(state), "--json").stdout)
    assert listed["unique"] > 0  # findings=7: the finding path ran
    assert (final["findings"]["unique"], final["findings"]["hits"]) == (listed["unique"], listed["hits"])
    assert final["findings"]["by_kind"] == {"exception": listed["unique"]}
    text = cli("status", str(state))
    assert text.returncode == 0 and "finished: deadline-reached" in text.stdout
    assert f"analyzed    {t['analyzed']} inputs" in text.stdout


def test_watch_ends_when_the_campaign_does(watched):
    watch, output = watched["watch"]
    assert watch is not None, "the campaign was never seen running"
    out, err = output
    assert watch.returncode == 0, err
    blocks = [b for b in out.split("\n\n") if b.strip()]
    assert len(blocks) >= 2 and "finished: deadline-reached" in blocks[-1]
    assert "\x1b[" not in out  # not a terminal: blocks one after the other, no redraw


def test_ctrl_c_ends_a_watch_with_exit_0(watched):
    child, (out, err) = watched["interrupted"]
    assert child.returncode == 0, err
    snapshots = [json.loads(line) for line in out.splitlines()]  # one JSON object per redraw
    assert snapshots and snapshots[-1]["running"]  # stopped by Ctrl-C, not by the campaign's end
    assert "Traceback" not in err


def test_no_status_line_without_a_terminal(watched):
    assert "\r\x1b[K" not in watched["launch"].stderr and "analyzed" not in watched["launch"].stderr


def test_status_reads_a_run_directory_and_survives_torn_lines(watched, tmp_path):
    before = status_json(watched["state"])
    run = tmp_path / "run"
    shutil.copytree(watched["state"], run / "state", symlinks=True)
    state = run / "state"
    record = sorted((state / "wal" / "records").iterdir())[0]
    with open(record, "ab") as handle:  # an append cut short: not a state yet
        handle.write(b'{"checksum":"00')
    with open(state / "logs" / "rank-0.jsonl", "ab") as handle:
        handle.write(b'{"event":"commit","t":1')
    after = status_json(run)  # the run directory, as oracle and findings accept it
    assert after["state_dir"] == str(state) and after["unreadable_records"] == 0
    assert after["totals"] == before["totals"] and after["findings"] == before["findings"]


def test_stats_files_read_as_afl_files(watched):
    stats = watched["state"] / "stats"
    fields = {}
    for line in (stats / "fuzzer_stats").read_text().splitlines():
        key, sep, value = line.partition(":")
        assert sep and key.strip() and " " not in key.strip()
        fields[key.strip()] = value.strip()
    final = status_json(watched["state"])
    for key in ("start_time", "last_update", "run_time", "fuzzer_pid", "execs_done", "corpus_count",
                "saved_crashes", "saved_hangs", "edges_found"):
        assert fields[key].isdigit(), (key, fields[key])
    assert int(fields["execs_done"]) == final["totals"]["executions"]
    assert int(fields["corpus_count"]) == final["totals"]["corpus"]
    assert int(fields["saved_crashes"]) == final["saved_crashes"] > 0
    assert int(fields["start_time"]) <= int(fields["last_update"])
    assert fields["campaign_phase"] == "finished" and float(fields["execs_per_sec"]) > 0
    lines = (stats / "plot_data").read_text().splitlines()
    assert lines[0] == PLOT_HEADER
    rows = [[c.strip() for c in line.split(",")] for line in lines[1:]]
    assert len(rows) >= 2 and all(len(r) == 13 for r in rows)
    times = [int(r[0]) for r in rows]
    assert times == sorted(set(times)) and times[-1] <= 8 + 3
    for r in rows:  # numeric columns as afl-plot reads them (map_size is a percentage)
        assert r[6].endswith("%") and all(float(c) >= 0 for c in r[:6] + r[7:])
    total_execs = [int(r[11]) for r in rows]
    assert total_execs == sorted(total_execs) and total_execs[-1] == final["totals"]["executions"]


@pytest.mark.skipif(shutil.which("afl-whatsup") is None, reason="afl-whatsup (AFL++) is not installed")
def test_afl_whatsup_reads_the_state(watched):
    """AFL++'s own summary tool finds stats/fuzzer_stats below the state directory."""
    done = subprocess.run(["afl-whatsup", "-d", str(watched["state"])], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "stats" in done.stdout and "Total execs" in done.stdout, done.stdout


def test_launch_draws_a_status_line_on_a_terminal(tmp_path):
    state = tmp_path / "state"
    pid, fd = pty.fork()
    if pid == 0:  # the child: launch with a terminal as stdout and stderr
        os.execv(sys.executable, [sys.executable, "-m", "symcc_ulfm", "launch", "--state-dir", str(state),
                                  *CAMPAIGN, "--deadline", "5"])
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
    assert len(drawn) >= 2, text[-3000:]  # redrawn in place while the campaign ran
    assert "oracle: PASS" in text


def test_a_campaign_ends_within_its_bound_of_the_deadline(tmp_path):
    """Leases that take a second each, three workers with full pipelines: the campaign ends about
    one execution after its deadline (unstarted leases are returned), not a pipeline later."""
    deadline, cost = 6.0, 1.0
    started = time.time()
    done = launch(tmp_path / "state", *CAMPAIGN[:6], "--executor", "simulate", "--executor-option", f"cost_s={cost}",
                  "--deadline", str(deadline))
    wall = time.time() - started
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads((done.state / "outcome.json").read_text())
    run_limit = cost + 0.25  # simulate's run limit
    window = outcome["ended_at"] - outcome["started_at"]
    assert deadline - 0.5 <= window <= deadline + run_limit + 1.0, window  # README "Wall time": one run past it
    startup = outcome["started_at"] - started
    assert wall <= startup + deadline + run_limit + 1.0 + 10.0, (wall, startup)  # + finalize and conclusion
    returned = done.log_events("leases-returned")
    stops = done.log_events("master-stop")
    assert stops and all(s["abandoned"] == 0 for s in stops)
    assert returned, "no worker held an unstarted lease at the deadline"
