"""Models of ``functools``: a function behind ``functools.lru_cache`` runs uncached.

A cache would hash (pin) a symbolic key and answer from concrete runs, so in an instrumented
module an ``lru_cache`` wrapper of a Python function is replaced by the function it wraps.
"""

from __future__ import annotations

import functools
import types

from .registry import register_kind


def _cached_function(value) -> bool:
    return isinstance(value, functools._lru_cache_wrapper) and isinstance(getattr(value, "__wrapped__", None),
                                                                           types.FunctionType)


def register_models() -> None:
    """An ``lru_cache`` wrapper of a Python function becomes the function."""
    register_kind(_cached_function, lambda value: value.__wrapped__)


__all__ = ["register_models"]
