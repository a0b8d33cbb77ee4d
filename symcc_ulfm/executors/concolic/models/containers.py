"""Lookups keyed by symbolic values: ``in``, ``d[k]``, ``d.get(k)``, and joins onto plain separators.

These are the hooks that :mod:`..tracing.rewrite` puts in place of ``x in c``, ``c[k]`` and a few
method calls in instrumented code. With plain operands each does exactly the plain operation. With
a symbolic key:

* membership in a set, frozenset, dict or keys view is the disjunction of ``key == k`` over the
  keys that can equal it (exact: equal keys are the only way to be found), no branch recorded;
* ``d[key]`` / ``d.get(key)`` record two branches, "found" and "the key is the one found", so
  that the search can ask both for a miss and for another key of the same table;
* ``x in "abc"`` / ``x in b"..."`` / ``x in (a, b)`` become disjunctions of (window) equalities,
  and ``charset.issuperset(text)`` the conjunction of its characters' memberships.

Containers with more than :data:`MAX_KEYS` candidate keys, keys that could compare equal across
types (floats), and anything else fall back to the plain operation, which hashes (pins) the key.

``text.startswith(affix)`` / ``text.endswith(affix)`` answer as always; when the text (plain, or
the concrete value of symbolic text) lacks the affix, the affix is a token and the text with the
affix added a text comparison (:func:`..expressions.path.text_compare`): ``name.endswith('*')``
after a regex pinned the name leaves the hybrid phase the name with ``*`` to try in its place.
"""

from __future__ import annotations

from collections.abc import KeysView

from ..expressions import path as P
from ..values.conditions import conjunction, disjunction, in_ranges, negation
from ..values.seq import SymSequence, concrete_deep
from ..values.symbolic import SymBool, SymInt
from ..values.symbytes import SymBytes
from ..values.symstr import SymStr
from .builtinslib import symbolic_buffer, view_item

MAX_KEYS = 256
_MISSING = object()


def is_symbolic(value) -> bool:
    return isinstance(value, (SymInt, SymBool, SymSequence))


def _plain(value):
    """The concrete value of a symbolic key, without recording anything."""
    if isinstance(value, SymSequence):
        return value._plain()
    if isinstance(value, (SymInt, SymBool)):
        return value.node.val if isinstance(value, SymInt) else bool(value.node.val)
    return value


def _candidates(key, keys) -> list | None:
    """The keys that ``key`` could equal, or None when the model does not apply."""
    if isinstance(key, SymStr):
        kind: tuple[type, ...] = (str,)
    elif isinstance(key, SymBytes):
        kind = (bytes,)
    elif isinstance(key, (SymInt, SymBool)):
        kind = (int,)
    else:
        return None
    out = []
    for k in keys:
        if isinstance(k, kind):
            out.append(k)
        elif isinstance(k, (float, complex)) or (kind == (int,) and not isinstance(k, (str, bytes, tuple))
                                                 and hasattr(k, "__int__")):
            return None  # numbers of other types can equal an int key: not modelled
        if len(out) > MAX_KEYS:
            return None
    return out


def _unit(key):
    """The code point / byte of a one-element symbolic key (a character or an int), else None."""
    if isinstance(key, SymSequence):
        return key._e[0] if len(key._e) == 1 else None
    return key if isinstance(key, SymInt) else None


def _points(found: list) -> list[int] | None:
    """The code points / values of candidate keys that are all one character or small ints."""
    points = []
    for k in found:
        if isinstance(k, (str, bytes)) and len(k) == 1:
            points.append(ord(k))
        elif type(k) is int:
            points.append(k)
        else:
            return None
    return points


def _equal_any(key, found: list):
    """``key == k`` for one of ``found``: code point ranges for characters, else one equality each."""
    unit, points = _unit(key), _points(found)
    if unit is None or points is None or (isinstance(key, SymInt) and any(isinstance(k, (str, bytes))
                                                                        for k in found)):
        return disjunction(key == k for k in found)
    return in_ranges(unit, _ranges_of(points))


def _ranges_of(points) -> list[tuple[int, int]]:
    """Sorted inclusive ranges covering exactly the given code points."""
    ranges: list[tuple[int, int]] = []
    for point in sorted(set(points)):
        if ranges and ranges[-1][1] + 1 == point:
            ranges[-1] = (ranges[-1][0], point)
        else:
            ranges.append((point, point))
    return ranges


def _membership(key, keys, container):
    """``key in container`` as a condition over the candidate keys, or None (not modelled)."""
    found = _candidates(key, keys)
    if found is None:
        return None
    if isinstance(key, SymSequence):
        for k in found[:64]:
            P.token(k)
        found = [k for k in found if len(k) == len(key._e)]  # other lengths never compare equal
    cond = _equal_any(key, found)
    if bool(_plain(cond) if not isinstance(cond, SymBool) else cond.node.val) != (_plain(key) in container):
        return None
    return cond


