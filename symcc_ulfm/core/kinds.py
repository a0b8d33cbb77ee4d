"""Worker kinds: which worker slot of a master group runs which kind of worker.

``afl:1,symcc:2`` (``launch --worker-kinds``) gives each group's first worker slot the kind
``afl`` and the next two ``symcc``; the counts add up to ``workers_per_master``. The layout
(``core.layout``) gives the worker at position ``i`` of its group the kind of slot
``i mod workers_per_master`` (a group that took in a trailing lone endpoint has one position
more), in every generation: a promoted spare takes the kind of the slot it fills. Without
worker kinds every slot is of the campaign's executor.

Two families: an *analysis* kind (``concolic``, ``symcc``: one lease = one input of the corpus,
solved) and a *fuzzer* kind (``afl``, a Python fuzzer: one lease = a time slice of a fuzzer that
runs on, returning what it kept). Which names are which is the executor registry's
(``executors``); this module only parses, formats and expands.
"""

from __future__ import annotations

import re

from ..errors import PolicyError

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_ITEM = re.compile(r"([a-z][a-z0-9_]{0,63}):([0-9]{1,4})")


def parse_kinds(text: str, field: str = "worker_kinds") -> tuple[tuple[str, int], ...]:
    """``afl:1,symcc:2`` -> ``(("afl", 1), ("symcc", 2))``; "" -> ()."""
    if not isinstance(text, str):
        raise PolicyError(field, f"{text!r}: expected KIND:COUNT,... (e.g. afl:1,symcc:2)")
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _ITEM.fullmatch(part)
        if not match or int(match[2]) < 1:
            raise PolicyError(field, f"{part[:80]!r}: expected KIND:COUNT with COUNT >= 1 (e.g. afl:1,symcc:2)")
        out.append((match[1], int(match[2])))
    names = [name for name, _ in out]
    if len(set(names)) != len(names):
        raise PolicyError(field, f"{text[:200]!r}: a kind is named twice")
    return tuple(out)


def format_kinds(kinds: tuple[tuple[str, int], ...]) -> str:
    return ",".join(f"{name}:{count}" for name, count in kinds)


def check_kinds(kinds: tuple[tuple[str, int], ...], workers_per_master: int, field: str = "worker_kinds") -> None:
    if not isinstance(kinds, tuple) or not all(
        isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], str) and _NAME.fullmatch(k[0])
        and type(k[1]) is int and k[1] >= 1 for k in kinds
    ):
        raise PolicyError(field, "expected parsed (KIND, COUNT) pairs; a string KIND:COUNT,... goes through build_policy")
    total = sum(count for _, count in kinds)
    if kinds and total != workers_per_master:
        raise PolicyError(field, f"{format_kinds(kinds)} gives {total} worker slots per master group; "
                                 f"workers_per_master is {workers_per_master}: they must be equal")


def slot_kinds(kinds: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """The kind of each worker slot of a group, in order (() when every slot runs the executor)."""
    return tuple(name for name, count in kinds for _ in range(count))


def kind_at(slots: tuple[str, ...], position: int) -> str | None:
    """The kind of the worker at ``position`` of its group (None: the campaign's executor)."""
    return slots[position % len(slots)] if slots else None
