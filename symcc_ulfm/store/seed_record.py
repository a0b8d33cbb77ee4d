"""``seeds/seeds-<n>.json``: the seed inputs a campaign started from, recorded before they are published.

``launch`` writes one record when it prepares a campaign and one more for each ``--resume --seeds
DIR`` (``n`` counts them from 0), create-once and canonical, each listing the SHA-256 and length of
every seed it adds (and the file names it was read under, ``names``, when it came from a
directory: ``executors.seed_dirs``), and then publishes the seeds (claim ``seed``). So every corpus object is
accounted for by a seed record or by a committed manifest, and the oracle fails any object that
claims to be a seed without a record naming it. A seed record is written before any rank starts,
so no target code has run yet when it is.
"""

from __future__ import annotations

import hashlib
import json
import re

from ..core.canonical import canonical_json
from ..core.limits import MAX_RECORD_BYTES
from ..errors import IntegrityError, ProvenanceChanged
from .atomic import write_new
from .dirs import ensure_dir
from .paths import StateDir
from .reads import read_bytes

SEEDS_FORMAT = "symcc-ulfm-seeds/1"
_NAME = re.compile(r"seeds-(\d+)\.json")


def record_seeds(state: StateDir, seeds: list[bytes], names: dict[str, list[str]] | None = None) -> int:
    """Record ``seeds`` as the next seed record (``names``: SHA-256 -> the file names a seed was
    read under); its number."""
    ensure_dir(state.seeds, state.modes.snapshot_dir)
    number = sum(1 for path in state.seeds.iterdir() if _NAME.fullmatch(path.name))
    items = sorted({hashlib.sha256(seed).hexdigest(): len(seed) for seed in seeds}.items())
    names = names or {}
    record = {"format": SEEDS_FORMAT, "number": number,
              "seeds": [{"sha256": sha256, "length": length, **({"names": [_text(n) for n in names[sha256]]}
                                                                  if names.get(sha256) else {})}
                        for sha256, length in items]}
    if not write_new(state.seeds / f"seeds-{number}.json", canonical_json(record), state.modes.snapshot):
        raise ProvenanceChanged(f"{state.seeds}/seeds-{number}.json exists already")
    return number


def _text(name: str) -> str:
    """A file name as JSON text: bytes that are not UTF-8 (``os.fsdecode``'s escapes) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def read_seed_names(state: StateDir) -> tuple[list[str], dict[str, list[str]]]:
    """The recorded seeds in record order (within a record, by the first name each was read under,
    then by SHA-256) and the names each was read under."""
    order: list[str] = []
    names: dict[str, list[str]] = {}
    paths = sorted((p for p in state.seeds.iterdir() if _NAME.fullmatch(p.name)),
                   key=lambda p: int(_NAME.fullmatch(p.name)[1])) if state.seeds.is_dir() else []
    for path in paths:
        try:
            record = json.loads(read_bytes(path, limit=MAX_RECORD_BYTES))
            items = sorted(record["seeds"], key=lambda i: (not i.get("names"), (i.get("names") or [""])[0], i["sha256"]))
            for item in items:
                if item["sha256"] not in names:
                    order.append(item["sha256"])
                    names[item["sha256"]] = []
                names[item["sha256"]] += [n for n in item.get("names", []) if isinstance(n, str)]
        except (ValueError, KeyError, TypeError, RecursionError):
            raise IntegrityError(f"{path} is not a seed record") from None
    return order, names
