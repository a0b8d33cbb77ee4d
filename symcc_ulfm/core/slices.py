"""Fuzzer slices: the lease of a fuzzer worker is a time slice, not an input of the corpus.

A fuzzer (``afl``, a Python fuzzer) runs on across leases; each lease asks it for what it kept
during ``seconds`` more (queue entries, crashes, hangs), returned as candidates like a concolic
worker's children and published through the WAL the same way. A slice is named by its
*descriptor*, a flat object (kind, generation, master, worker, sequence number, seconds, and for
a slice the adaptive mix lent an analysis worker the SHA-256 of its decision) that travels as the
WORK's hint; its SHA-256 stands where an input's would (the record's
``input_hash``), so every slice is a work identity of its own and a re-run slice can never be
counted as the one it replaces. The manifest records the descriptor, so anyone can check the
hash. A slice that lapses (its worker or master died) is not leased again: a fuzzer's time is
not an input to retry, and what the fuzzer had kept but not yet returned is found again.
"""

from __future__ import annotations

from typing import Any

from .canonical import digest

SLICE_FORMAT = "symcc-ulfm-slice/1"
_KEYS = {"slice", "kind", "generation", "master", "worker", "seq", "seconds"}


def descriptor(kind: str, generation: int, master: int, worker: int, seq: int, seconds: float,
               mix: str | None = None) -> dict[str, Any]:
    """``mix``: the SHA-256 of the decision that lent an analysis worker this slice
    (``core.master.mix``; the manifest records the decision), for such a slice only."""
    return {"slice": SLICE_FORMAT, "kind": kind, "generation": generation, "master": master, "worker": worker,
            "seq": seq, "seconds": float(seconds), **({"mix": mix} if mix is not None else {})}


def slice_hash(value: dict[str, Any]) -> str:
    """What stands for the slice's input in the WAL."""
    return digest(value)


def is_descriptor(hint: Any) -> bool:
    return isinstance(hint, dict) and set(hint) - {"mix"} == _KEYS and hint["slice"] == SLICE_FORMAT
