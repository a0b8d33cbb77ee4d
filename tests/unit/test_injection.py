"""The injector kills for real at its point, or as the recovery that ends its generation begins."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from symcc_ulfm.core.schedule import INJECTED_EXIT_CODE

_CHILD = """
import sys
from pathlib import Path
from symcc_ulfm.core.schedule import parse_schedule
from symcc_ulfm.runtime.injection import Injector
from symcc_ulfm.store.runlog import RankLog

schedule, stable, calls, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
injector = Injector(parse_schedule(schedule), stable, RankLog(log, stable, 0o600))
for call in calls.split(","):
    kind, generation = call.split(":")
    if kind == "overdue":
        injector.overdue(int(generation))
    else:
        injector.maybe(kind, int(generation))
print("survived", flush=True)
"""


def _run(tmp_path, schedule: str, stable: int, calls: str) -> tuple[int, list[dict]]:
    log = tmp_path / "rank.jsonl"
    done = subprocess.run([sys.executable, "-c", _CHILD, schedule, str(stable), calls, str(log)],
                          capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done.returncode, events


def test_an_event_whose_point_was_never_reached_fires_as_its_recovery_begins(tmp_path):
    # rank 2 was to die holding a lease in generation 0; generation 0 ended (another rank died) first
    code, events = _run(tmp_path, "0:2,0:5", 2, "overdue:0")
    assert code == INJECTED_EXIT_CODE
    assert [(e["event"], e["phase"], e["spec"], e.get("overdue")) for e in events] == [("inject", "work", "0:2", True)]


@pytest.mark.parametrize("schedule, calls", [
    ("1:2", "overdue:0"),           # an event of a later generation waits for it
    ("0:2@recovery", "overdue:0"),  # a recovery-phase event fires inside discovery, not before the shrink
    ("0:5", "overdue:0,work:0"),    # someone else's event
])
def test_overdue_leaves_other_events_alone(tmp_path, schedule, calls):
    code, events = _run(tmp_path, schedule, 2, calls)
    assert code == 0 and events == []


def test_sigkill_at_the_scheduled_point(tmp_path):
    code, events = _run(tmp_path, "0:2@commit!", 2, "work:0,commit:0")
    assert code == -9
    assert [(e["phase"], e["how"]) for e in events] == [("commit", "SIGKILL")]


def test_an_injection_point_that_does_not_exist_fails(tmp_path):
    from symcc_ulfm.core.schedule import PHASES, Phase, parse_schedule
    from symcc_ulfm.runtime.injection import Injector
    from symcc_ulfm.store.runlog import RankLog

    assert PHASES == ("work", "commit", "recovery", "idle") and Phase.COMMIT == "commit"
    injector = Injector(parse_schedule("0:2@commit"), 2, RankLog(tmp_path / "rank-2.jsonl", 2, 0o600))
    with pytest.raises(ValueError, match="'comit' is not an injection point"):
        injector.maybe("comit", 0)
    with pytest.raises(AttributeError):
        Phase.COMIT  # noqa: B018
