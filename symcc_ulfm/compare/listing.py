"""What a system holds over its window: each file's first-seen time, and the inputs a cell keeps.

A system names its inputs as ``(root, glob)`` pairs (:class:`..systems.Started`): the pattern is
matched one path component at a time below ``root`` (``fnmatch``), descending only into real
directories, so a symbolic link is never followed, whatever it points to. A match that is a
regular file is an input; a match that is a directory contributes the regular files directly in
it. Names starting with ``.`` are skipped, and so is afl-fuzz's ``README.txt`` (its note in
``crashes/``). The system's processes write these directories while they are listed: a file can
vanish or change between two listings; it is opened only once, by :func:`keep_inputs`.

:class:`Sampler` lists them every ``interval_s`` from the start of the window and once more on
:meth:`Sampler.stop`; a file's time is that of the first listing that showed it, taken after the
listing ended (so never before the file existed). At most :data:`MAX_FILES` files are listed
(:attr:`Sampler.capped` tells that the cap was hit).

:func:`keep_inputs` copies what was listed into ``CELL/inputs/<sha256>`` (regular files of at
most :data:`MAX_INPUT_BYTES`, opened without following a link and without blocking on a FIFO)
and writes ``CELL/listing.json`` (format :data:`FORMAT`): ``files`` (each listed file kept: its
path, relative to the cell where it lies below it, ``first_s``, ``role``, ``sha256``), ``seeds``
(their SHA-256s), ``inputs`` (what it returns: the distinct contents, each with its earliest
time, the seeds at 0.0), ``skipped`` (files not kept, by reason), ``listed`` and ``capped``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import os
import stat
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import StoreError, UnsafeFile
from ..experiment.jsonfile import FILE_MODE, write_json
from ..store.atomic import write_new
from ..store.durability import Barrier
from ..store.reads import read_bytes

FORMAT = "symcc-ulfm-compare-listing/1"
INPUTS_DIR, LISTING_FILE = "inputs", "listing.json"  # in a cell's directory
MAX_FILES = 200_000  # files listed per cell; beyond it new files are not listed (``capped``)
MAX_INPUT_BYTES = 1 << 20  # a larger file is not kept (``skipped.oversized``)
CORPUS, FINDING, SEED = "corpus", "finding", "seed"
_SKIPPED_NAMES = ("README.txt",)


@dataclass(frozen=True)
class Input:
    """A distinct content: its SHA-256, the earliest time it was listed and its role then."""

    sha256: str
    first_s: float
    role: str  # SEED, CORPUS or FINDING


def _is_listed(name: str) -> bool:
    return not name.startswith(".") and name not in _SKIPPED_NAMES


def _matches(root: Path, pattern: str) -> list[tuple[str, bool]]:
    """``(path, is_directory)`` of what ``pattern`` matches below ``root``, through real directories only."""
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return []
    except OSError:
        return []
    level = [str(root)]
    parts = [part for part in pattern.split("/") if part]
    found: list[tuple[str, bool]] = []
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        deeper = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if not _is_listed(entry.name) or not fnmatch.fnmatchcase(entry.name, part):
                            continue
                        is_dir = entry.is_dir(follow_symlinks=False)
                        if last:
                            if is_dir or entry.is_file(follow_symlinks=False):
                                found.append((entry.path, is_dir))
                        elif is_dir:
                            deeper.append(entry.path)
            except OSError:  # vanished, or not readable: nothing listed there now
                continue
        level = deeper
    return found


def list_files(globs: list[tuple[Path, str]]) -> list[str]:
    """The regular files that ``globs`` name now (see the module docstring)."""
    files: list[str] = []
    for root, pattern in globs:
        for path, is_dir in _matches(Path(root), pattern):
            if not is_dir:
                files.append(path)
                continue
            try:
                with os.scandir(path) as entries:
                    files += [e.path for e in entries if _is_listed(e.name) and e.is_file(follow_symlinks=False)]
            except OSError:
                continue
    return files


class Sampler(threading.Thread):
    """Lists ``corpus`` and ``findings`` (``(root, glob)`` pairs) every ``interval_s`` seconds
    from ``started`` (a ``time.monotonic()``), and once more on :meth:`stop`.

    ``first_seen[path]`` is ``(seconds since started, role)`` of the first listing that showed it;
    this thread adds to it until :meth:`stop` returns (copy it, ``list()``, to look at it before).
    """

    def __init__(self, corpus: list[tuple[Path, str]], findings: list[tuple[Path, str]], started: float,
                 interval_s: float):
        super().__init__(daemon=True, name="compare-sampler")
        self.corpus, self.findings = list(corpus), list(findings)
        self.started, self.interval_s = started, interval_s
        self.first_seen: dict[Path, tuple[float, str]] = {}
        self.listings = 0
        self.capped = False
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        k = 0
        while True:
            self._list()
            k += 1
            if self._stopping.wait(max(0.0, self.started + k * self.interval_s - time.monotonic())):
                return

    def stop(self) -> None:
        """End the listings after a last one (the window's end)."""
        self._stopping.set()
        if self.is_alive():
            self.join()
        self._list()

    def _list(self) -> None:
        with self._lock:
            seen = [(path, CORPUS) for path in list_files(self.corpus)]
            seen += [(path, FINDING) for path in list_files(self.findings)]
            at = math.ceil((time.monotonic() - self.started) * 1000) / 1000  # in ms, never before the listing
            for path, role in seen:
                key = Path(path)
                if key in self.first_seen:
                    continue
                if len(self.first_seen) >= MAX_FILES:
                    self.capped = True
                    break
                self.first_seen[key] = (at, role)
            self.listings += 1


def keep_inputs(first_seen: dict[Path, tuple[float, str]], seeds: list[bytes], cell_dir: Path) -> list[Input]:
    """Copy every listed file into ``cell_dir/inputs/<sha256>``, write ``cell_dir/listing.json``
    and return the distinct inputs (seeds at 0.0 first, then by first-seen time)."""
    cell_dir = Path(cell_dir)
    folder = cell_dir / INPUTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    barrier = Barrier(folder)
    earliest: dict[str, Input] = {}
    skipped = {"oversized": 0, "not_regular": 0, "vanished": 0, "unreadable": 0}
    files = []

    def keep(data: bytes, first_s: float, role: str) -> str:
        sha = hashlib.sha256(data).hexdigest()
        write_new(folder / sha, data, FILE_MODE, barrier)
        known = earliest.get(sha)
        if known is None or first_s < known.first_s:
            earliest[sha] = Input(sha, first_s, role)
        return sha

    try:
        seed_shas = [keep(data, 0.0, SEED) for data in seeds]
        for path, (first_s, role) in sorted(first_seen.items(), key=lambda item: (item[1][0], str(item[0]))):
            try:
                if os.lstat(path).st_size > MAX_INPUT_BYTES:
                    skipped["oversized"] += 1
                    continue
                data = read_bytes(path, MAX_INPUT_BYTES)
            except FileNotFoundError:
                skipped["vanished"] += 1
                continue
            except UnsafeFile:  # replaced by a link or a special file since it was listed, or grew
                skipped["not_regular"] += 1
                continue
            except (StoreError, OSError):
                skipped["unreadable"] += 1
                continue
            files.append({"path": _relative(Path(path), cell_dir), "first_s": first_s, "role": role,
                          "sha256": keep(data, first_s, role)})
        barrier.sync()
    finally:
        barrier.close()
    inputs = sorted(earliest.values(), key=lambda i: (i.first_s, i.sha256))
    write_json(cell_dir / LISTING_FILE, {
        "format": FORMAT, "files": files, "seeds": seed_shas, "inputs": [asdict(i) for i in inputs],
        "skipped": skipped, "listed": len(first_seen), "capped": len(first_seen) >= MAX_FILES,
        "max_input_bytes": MAX_INPUT_BYTES})
    return inputs


def _relative(path: Path, cell_dir: Path) -> str:
    """``path`` relative to the cell's directory when it lies below it (else as it is), as text
    (a name that is not UTF-8, which a target may have written, with its bytes escaped)."""
    try:
        path = path.relative_to(cell_dir)
    except ValueError:
        pass
    return os.fsencode(path).decode("utf-8", "backslashreplace")
