"""Truth of symbolic elements without branching: conditions built as expressions, so that
scanning code can combine element tests (``all``, ``any``, ranges, ``x if c else y``) and leave
the branch to whoever asks for the truth of the result."""

from __future__ import annotations

from ..expressions import expr as E
from .symbolic import SymBool, SymInt, wrap


def concrete_value(e) -> int:
    """The concrete value of an element without recording anything."""
    if isinstance(e, SymInt):
        return e.node.val
    if isinstance(e, SymBool):
        return int(e.node.val)
    return e


def is_symbolic(elems) -> bool:
    return any(type(e) is SymInt for e in elems)


def _combine(parts, absorbing: bool, op: int) -> bool | SymBool:
    """``all(parts)`` (``absorbing`` False, ``op`` BAND) or ``any(parts)`` (True, BOR) as one
    condition, without asking for the truth of symbolic parts (no branch recorded)."""
    nodes = []
    for part in parts:
        if isinstance(part, SymBool):
            nodes.append(part.node)
        elif bool(part) is absorbing:
            return absorbing
    if not nodes:
        return not absorbing
    result = nodes[0]
    for node in nodes[1:]:
        result = E.make(op, (result, node))
    return wrap(result)


def conjunction(parts) -> bool | SymBool:
    """``all(parts)`` without asking for the truth of symbolic parts (no branch recorded)."""
    return _combine(parts, False, E.BAND)


def disjunction(parts) -> bool | SymBool:
    """``any(parts)`` without asking for the truth of symbolic parts."""
    return _combine(parts, True, E.BOR)


def negation(value):
    if isinstance(value, SymBool):
        return wrap(E.negate(value.node))
    return not value


def ite(cond, then, other):
    """``then if cond else other`` as a value, without recording a branch."""
    if not isinstance(cond, SymBool):
        return then if cond else other
    a, b = E.lift(_node(then)), E.lift(_node(other))
    return wrap(E.make(E.ITE, (cond.node, a, b)))


def _node(value):
    if isinstance(value, SymInt):
        return value.node
    if isinstance(value, SymBool):
        return value.as_int().node
    return value


def in_ranges(e, ranges) -> bool | SymBool:
    """``e`` lies in one of the inclusive ``(low, high)`` ranges, as one condition."""
    return disjunction(_between(e, low, high) for low, high in ranges)


def _between(e, low: int, high: int):
    if low == high:
        return e == low
    return conjunction((low <= e, e <= high))
