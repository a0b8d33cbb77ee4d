"""Findings and their replay (``symcc-ulfm findings`` / ``replay``), from a state, a run or an
``explore --out`` directory (:mod:`.sources`), or of a file the user has (``--input``).

A replay executes an input again with the executor that found it, contained like every
execution (:mod:`.executors.sandbox`), ``repeat`` times, each attempt after the first in a
freshly started sandbox (:meth:`~.executors.base.Executor.renew`: a new process, a new
address-space layout, nothing left by the attempt before), and counts the attempts that gave the
finding's own ``(kind, signature)``; the rate and its verdict are ``core.triage_policy``'s. It
shows what the first matching attempt left to read: the traceback of a Python exception, the
stderr of a binary (a sanitizer's report), the stack a dead child printed. A measured replay of
a finding is recorded in the source's ``triage/records/`` (not in a sealed run directory).

A finding is *confirmed* by its latest replay: confirmed when the rate reached the minimum rate,
not confirmed when it did not, unconfirmed while it has not been replayed. What the search
reported is the target's claim (a Python target's code runs in the processes that report it);
a replay is a new execution in a sandbox that never ran the search, and ``findings --confirm``
replays each finding that has none yet (:data:`~.core.triage_policy.CONFIRM_REPEAT` attempts).

An input quarantined because it killed worker ranks (``core.master.poison``) escaped the
sandbox's parent once already; it is listed but not executed again in this process. A
``protocol`` finding is replayed like any other, with a note: it is what a sandbox child sent
while it served the input, which a reproduction shows again only where the child's reply to it
breaks the protocol too.
"""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path

from ..core import triage_policy
from ..core.finding import finding_id
from ..core.master import poison
from ..core.modes import FileModes
from ..errors import ConfigError, StoreError
from ..executors import create
from ..executors.base import Executor
from ..executors.outcome import Outcome
from .sources import Found, Run, Source, open_source

REPLAY_FORMAT = "symcc-ulfm-replay/2"
PROTOCOL_NOTE = ("a protocol finding is what the sandbox child sent while it served this input (a reply that is "
                 "malformed, inconsistent or oversized), not how the target's execution ended: a replay shows it "
                 "only where the child's reply to a reproduction breaks the protocol too")


def list_findings(path: str | Path, modes: FileModes, confirm: int | None = None,
                  min_rate: float = triage_policy.DEFAULT_MIN_RATE) -> dict:
    """The unique findings of a source, each with its confirmation (:func:`confirmation`), and the
    WAL records that could not be read (``damaged``: their findings are not among them). With
    ``confirm``, each finding without a replay is first replayed ``confirm`` times."""
    source = open_source(path, modes)
    damaged: list[str] = []
    found = source.findings(damaged)
    latest = _replays(source)
    if confirm is not None:
        unreplayed = [item for item in found if item.id not in latest and item.signature != poison.SIGNATURE]
        latest.update((row["id"], row) for row in replay_all(source, unreplayed, confirm, min_rate))
    started = source.started_at
    rows = []
    for item in found:
        unique = item.row.get("unique")
        row = unique.to_json(started) if unique is not None else {k: v for k, v in item.row.items() if k != "unique"}
        row["replay"] = shlex.join(["symcc-ulfm", "replay", str(source.root), item.id])
        row.update(confirmation(latest.get(item.id), item))
        rows.append(row)
    return {"state_dir": str(source.root), "source": source.kind, "unique": len(rows),
            "hits": sum(r["hits"] for r in rows), "findings": rows, "damaged": damaged}


def executor_of(run: Run) -> Executor:
    return create(run.executor, run.target, run.options, isolation=run.isolation)


def attempts(executor: Executor, data: bytes, repeat: int) -> list[tuple[Outcome, str]]:
    """``repeat`` contained executions of ``data``, each after the first in a renewed sandbox."""
    out = []
    for attempt in range(triage_policy.check_repeat(repeat)):
        if attempt:
            executor.renew()
        out.append(executor.reproduce_report(data))
    return out


