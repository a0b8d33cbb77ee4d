"""Reading the rank logs (``store.runlog``): what the writer wrote, complete lines only, by time."""

from __future__ import annotations

import json
import os

import pytest

from symcc_ulfm.errors import StoreError
from symcc_ulfm.store.runlog import Event, LogFollower, RankLog, read_events, read_log


def test_what_the_writer_writes_the_reader_reads(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    first, second = RankLog(logs / "rank-0.jsonl", 0, 0o600), RankLog(logs / "rank-1.jsonl", 1, 0o600)
    second.event(Event.STARTUP, pid=11)
    first.event(Event.STARTUP, pid=10)
    first.event(Event.COMMIT, work_hash="ab")
    for log in (first, second):
        log.close()
    assert '"event":"startup"' in (logs / "rank-0.jsonl").read_text()  # a name is written as plain text
    events = read_events(logs)
    assert [(e["rank"], e["event"]) for e in events] == [(1, "startup"), (0, "startup"), (0, "commit")]
    assert [e["rank"] for e in read_events(logs, Event.STARTUP)] == [1, 0]
    assert [e["work_hash"] for e in read_events(logs, Event.COMMIT)] == ["ab"]
    assert [e["pid"] for e in read_log(logs / "rank-0.jsonl") if e["event"] == Event.STARTUP] == [10]


def test_torn_tails_and_foreign_lines_are_not_events(tmp_path):
    log = tmp_path / "rank-3.jsonl"
    log.write_text('{"t": 2, "rank": 3, "event": "commit"}\nnot json\n[1, 2]\n{"t": 3, "rank": 3, "event": "in')
    assert read_log(log) == [{"t": 2, "rank": 3, "event": "commit"}]
    assert read_log(tmp_path / "rank-9.jsonl") == [] and read_events(tmp_path / "missing") == []


def test_the_follower_returns_each_line_once(tmp_path):
    log = tmp_path / "rank-0.jsonl"
    log.write_text(json.dumps({"t": 1, "event": "startup"}) + '\n{"t": 2, "ev')
    follower = LogFollower(tmp_path)
    assert [e["t"] for e in follower.poll()] == [1]
    assert follower.poll() == []
    with open(log, "a") as handle:
        handle.write('ent": "commit"}\n')
    assert [e["event"] for e in follower.poll()] == ["commit"]


def test_a_log_that_is_not_a_regular_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "rank-0.jsonl")
    with pytest.raises(StoreError, match="not a regular file"):
        read_events(tmp_path)
    with pytest.raises(AttributeError):
        Event.COMIT  # noqa: B018 - a misspelt event name fails
