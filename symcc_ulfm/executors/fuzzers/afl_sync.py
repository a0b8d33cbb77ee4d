"""What passes between the ``afl`` kind and its afl-fuzz, through afl-fuzz's sync directory (``-o SYNC``).

In: what the other workers found. :meth:`SyncDirectory.offer` keeps it (at most 1 MiB and never
empty: what afl-fuzz skips; never what this afl-fuzz itself returned) until afl-fuzz runs; a fresh
afl-fuzz takes it as its ``-i`` directory, a running one finds it in ``SYNC/campaign/queue/``, a
foreign instance's queue, named ``id:NNNNNN,orig:<sha>`` densely from 000000 in the order offered
and renamed into place whole. A secondary (``-S``) imports only from a main instance's directory,
so for one the foreign directory holds an ``is_main_node`` mark.

Out: afl-fuzz's own new entries of ``SYNC/worker/`` (``queue/``, ``crashes/``, ``hangs/``), each
returned once; those it imported from the foreign queue (``,sync:`` in the name) are counted, not
returned. An afl-fuzz that resumes the directory (``AFL_AUTORESUME``) after its sandbox child
died finds it adopted: what it holds was returned, or written, by the process before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

from .afl_files import read_entry

AFL_MAX_FILE = 1024 * 1024  # afl-fuzz skips larger inputs (MAX_FILE) and empty ones
INSTANCE = "worker"
FOREIGN = "campaign"
OWN_DIRECTORIES = ("queue", "crashes", "hangs")


class SyncDirectory:
    def __init__(self) -> None:
        self._offered: list[bytes] = []  # waiting for the foreign queue (or a fresh start's -i)
        self._foreign = 0  # entries written into the foreign queue
        self._seen: set[str] = set()  # names of afl-fuzz's own entries already returned
        self._returned: set[bytes] = set()  # SHA-256s of what it returned: offered back, they are skipped

    def offer(self, inputs: list[bytes]) -> None:
        self._offered += [data for data in inputs if 0 < len(data) <= AFL_MAX_FILE
                          and hashlib.sha256(data).digest() not in self._returned]

    def prepare(self, sync: Path, inputs: Path, main: bool) -> bool:
        """Before afl-fuzz starts: a fresh start's ``-i`` directory (what was offered so far, or one
        newline), or the adoption of the directory it resumes; the main mark for a secondary.
        Whether it resumes."""
        resume = (sync / INSTANCE / "queue").is_dir()
        if resume:
            self._adopt(sync)
        else:
            shutil.rmtree(inputs, ignore_errors=True)
            inputs.mkdir()
            for index, data in enumerate(self._offered or [b"\n"]):
                (inputs / f"{index:06d}").write_bytes(data)
            self._offered = []
            (sync / FOREIGN / "queue").mkdir(parents=True, exist_ok=True)
        main_mark = sync / FOREIGN / "is_main_node"
        if main:
            main_mark.unlink(missing_ok=True)
        else:
            main_mark.touch()
        return resume

    def _adopt(self, sync: Path) -> None:
        for sub in OWN_DIRECTORIES:
            directory = sync / INSTANCE / sub
            if directory.is_dir():
                self._seen.update(f"{sub}/{name}" for name in os.listdir(directory))
        foreign = sync / FOREIGN / "queue"
        names = [n for n in os.listdir(foreign) if n.startswith("id:")] if foreign.is_dir() else []
        self._foreign = len(names)
        written = {n.rsplit(",orig:", 1)[-1] for n in names}
        self._offered = [d for d in self._offered if hashlib.sha256(d).hexdigest()[:16] not in written]

    def flush(self, sync: Path) -> None:
        """What was offered, into the foreign queue of a running afl-fuzz."""
        queue = sync / FOREIGN / "queue"
        for data in self._offered:
            name = f"id:{self._foreign:06d},orig:{hashlib.sha256(data).hexdigest()[:16]}"
            temp = queue.parent / f".{name}"
            temp.write_bytes(data)
            os.rename(temp, queue / name)  # afl-fuzz never reads a half-written entry
            self._foreign += 1
        self._offered = []

    def collect(self, sync: Path) -> tuple[list[bytes], dict[str, int]]:
        """afl-fuzz's own new queue entries, crashes and hangs since the last call."""
        base = sync / INSTANCE
        kept: list[bytes] = []
        counts = {"queue": 0, "crashes": 0, "hangs": 0, "imported": 0}
        for sub in OWN_DIRECTORIES:
            directory = base / sub
            if not directory.is_dir():
                continue
            for name in sorted(os.listdir(directory)):
                key = f"{sub}/{name}"
                if not name.startswith("id:") or key in self._seen:
                    continue
                self._seen.add(key)
                if ",sync:" in name:
                    counts["imported"] += 1
                    continue
                with contextlib.suppress(OSError):
                    data = read_entry(directory / name)
                    if data is not None:
                        kept.append(data)
                        self._returned.add(hashlib.sha256(data).digest())
                        counts[sub] += 1
        return kept, counts
