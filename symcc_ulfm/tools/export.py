"""``symcc-ulfm export DIR OUT --layout afl|libfuzzer``: a campaign's corpus (or an ``explore
--out`` directory's inputs) as AFL++ or libFuzzer lays one out, to go on fuzzing it with them or
to hand its findings over.

What is exported is what those tools keep, not the whole corpus: the *queue* is the seeds and the
inputs that added coverage when they were committed (the manifest's ``novel``), in discovery
order (seeds in the order recorded, then each committed input in the order its record was
committed, ``commit`` events of the rank logs); never the empty input or one larger than AFL's
``MAX_FILE`` (AFL++ refuses both), and never an input of a finding. Findings go where the tools
put theirs. A corpus of ``--keep all`` holds every distinct candidate; those that added nothing
stay out of the queue (AFL++ calls each of them "useless" at its dry run), and so does a found
input whose coverage the inputs found after it hold between them (``subsumed``: AFL++ runs an
``-i`` directory newest first, :func:`_useful`).

``--layout afl`` writes one AFL++ instance, ``OUT/default/``:

* ``queue/id:NNNNNN,...``: dense ids from 000000 in discovery order; a seed is
  ``id:N,time:0,execs:0,orig:NAME`` (NAME: the file it was read from, ``executors.seed_dirs``,
  or ``seed-<sha256 prefix>`` for the target's own seeds); a found input is
  ``id:N,src:M,time:MS,op:OP,+cov`` with ``src`` the queue id of the input it was derived from
  when that one is in the queue, ``time`` milliseconds since the campaign's first event and ``op``
  how it was found: ``concolic`` (a solved branch of the Python engine), ``havoc`` (its hybrid
  phase's mutants, or the havoc fuzzer), ``symcc``, ``afl``;
* ``crashes/id:N,sig:NN,...``: crash and oom inputs; ``sig:NN`` is the real signal number when the
  finding names a signal, and absent otherwise (an abnormal exit, a quarantined input), never
  ``sig:00``; a ``README.txt`` says where they come from, as AFL++ writes one;
* ``hangs/id:N,...``: inputs of hangs;
* ``exceptions/id:N,exc:TYPE,...``: uncaught Python exceptions (AFL++ has no such directory; a
  Python fuzzer such as atheris calls them crashes).

``--layout libfuzzer`` writes ``OUT/corpus/<sha1>`` (the queue's inputs, named as libFuzzer names
its corpus files) and ``OUT/artifacts/crash-<sha1>`` (crashes and exceptions, as libFuzzer and
atheris report both), ``timeout-<sha1>`` (hangs), ``oom-<sha1>``.

An ``explore --out`` directory keeps no commit order or coverage: its queue is its seeds in the
order explore read them, then the other inputs it kept by SHA-256 (``op:explore``).

Either way ``OUT/symcc-ulfm-export.json`` maps every file written to its corpus object's SHA-256,
its finding and how it was found. ``OUT`` (relative to the working directory or absolute) must not
exist yet, and must not be inside the campaign's state or run directory: nothing is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.modes import FileModes
from ..errors import ConfigError
from ..evidence.rundir import enclosing_run
from ..executors.fuzzers.afl_sync import AFL_MAX_FILE
from ..store.atomic import write_new
from ..store.corpus import Corpus
from ..store.dirs import ensure_dir
from ..store.paths import StateDir
from ..store.runlog import Event, read_events
from ..store.seed_record import read_seed_names
from ..store.wal import WorkWAL
from .sources import ExploreSource, Found, Source, StateSource, open_source

LAYOUTS = ("afl", "libfuzzer")
INDEX = "symcc-ulfm-export.json"
INDEX_FORMAT = "symcc-ulfm-export/1"
_FILE_MODE = 0o644
_DIR_MODE = 0o755
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._+=-]")
_MAX_ORIG = 96  # of the orig: part, so that a name stays well under NAME_MAX


@dataclass(frozen=True)
class Entry:
    """One input of the queue, in discovery order."""

    sha256: str
    seed_name: str | None  # a seed's orig: name; None for a found input
    parent: str | None  # SHA-256 of the input it was derived from
    op: str | None
    time_ms: int | None
    coverage: frozenset[int] = frozenset()  # as measured when it was committed (found inputs only)


def export(path: str | Path, out: str | Path, modes: FileModes, layout: str = "afl") -> dict:
    if layout not in LAYOUTS:
        raise ConfigError("--layout", f"{layout!r}: expected one of {', '.join(LAYOUTS)}")
    source = open_source(Path(path).absolute(), modes)
    out = Path(os.path.abspath(out))
    _check_out(source, out)
    found = source.findings()
    findings_of = {sha: item for item in found for sha in sorted(item.inputs)}
    if isinstance(source, StateSource):
        queue, skipped = _queue(source.state, source.corpus, set(findings_of))
    else:
        queue, skipped = _explored(source, set(findings_of))
    ensure_dir(out, _DIR_MODE)
    index: dict[str, dict] = {}
    if layout == "afl":
        counts = _write_afl(out, source.read_input, queue, found, index)
    else:
        counts = _write_libfuzzer(out, source.read_input, queue, found, index)
    summary = {"format": INDEX_FORMAT, "layout": layout, source.kind: str(source.root), "files": index,
               "skipped": skipped}
    write_new(out / INDEX, json.dumps(summary, indent=1, sort_keys=True).encode() + b"\n", _FILE_MODE)
    return {"out": str(out), "layout": layout, **counts, "findings": len(found), "skipped": skipped,
            "source": source.kind}


def _check_out(source: Source, out: Path) -> None:
    run = enclosing_run(source.root) if isinstance(source, StateSource) else None
    protected = Path(os.path.realpath(run.root if run is not None else source.root))
    target = Path(os.path.realpath(out.parent)) / out.name
    if target == protected or protected in target.parents:
        raise ConfigError("OUT", f"{out} is inside {protected}; export writes outside the campaign's own files "
                                 "(its state, its run directory and their seal)")
    if os.path.lexists(out):
        raise ConfigError("OUT", f"{out} exists; export writes a new directory and overwrites nothing")


def _queue(state: StateDir, corpus: Corpus, findings: set[str]) -> tuple[list[Entry], dict[str, int]]:
    """The seeds, then the inputs that added coverage, in discovery order (module docstring)."""
    entries: list[Entry] = []
    skipped = {"empty": 0, "too_large": 0, "finding": 0, "no_new_coverage": 0}

    def admit(sha256: str, length: int) -> bool:
        reason = ("finding" if sha256 in findings else "empty" if length == 0
                  else "too_large" if length > AFL_MAX_FILE else None)
        if reason:
            skipped[reason] += 1
        return reason is None

    order, names = read_seed_names(state)
    if not order:  # a campaign from before seed records: its seeds are known by their claims
        order = [name for name in corpus.names() if corpus.is_seed(name)]
    for sha256 in order:
        if corpus.has(sha256) and admit(sha256, corpus.path(sha256).stat().st_size):
            entries.append(Entry(sha256, _orig(names.get(sha256), sha256), None, None, 0))
    events = read_events(state.logs)
    start = min((row["t"] for row in events if isinstance(row.get("t"), float)), default=None)
    committed: dict[str, float] = {}
    for row in events:
        if row.get("event") == Event.COMMIT and isinstance(row.get("work_hash"), str):
            committed.setdefault(row["work_hash"], row["t"])
    wal = WorkWAL(state.wal, state.root, corpus, state.modes.snapshot)
    done = [record for _, record, problem in wal.scan() if problem is None and record["state"] == "done"]
    done.sort(key=lambda r: (committed.get(r["work_hash"], float("inf")), r["work_hash"]))
    for record in done:
        manifest = record["manifest"]
        claimed = set(record["done"]["claimed"])
        when = committed.get(record["work_hash"])
        time_ms = round((when - start) * 1000) if when is not None and start is not None else None
        for obj in manifest["objects"]:
            if obj["sha256"] not in claimed:
                continue  # counted by the record that published it first
            if not obj["novel"]:
                skipped["no_new_coverage"] += 1
            elif admit(obj["sha256"], obj["length"]):
                entries.append(Entry(obj["sha256"], None, manifest["input_hash"], _op(manifest["kind"], obj["hint"]),
                                     time_ms, frozenset(obj["coverage"])))
    return _useful(entries, skipped), skipped


def _explored(source: ExploreSource, findings: set[str]) -> tuple[list[Entry], dict[str, int]]:
    """An ``explore --out`` directory's queue: its seeds as read, then its other kept inputs."""
    skipped = {"empty": 0, "too_large": 0, "finding": 0}
    entries: list[Entry] = []
    seeds = list(dict.fromkeys(source.seeds))
    for sha256 in seeds + [name for name in source.names() if name not in set(seeds)]:
        if not os.path.lexists(source.out.input(sha256)):
            continue
        length = os.lstat(source.out.input(sha256)).st_size
        reason = ("finding" if sha256 in findings else "empty" if length == 0
                  else "too_large" if length > AFL_MAX_FILE else None)
        if reason:
            skipped[reason] += 1
        elif sha256 in seeds:
            entries.append(Entry(sha256, f"seed-{sha256[:16]}", None, None, 0))
        else:
            entries.append(Entry(sha256, None, None, "explore", None))
    return entries, skipped