def _hashed(container) -> bool:
    return isinstance(container, (set, frozenset, dict, KeysView))


def _lift(text):
    if isinstance(text, str):
        return SymStr(text, [ord(c) for c in text])
    return SymBytes(text, list(text))


def contains(item, container):
    """``item in container``."""
    if isinstance(container, SymSequence) or not is_symbolic(item):
        return item in container
    if isinstance(container, (str, bytes)) and isinstance(item, (str, bytes, SymInt)):
        if isinstance(container, str) != isinstance(item, str):
            return concrete_deep(item) in container  # raises Python's TypeError
        unit = _unit(item)
        if unit is not None:  # one character (or byte value) in a plain string: its code point ranges
            return in_ranges(unit, _ranges_of(container if isinstance(container, bytes) else map(ord, container)))
        return _lift(container).__contains__(item)
    if _hashed(container):
        cond = _membership(item, container.keys() if isinstance(container, dict) else container, container)
        if cond is not None:
            return cond
    elif isinstance(container, (list, tuple)) and len(container) <= MAX_KEYS:
        cond = disjunction(item == x for x in container)
        if (cond.node.val if isinstance(cond, SymBool) else bool(cond)) == (_plain(item) in container):
            return cond
    return concrete_deep(item) in container


def not_contains(item, container):
    """``item not in container``."""
    return negation(contains(item, container))


def _lookup(mapping: dict, key):
    """(the stored key that ``key`` finds, or _MISSING) with the two branches recorded; None if not modelled."""
    cond = _membership(key, mapping.keys(), mapping)
    if cond is None:
        return None
    if not cond:
        return _MISSING
    plain = _plain(key)
    for k in mapping:
        if isinstance(k, type(plain)) or isinstance(plain, type(k)):
            if k == plain:
                bool(key == k)
                return k
    return None


def getitem(container, key):
    """``container[key]``."""
    if isinstance(container, memoryview):
        item = view_item(container, key)
        if item is not None:
            return item
        return container[key]
    if not is_symbolic(key) or isinstance(container, SymSequence):
        return container[key]
    if isinstance(container, dict):
        found = _lookup(container, key)
        if found is not None:
            return container[_plain(key) if found is _MISSING else found]
    return container[key]


def _affix_pairs(obj, name: str, affixes) -> None:
    """Text that does not start (end) with an affix: the affix is a token, and the text with the
    affix added is a text comparison (:func:`..expressions.path.text_compare`) for input-to-state."""
    text = obj._plain() if isinstance(obj, SymSequence) else obj
    for affix in affixes if isinstance(affixes, tuple) else (affixes,):
        if type(affix) is type(text) and affix:
            P.token(affix)
            P.text_compare(text, affix + text if name == "startswith" else text + affix)


def call_method(obj, name: str, *args):
    """``obj.name(*args)`` for the few methods whose receiver is a plain object: get, join, issuperset,
    tobytes; and startswith/endswith, which record their affixes when the text lacks them
    (:func:`_affix_pairs`)."""
    if name == "get" and isinstance(obj, dict) and args and is_symbolic(args[0]) and len(args) <= 2:
        found = _lookup(obj, args[0])
        if found is _MISSING:
            return args[1] if len(args) > 1 else None
        if found is not None:
            return obj.get(found)
    elif name == "join" and isinstance(obj, (str, bytes)) and not isinstance(obj, SymSequence) and len(args) == 1:
        parts = list(args[0])
        if any(isinstance(p, SymSequence) for p in parts):
            return _lift(obj).join(parts)
        return obj.join(parts)
    elif name == "issuperset" and isinstance(obj, (set, frozenset)) and len(args) == 1 and isinstance(
            args[0], SymSequence):
        return conjunction(contains(item, obj) for item in args[0])
    elif name == "tobytes" and isinstance(obj, memoryview) and not args:
        source = symbolic_buffer(obj)
        if source is not None:
            return source
    elif name in ("startswith", "endswith") and isinstance(obj, (str, bytes)) and len(args) == 1:
        result = getattr(obj, name)(*args)
        if not (result.node.val if isinstance(result, SymBool) else result):
            _affix_pairs(obj, name, args[0])
        return result
    return getattr(obj, name)(*args)


HOOKS = {"__symcc_in__": contains, "__symcc_not_in__": not_contains, "__symcc_getitem__": getitem,
         "__symcc_method__": call_method}
"""Global names the rewritten code calls (see :mod:`..tracing.rewrite`)."""
REWRITTEN_METHODS = frozenset({"get", "join", "issuperset", "tobytes", "startswith", "endswith"})
