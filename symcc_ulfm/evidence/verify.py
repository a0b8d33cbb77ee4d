"""Verify a sealed run directory, independently of the code that sealed and judged it.

1. ``SHA256SUMS.txt`` is parsed strictly (``<64 hex>  <relative path>``, sorted, unique, no
   ``..``, no absolute paths, a final newline).
2. Every listed file's SHA-256 is checked.
3. The files on disk must be exactly the listed ones: ``sha256sum -c`` alone does not notice
   an added file. Symlinks and special files are problems.
4. ``result_sha256`` is recomputed by :mod:`.recompute` (its own parser) and must equal the
   one in ``oracle.json``, in ``state/oracle.json`` and of a fresh :func:`oracle.judge`.

A run that still holds ``INCOMPLETE`` (written when it was made, removed by its seal: it was
interrupted or failed first) is reported as incomplete and checked no further. Like ``SUMS``,
the name is spelled here, apart from the code that writes it.

``verify(run_dir)`` returns ``passed, result_sha256, files_checked, problems`` (DESIGN.md §12)
plus ``oracle_result_sha256``; it does not raise on a bad run, it reports, with one exception:
a file it must read that is a FIFO, a device, a link or larger than its bound is refused before
it is read (:class:`~symcc_ulfm.errors.UnsafeFile`, exit 4, naming it), never waited on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..errors import UnsafeFile
from .recompute import recompute

SUMS = "SHA256SUMS.txt"
INCOMPLETE = "INCOMPLETE"
_LINE = re.compile(r"([0-9a-f]{64})  ([^\n\\]+)")
_RUN_ID = re.compile(r"f447-\d{8}T\d{6}Z-([0-9a-f]{8})")


_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_JSON_LIMIT = 64 << 20
_SUMS_LIMIT = 256 << 20


def _open(path: Path) -> int:
    """A regular file of the run, opened without following a link or blocking on a FIFO."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnsafeFile(f"{path}: not readable as a regular file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeFile(f"{path}: not a regular file; refusing to read it")
    return fd


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with os.fdopen(_open(path), "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _bytes(path: Path, limit: int) -> bytes:
    with os.fdopen(_open(path), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFile(f"{path}: larger than {limit} bytes; refusing to read it")
    return data


def parse_sums(text: str, problems: list[str]) -> dict[str, str]:
    """``{path: sha256}`` of a SHA256SUMS.txt; every malformed line is a problem naming its number."""
    listed: dict[str, str] = {}
    if text and not text.endswith("\n"):
        problems.append(f"{SUMS}: the last line has no newline")
    previous = ""
    for number, line in enumerate(text.splitlines(), 1):
        match = _LINE.fullmatch(line)
        if not match:
            problems.append(f"{SUMS} line {number}: not '<sha256>  <path>': {line[:80]!r}")
            continue
        digest, rel = match.groups()
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or rel == SUMS:
            problems.append(f"{SUMS} line {number}: path {rel!r} is not a plain relative path of the run")
            continue
        if rel in listed:
            problems.append(f"{SUMS} line {number}: {rel} is listed twice")
        elif rel < previous:
            problems.append(f"{SUMS} line {number}: {rel} is out of order")
        listed[rel] = digest
        previous = max(previous, rel)
    return listed


def files_on_disk(run_dir: Path, problems: list[str]) -> set[str]:
    """Regular files under ``run_dir`` (except the seal); symlinks and special files are problems."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(run_dir):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(run_dir).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                problems.append(f"{rel}: a symlink (a sealed run holds regular files only)")
            elif name in filenames and not stat.S_ISREG(mode):
                problems.append(f"{rel}: not a regular file")
            elif name in filenames and rel != SUMS:
                found.add(rel)
                if "security" in rel.split("/"):
                    problems.append(f"{rel}: ipyparallel security material inside a run")
    return found


def check_seal(run_dir: Path, problems: list[str]) -> int:
    """Steps 1-3; returns how many files had their digest checked."""
    sums = run_dir / SUMS
    if not sums.is_file() or sums.is_symlink():
        problems.append(f"{SUMS}: missing (the run is not sealed)")
        return 0
    listed = parse_sums(_bytes(sums, _SUMS_LIMIT).decode("utf-8", errors="replace"), problems)
    on_disk = files_on_disk(run_dir, problems)
    for rel in sorted(set(listed) - on_disk):
        if not (run_dir / rel).is_symlink():
            problems.append(f"{rel}: listed in {SUMS} but missing")
    for rel in sorted(on_disk - set(listed)):
        problems.append(f"{rel}: present but not listed in {SUMS} (an added file)")
    checked = 0
    for rel in sorted(set(listed) & on_disk):
        checked += 1
        actual = _digest(run_dir / rel)
        if actual != listed[rel]:
            problems.append(f"{rel}: SHA-256 mismatch (sealed {listed[rel][:12]}..., now {actual[:12]}...)")
    return checked


def _read_json(run_dir: Path, rel: str, problems: list[str]) -> dict | None:
    """A JSON object of the run, or None (with a problem naming the file) when missing or unreadable."""
    try:
        value = json.loads(_bytes(run_dir / rel, _JSON_LIMIT))
    except FileNotFoundError:
        problems.append(f"{rel}: missing")
        return None
    except (OSError, ValueError, RecursionError) as exc:
        problems.append(f"{rel}: unreadable ({type(exc).__name__}: {exc})")
        return None
    if not isinstance(value, dict):
        problems.append(f"{rel}: not a JSON object")
        return None
    return value


def check_results(run_dir: Path, problems: list[str]) -> tuple[str | None, str | None]:
    """Step 4; returns (recomputed result_sha256, fresh oracle result_sha256)."""
    from .oracle.judge import judge  # only to compare with: nothing above depends on it

    state = run_dir / "state"
    if not (state / "policy.json").is_file():
        problems.append("state/policy.json: missing (not a run directory)")
        return None, None
    try:
        mine = recompute(state)
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
        problems.append(f"state: the verifier cannot read it: {type(exc).__name__}: {exc}")
        return None, None
    problems.extend(f"verifier: {p}" for p in mine["problems"])
    ours = mine["result_sha256"]
    verdict = judge(state)
    if not verdict["passed"]:
        problems.extend(f"oracle: {p}" for p in verdict["problems"])
    if verdict.get("result_sha256") != ours:
        problems.append(f"the oracle's result_sha256 {verdict.get('result_sha256')} != the verifier's {ours}")
    for rel in ("oracle.json", "state/oracle.json"):
        recorded = _read_json(run_dir, rel, problems)
        if recorded is None:
            continue
        if recorded.get("passed") is not True:
            problems.append(f"{rel}: the recorded oracle verdict is not a pass")
        if recorded.get("result_sha256") != ours:
            problems.append(f"{rel}: records result_sha256 {recorded.get('result_sha256')}, recomputed {ours}")
    _check_context(run_dir, mine["summary"]["policy_sha256"], problems)
    return ours, verdict.get("result_sha256")


def _check_context(run_dir: Path, policy_sha: str, problems: list[str]) -> None:
    """The run id, provenance and engine classification must belong to this state's policy."""
    match = _RUN_ID.fullmatch(run_dir.name)
    if match and not policy_sha.startswith(match[1]):
        problems.append(f"run id {run_dir.name} names policy {match[1]}..., the state holds {policy_sha[:8]}...")
    provenance = _read_json(run_dir, "provenance.json", problems)
    if provenance is not None and provenance.get("policy_sha256") != policy_sha:
        problems.append("provenance.json: recorded for another policy")
    if (run_dir / "engines.json").exists():
        engines = _read_json(run_dir, "engines.json", problems)
        if engines is not None and engines.get("as_scheduled") is not True:
            problems.append("engines.json: the engines did not die as the failure schedule says")


def verify(run_dir: str | Path) -> dict[str, Any]:
    run_dir = Path(run_dir)
    problems: list[str] = []
    if not run_dir.is_dir():
        return {"passed": False, "result_sha256": None, "files_checked": 0,
                "problems": [f"{run_dir}: not a directory"], "oracle_result_sha256": None}
    if os.path.lexists(run_dir / INCOMPLETE):
        return {"passed": False, "result_sha256": None, "files_checked": 0, "oracle_result_sha256": None,
                "problems": [f"{INCOMPLETE}: the run is incomplete: it was interrupted or failed before it was "
                             "sealed, so it is not evidence (symcc-ulfm oracle judges the state it holds)"]}
    checked = check_seal(run_dir, problems)
    ours, oracle_sha = check_results(run_dir, problems)
    return {"passed": not problems, "result_sha256": ours, "files_checked": checked, "problems": problems,
            "oracle_result_sha256": oracle_sha}