def _useful(entries: list[Entry], skipped: dict[str, int]) -> list[Entry]:
    """The found inputs that still add coverage in the order AFL++ runs an ``-i`` directory.

    AFL++ (4.04c) reads ``-i`` in reverse name order, so its dry run meets the newest input first
    and calls every older one whose coverage the newer ones hold "useless". Going from the newest
    found input to the oldest, one is kept only when it covers something those kept before it do
    not; the seeds are kept as they are (the manifests hold no coverage of theirs)."""
    covered: set[int] = set()
    kept: list[Entry] = []
    for entry in reversed(entries):
        if entry.seed_name is None and entry.coverage and entry.coverage <= covered:
            skipped["subsumed"] = skipped.get("subsumed", 0) + 1
            continue
        covered |= entry.coverage
        kept.append(entry)
    return kept[::-1]


def _op(kind: str, hint) -> str:
    """How an input was found, in AFL's ``op:`` vocabulary where it has a word for it."""
    if kind == "concolic":
        return "havoc" if isinstance(hint, dict) and hint.get("branch") == -1 else "concolic"
    return kind


def _orig(names: list[str] | None, sha256: str) -> str:
    """A seed's ``orig:`` name: the base name it was read under (what follows an AFL++ queue
    entry's own ``orig:``), in characters that keep the name one AFL field."""
    if not names:
        return f"seed-{sha256[:16]}"
    base = names[0].rsplit("/", 1)[-1]
    if ",orig:" in base:
        base = base.rsplit(",orig:", 1)[1]
    return _NAME_CHARS.sub("_", base)[:_MAX_ORIG] or f"seed-{sha256[:16]}"


