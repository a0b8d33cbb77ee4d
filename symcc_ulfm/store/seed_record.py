"""``seeds/seeds-<n>.json``: the seed inputs a campaign started from, recorded before they are published.

``launch`` writes one record when it prepares a campaign and one more for each ``--resume --seeds
DIR`` (``n`` counts them from 0), create-once and canonical, each listing the SHA-256 and length of
every seed it adds, and then publishes the seeds (claim ``seed``). So every corpus object is
accounted for by a seed record or by a committed manifest, and the oracle fails any object that
claims to be a seed without a record naming it. A seed record is written before any rank starts,
so no target code has run yet when it is.
"""

from __future__ import annotations

import hashlib
import re

from ..core.canonical import canonical_json
from ..errors import ProvenanceChanged
from .atomic import write_new
from .dirs import ensure_dir
from .paths import StateDir

SEEDS_FORMAT = "symcc-ulfm-seeds/1"
_NAME = re.compile(r"seeds-(\d+)\.json")


def record_seeds(state: StateDir, seeds: list[bytes]) -> int:
    """Record ``seeds`` as the next seed record; its number."""
    ensure_dir(state.seeds, state.modes.snapshot_dir)
    number = sum(1 for path in state.seeds.iterdir() if _NAME.fullmatch(path.name))
    items = sorted({hashlib.sha256(seed).hexdigest(): len(seed) for seed in seeds}.items())
    record = {"format": SEEDS_FORMAT, "number": number,
              "seeds": [{"sha256": sha256, "length": length} for sha256, length in items]}
    if not write_new(state.seeds / f"seeds-{number}.json", canonical_json(record), state.modes.snapshot):
        raise ProvenanceChanged(f"{state.seeds}/seeds-{number}.json exists already")
    return number