def judge(observed: list[tuple[Outcome, str]], expected: tuple[str, str] | None, min_rate: float) -> dict:
    """The rate of ``expected`` among the ``observed`` attempts (None: the first finding observed,
    as for a user's file), the distinct outcomes and the report of the first matching attempt."""
    if expected is None:
        expected = next(((o.kind, o.signature) for o, _ in observed if o.is_finding), None)
    hits = [(o, r) for o, r in observed if expected is not None and (o.kind, o.signature) == expected]
    counted = Counter(json_key(o) for o, _ in observed)
    reproduction = triage_policy.reproduction(len(hits), len(observed), min_rate)
    shown = hits[0] if hits else observed[0]
    return {"reproduction": reproduction.to_json(), "reproduced": reproduction.passed,
            "expected": None if expected is None else {"kind": expected[0], "signature": expected[1]},
            "observed": shown[0].to_json(), "report": shown[1],
            "outcomes": [{**dict(key), "attempts": n} for key, n in counted.most_common()]}


def json_key(outcome: Outcome) -> tuple:
    return tuple(sorted(outcome.to_json().items()))


def replay(path: str | Path, key: str, modes: FileModes, repeat: int = triage_policy.DEFAULT_REPEAT,
           min_rate: float = triage_policy.DEFAULT_MIN_RATE) -> dict:
    source = open_source(path, modes)
    return replay_all(source, [source.select(key)], repeat, min_rate)[0]


def replay_all(source: Source, found: list[Found] | None = None, repeat: int = triage_policy.DEFAULT_REPEAT,
               min_rate: float = triage_policy.DEFAULT_MIN_RATE, record: bool = True) -> list[dict]:
    """Replay each finding (default: every unique finding of ``source``) ``repeat`` times."""
    found = source.findings() if found is None else found
    triage_policy.check_min_rate(min_rate)
    results = []
    executor = None
    try:
        for item in found:
            row = {"format": REPLAY_FORMAT, "id": item.id, "kind": item.kind, "signature": item.signature,
                   "input_sha256": item.input_sha256}
            if item.signature == poison.SIGNATURE:
                row.update(reproduced=None, observed=None, reproduction=None, report="",
                           note="not replayed: this input killed worker ranks from inside the sandbox")
            else:
                data = source.read_input(item.input_sha256)
                if executor is not None:
                    executor.renew()
                executor = executor or executor_of(source.run)
                row.update(judge(attempts(executor, data, repeat), (item.kind, item.signature), min_rate))
                if item.kind == "protocol":
                    row["note"] = PROTOCOL_NOTE
                if record:
                    row["recorded"] = _record(source, row)
            results.append(row)
    finally:
        if executor is not None:
            executor.close()
    return results


def replay_input(run: Run, data: bytes, repeat: int = 1, min_rate: float = triage_policy.DEFAULT_MIN_RATE) -> dict:
    """Replay a file the user has with ``run``'s executor: the first finding it gives is the one
    whose rate is measured."""
    triage_policy.check_min_rate(min_rate)
    executor = executor_of(run)
    try:
        row = {"format": REPLAY_FORMAT, "id": None, "kind": None, "signature": None, "input_sha256": None}
        row.update(judge(attempts(executor, data, repeat), None, min_rate))
    finally:
        executor.close()
    if row["expected"] is not None:
        row.update(kind=row["expected"]["kind"], signature=row["expected"]["signature"])
        row["id"] = finding_id(row["kind"], row["signature"])
    return row


def confirmation(replayed: dict | None, item: Found) -> dict:
    """``confirmed`` (True, False, or None: no replay of it, or one of another input) and the
    ``reproduction`` it rests on, from the latest replay of ``item``."""
    measured = replayed.get("reproduction") if isinstance(replayed, dict) else None
    if not isinstance(measured, dict) or replayed.get("input_sha256") not in {item.input_sha256, *item.inputs}:
        return {"confirmed": None, "reproduction": None}
    try:
        reproduction = triage_policy.reproduction(measured["reproduced"], measured["attempts"], measured["min_rate"])
    except (KeyError, TypeError, ValueError, ConfigError):
        return {"confirmed": None, "reproduction": None}
    return {"confirmed": reproduction.passed, "reproduction": reproduction.to_json()}


def _replays(source: Source) -> dict[str, dict]:
    """The recorded replay of each finding, by finding id."""
    return {finding: record for (kind, finding), record in source.triage().read_records().items() if kind == "replay"}


def _record(source: Source, row: dict) -> str | None:
    """Keep a measured replay in the source's triage records; None where it may not be written."""
    if source.sealed is not None:
        return None
    value = {k: row[k] for k in ("format", "id", "kind", "signature", "input_sha256", "reproduction", "observed",
                                 "outcomes")}
    try:
        return str(source.triage().record("replay", row["id"], value))
    except StoreError:
        return None