def _write_afl(out: Path, read: Callable[[str], bytes], queue: list[Entry], found: list[Found],
               index: dict[str, dict]) -> dict[str, int]:
    instance = out / "default"
    dirs = {name: ensure_dir(instance / name, _DIR_MODE) for name in ("queue", "crashes", "hangs", "exceptions")}
    ids: dict[str, int] = {}
    for number, entry in enumerate(queue):
        if entry.seed_name is not None:
            name = f"id:{number:06d},time:0,execs:0,orig:{entry.seed_name}"
        else:
            parts = [f"id:{number:06d}"]
            if entry.parent in ids:
                parts.append(f"src:{ids[entry.parent]:06d}")
            if entry.time_ms is not None:
                parts.append(f"time:{entry.time_ms}")
            parts += [f"op:{entry.op}", "+cov"]
            name = ",".join(parts)
        ids[entry.sha256] = number
        _put(dirs["queue"] / name, read, entry.sha256, index, out, {"op": entry.op or "seed"})
    counts = {"queue": len(queue), "crashes": 0, "hangs": 0, "exceptions": 0}
    for item in found:
        where = {"hang": "hangs", "exception": "exceptions"}.get(item.kind, "crashes")
        for sha256 in sorted(item.inputs):
            parts = [f"id:{counts[where]:06d}"]
            if item.kind == "exception":
                parts.append(f"exc:{_NAME_CHARS.sub('_', item.signature.split(' ', 1)[0])[:64]}")
            elif where == "crashes" and (number := signal_number(item.signature, item.detail)) is not None:
                parts.append(f"sig:{number:02d}")
            if item.kind == "oom":
                parts.append("oom")
            parts.append(f"finding:{item.id}")
            _put(dirs[where] / ",".join(parts), read, sha256, index, out,
                 {"finding": item.id, "kind": item.kind, "signature": item.signature})
            counts[where] += 1
    if counts["crashes"]:
        readme = (f"Crashes found by a symcc-ulfm campaign, exported in AFL++'s layout ({INDEX} maps each file to "
                  "its corpus object and finding).\n\nReplay one contained: symcc-ulfm replay STATE_DIR FINDING "
                  "(the finding: field of its name).\n")
        write_new(dirs["crashes"] / "README.txt", readme.encode(), _FILE_MODE)
    return counts


def _write_libfuzzer(out: Path, read: Callable[[str], bytes], queue: list[Entry], found: list[Found],
                     index: dict[str, dict]) -> dict[str, int]:
    dirs = {name: ensure_dir(out / name, _DIR_MODE) for name in ("corpus", "artifacts")}
    for entry in queue:
        data = read(entry.sha256)
        _put(dirs["corpus"] / hashlib.sha1(data).hexdigest(), read, entry.sha256, index, out,
             {"op": entry.op or "seed"}, data)
    counts = {"corpus": len(queue), "artifacts": 0}
    for item in found:
        prefix = {"hang": "timeout", "oom": "oom"}.get(item.kind, "crash")
        for sha256 in sorted(item.inputs):
            data = read(sha256)
            path = dirs["artifacts"] / f"{prefix}-{hashlib.sha1(data).hexdigest()}"
            if not os.path.lexists(path):  # one input of two findings is one artifact
                _put(path, read, sha256, index, out, {"finding": item.id, "kind": item.kind,
                                                        "signature": item.signature}, data)
                counts["artifacts"] += 1
    return counts


def _put(path: Path, read: Callable[[str], bytes], sha256: str, index: dict[str, dict], out: Path, about: dict,
         data: bytes | None = None) -> None:
    write_new(path, read(sha256) if data is None else data, _FILE_MODE)
    index[str(path.relative_to(out))] = {"sha256": sha256, **about}


def signal_number(signature: str, detail: str) -> int | None:
    """The signal a crash finding names (``SIGSEGV at ...``, a detail ``SIGABRT: ...``), else None."""
    for text in (signature, detail):
        word = text.split(" ", 1)[0].rstrip(":")
        if word.startswith("SIG"):
            try:
                return int(signal.Signals[word])
            except KeyError:
                continue
    return None
