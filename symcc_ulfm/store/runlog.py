"""Structured per-rank logs: one JSON object per line (time, generation, stable rank, event)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import StoreError


class RankLog:
    def __init__(self, path: Path, stable: int, mode: int):
        self.path = Path(path)
        self.stable = stable
        self.generation = 0
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, mode)
            os.fchmod(self._fd, mode)
        except OSError as exc:
            raise StoreError(f"cannot open log {self.path}: {exc.strerror or exc}") from exc

    def event(self, event: str, **fields) -> None:
        """Append one line; written with a single ``write`` so that a crash never leaves half a line."""
        record = {"t": time.time(), "generation": self.generation, "rank": self.stable, "event": event, **fields}
        line = (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
        try:
            os.write(self._fd, line)
        except OSError as exc:
            raise StoreError(f"cannot write log {self.path}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def last_event_time(logs_dir: Path, before: float) -> float | None:
    """The time of the latest event before ``before`` in any rank log (a job's last durable activity)."""
    latest = None
    for path in Path(logs_dir).glob("rank-*.jsonl"):
        try:
            lines = path.read_bytes().splitlines()
        except OSError as exc:
            raise StoreError(f"cannot read log {path}: {exc.strerror or exc}") from exc
        for line in reversed(lines):
            try:
                t = json.loads(line)["t"]
            except (ValueError, KeyError, TypeError):
                continue
            if t < before:
                latest = t if latest is None else max(latest, t)
                break
    return latest
