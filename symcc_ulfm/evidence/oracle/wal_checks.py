"""The oracle's WAL and corpus checks: every record's lines, fences and counts, every corpus
object's name, claim and record, the seed records, and attribution by worker kind.

Written from DESIGN.md without the runtime's code: a WAL record is a file of canonical JSON
lines, one per state (``leased -> committing -> done``), each with its own checksum; a corpus
object is named by its SHA-256 and claimed either by ``seed`` or by the record (a link to it)
whose manifest lists it; a done record counts the objects it claimed, once.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from ...errors import UnsafeFile
from .rules import MAX_JSON_BYTES, canonical, expected_groups, file_sha256, kind_in, read_file, sha256

_SHA = re.compile(r"[0-9a-f]{64}")
_WAL_KEYS = {
    "format", "work_hash", "input_hash", "executor_sha256", "state", "lease", "history", "manifest", "done", "checksum",
}
_WAL_NEXT = {"leased": {"leased", "committing"}, "committing": {"done"}, "done": set()}  # line to line
# WAL formats whose manifests took 'generated' from the worker (since wal/5: the objects staged)
_WORKER_GENERATED = {"symcc-ulfm-wal/1", "symcc-ulfm-wal/2", "symcc-ulfm-wal/3", "symcc-ulfm-wal/4"}
# since wal/6 a manifest names its worker's kind, the slice it settles (a fuzzer's) and what it dropped
KINDS_FORMAT = "symcc-ulfm-wal/6"
_SLICE_KEYS = {"slice", "kind", "generation", "master", "worker", "seq", "seconds"}  # and "mix" (mix_checks)



def _record_lines(raw: bytes) -> tuple[list[bytes], bool]:
    """A WAL record file's complete lines (one state each) and whether a torn tail follows. A
    record written by the first format (``symcc-ulfm-wal/1``: one state per file, no newline)
    is one line, so runs sealed before the change still verify."""
    if b"\n" not in raw and b'"format":"symcc-ulfm-wal/1"' in raw:
        return [raw], False
    lines = raw.split(b"\n")
    return lines, lines.pop() != b""


class WalChecks:
    """Mixin of the oracle's judge: needs ``fail``, ``notes``, ``root``, ``read_json``, ``slots``,
    ``lent_kind`` and ``lent`` (set by the membership checks)."""

    def wal(self, snaps: list[dict], executor: str) -> dict:
        records = {}
        torn = 0
        for path in sorted((self.root / "wal" / "records").glob("*.json")):
            work = path.name[:-5]
            complete, tail = _record_lines(read_file(path, MAX_JSON_BYTES))
            torn += tail  # a last append cut by a crash: never durable, not a state
            states = [self._wal_state(work, line) for line in complete]
            if not states:
                self.fail(f"WAL record {work}: no complete line")
            if not states or None in states:  # what is wrong with a line is reported already
                continue
            for before, after in zip(states, states[1:], strict=False):
                if after["state"] not in _WAL_NEXT[before["state"]]:
                    self.fail(f"WAL record {work}: goes {before['state']} -> {after['state']}")
            records[work] = states[-1]
        if torn:
            self.notes.append(f"{torn} WAL records end in a torn line (an append cut by a crash; ignored)")
        groups = {s["generation"]: expected_groups(s["active"], s["workers_per_master"]) for s in snaps}
        done = {w: r for w, r in records.items() if r["state"] == "done"}
        for work, record in done.items():
            manifest, lease = record["manifest"], record["lease"]
            if manifest["generation"] != lease["generation"] or manifest["lease"] != lease["token"]:
                self.fail(f"WAL record {work}: manifest fence differs from its lease")
            if manifest["master"] != lease["master"] or manifest["worker"] != lease["worker"]:
                self.fail(f"WAL record {work}: manifest master/worker differ from its lease")
            grps = groups.get(manifest["generation"], [])
            # a quarantine is settled by its master without a worker (checked with the findings)
            if "quarantine" not in manifest and not any(
                    grp[0] == manifest["master"] and manifest["worker"] in grp[1:] for grp in grps):
                self.fail(
                    f"WAL record {work}: worker {manifest['worker']} was not in master {manifest['master']}'s "
                    f"group in generation {manifest['generation']} (old or forged fence accepted)"
                )
            names = [o["sha256"] for o in manifest["objects"]]
            if len(set(names)) != len(names):
                self.fail(f"WAL record {work}: manifest lists an object twice")
            if not set(record["done"]["claimed"]) <= set(names):
                self.fail(f"WAL record {work}: claims objects outside its manifest")
            dropped = manifest.get("dropped", []) if record["format"] == KINDS_FORMAT else []
            if record["format"] in _WORKER_GENERATED:  # older runs: the worker's count, at least the objects
                if manifest["generated"] < len(names):
                    self.fail(f"WAL record {work}: generated {manifest['generated']} < {len(names)} objects")
            elif manifest["generated"] != len(names) + len(set(dropped)) or set(dropped) & set(names):
                self.fail(f"WAL record {work}: generated {manifest['generated']} is not its {len(names)} objects "
                          f"and {len(dropped)} dropped candidates (a count taken from the worker's word)")
            if record["format"] == KINDS_FORMAT:
                self._check_kind(work, record, grps, executor)
        return {"records": records, "done": done}

    def _check_kind(self, work: str, record: dict, grps: list[list[int]], executor: str) -> None:
        """The worker kind a manifest names is its slot's in that generation, or, for a slice of an
        analysis worker lent to fuzzing while it had nothing to analyze, the campaign's idle kind
        (counted in ``lent``); a slice's descriptor is the one its input hash names, of that
        worker, master and generation."""
        manifest = record["manifest"]
        sliced = manifest.get("slice")
        if "quarantine" not in manifest:
            group = next((g for g in grps if g[0] == manifest["master"] and manifest["worker"] in g[1:]), None)
            slot = kind_in(group, manifest["worker"], self.slots, executor) if group is not None else None
            named = manifest.get("kind")
            lent = (isinstance(sliced, dict) and sliced.get("kind") == named and slot == executor
                    and named is not None and named == self.lent_kind)
            if lent:
                self.lent[named] = self.lent.get(named, 0) + 1
            elif group is not None and named != slot:
                self.fail(f"WAL record {work}: worker {manifest['worker']} is named {named!r}, "
                          f"its slot's kind is {slot!r}")
        if sliced is None:
            return
        if (not isinstance(sliced, dict) or set(sliced) - {"mix"} != _SLICE_KEYS or sha256(canonical(sliced)) != record["input_hash"]
                or [sliced["kind"], sliced["generation"], sliced["master"], sliced["worker"]]
                != [manifest.get("kind"), manifest["generation"], manifest["master"], manifest["worker"]]):
            self.fail(f"WAL record {work}: its slice descriptor is not the one its input hash names, of its own "
                      "worker, master and generation")

    def _wal_state(self, work: str, line: bytes) -> dict | None:
        """One line of a record file (one state), checked; None after reporting what is wrong."""
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            self.fail(f"WAL record {work}: a line is not valid JSON")
            return None
        if not isinstance(record, dict) or set(record) != _WAL_KEYS:
            self.fail(f"WAL record {work}: unexpected fields")
            return None
        body = {k: v for k, v in record.items() if k != "checksum"}
        if record["checksum"] != sha256(canonical(body)):
            self.fail(f"WAL record {work}: checksum mismatch")
        expected = sha256(canonical({"input_hash": record["input_hash"], "executor_sha256": record["executor_sha256"]}))
        if record["work_hash"] != work or expected != work:
            self.fail(f"WAL record {work}: work hash does not match input and executor")
        return record

    def corpus(self, done: dict, records: dict) -> dict:
        objects_dir = self.root / "corpus" / "objects"
        names = sorted(n for n in os.listdir(objects_dir) if not n.startswith("."))
        for name in names:
            if not _SHA.fullmatch(name):
                self.fail(f"corpus/objects/{name}: not a SHA-256 name")
            elif file_sha256(objects_dir / name) != name:
                self.fail(f"corpus/objects/{name}: content does not hash to its name")
        claimed_by: dict[str, str] = {}
        double = 0
        for work, record in done.items():
            for obj in record["done"]["claimed"]:
                if obj in claimed_by:
                    double += 1
                    self.fail(f"object {obj} counted by two done records ({claimed_by[obj]}, {work})")
                claimed_by[obj] = work
        recorded = self.seed_records(records)
        seeds, pending = set(), set()
        claims_dir = self.root / "corpus" / "claims"
        for name in os.listdir(claims_dir):  # a claim no object names is never read, but never a FIFO either
            if not stat.S_ISREG(os.lstat(claims_dir / name).st_mode):
                raise UnsafeFile(f"{claims_dir / name}: not a regular file")
        for name in names:
            path = claims_dir / name
            owner = self._claim_owner(path, name) if path.exists() else None
            if owner == "seed":
                seeds.add(name)
                if recorded is not None and name not in recorded:
                    self.fail(f"object {name}: claims to be a seed, but no seed record (seeds/) names it")
            elif owner in done:
                if claimed_by.get(name) != owner:
                    self.fail(f"object {name}: claim names {owner[:12]} but that record does not count it")
            elif owner in records:
                pending.add(name)
            else:
                self.fail(f"object {name}: published without a claim by a known record")
        for obj, work in claimed_by.items():
            if not (objects_dir / obj).is_file():
                self.fail(f"object {obj} counted by {work[:12]} is not in the corpus")
        if pending:
            self.notes.append(f"{len(pending)} objects belong to records still committing")
        return {"names": names, "seeds": seeds, "claimed": claimed_by, "pending": pending, "double_counted": double}

    def seed_records(self, records: dict) -> set[str] | None:
        """The SHA-256s the seed records list; None for a campaign from before they were written
        (no ``seeds/`` and no record of ``symcc-ulfm-wal/6``: its seeds are taken on their claims)."""
        directory = self.root / "seeds"
        if not directory.is_dir() and not any(r["format"] == KINDS_FORMAT for r in records.values()):
            return None
        names = []
        for path in sorted(directory.glob("seeds-*.json")) if directory.is_dir() else []:
            record, raw = self.read_json(f"seeds/{path.name}")
            if raw != canonical(record) or record.get("format") != "symcc-ulfm-seeds/1":
                self.fail(f"seeds/{path.name}: not a canonical seed record")
                continue
            names += [s["sha256"] for s in record.get("seeds", [])]
        return set(names)

    def _claim_owner(self, path: Path, name: str) -> str | None:
        """``seed``, or the work hash of the committing record the claim is (a link to it)."""
        data = read_file(path, MAX_JSON_BYTES)
        if data == b"seed":
            return "seed"
        try:
            states = [json.loads(line) for line in _record_lines(data)[0]]
            works = {state["work_hash"] for state in states}
            if len(works) == 1 and any(
                name in {o["sha256"] for o in state["manifest"]["objects"]} for state in states if state["manifest"]
            ):
                return works.pop()
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            pass
        self.fail(f"corpus/claims/{name}: neither 'seed' nor a WAL record whose manifest lists the object")
        return None


def attribution(done: dict) -> dict:
    """By worker kind: the corpus objects its results were the first to publish, how many of them
    added coverage, its distinct findings (kind, signature, input), and its done records."""
    out: dict[str, dict] = {}
    for record in done.values():
        manifest = record["manifest"]
        row = out.setdefault(manifest.get("kind", "?"), {"inputs": 0, "novel": 0, "findings": 0, "works": 0,
                                                          "_found": set()})
        claimed = set(record["done"]["claimed"])
        row["works"] += 1
        row["inputs"] += len(claimed)
        row["novel"] += sum(1 for o in manifest["objects"] if o["novel"] and o["sha256"] in claimed)
        row["_found"] |= {(f["kind"], f["signature"], f["sha256"]) for f in manifest["findings"]}
    for row in out.values():
        row["findings"] = len(row.pop("_found"))
    return dict(sorted(out.items()))
