"""Models of ``re``: regular expressions that pin the part of a symbolic subject they examine.

The engine does not follow a regex match symbolically. A compiled pattern in an instrumented
module is a :class:`_PatternProxy`: ``match``, ``fullmatch`` and ``search`` run on the concrete
subject and pin only the characters it examined (from where the match was tried to one past its
end, to the end when it failed), and record the pattern and the match
(:func:`..expressions.path.regex`: the hybrid phase's regex words and input-to-state);
``findall``, ``finditer``, ``split``, ``sub`` and ``subn`` pin the subject whole. ``re`` itself is
a guarded module whose ``compile``, ``match``, ``fullmatch`` and ``search`` make such proxies, and
a pattern's bound method (``_m=PATTERN.match``) becomes the proxy's method.
"""

from __future__ import annotations

import re
import sys
import types

from ..expressions import path as P
from ..values.seq import SymSequence, concrete_deep
from .registry import register, register_kind
from .unmodelled import GuardedModule, pinning


class _PatternProxy:
    """A compiled regex whose matching methods pin the part of a symbolic subject they examined
    (and record the pattern and the match, :func:`..expressions.path.regex`)."""

    def __init__(self, pattern: re.Pattern):
        self._pattern = pattern

    def __getattr__(self, name):
        return getattr(self._pattern, name)

    def _anchored(self, name, string, pos=0, endpos=sys.maxsize):
        method = getattr(self._pattern, name)
        if not isinstance(string, SymSequence):
            return method(string, pos, endpos)
        begin, end, _ = slice(pos, endpos).indices(len(string._e))
        plain = string._plain()
        found = method(plain, begin, end)
        start = begin if found is None else found.start()
        P.regex(self._pattern, plain[start:end], None if found is None else found.end() - start)
        last = min(found.end() + 1, end) if found is not None else end
        for e in string._e[begin:last]:
            concrete_deep(e)
        return found

    def match(self, string, pos=0, endpos=sys.maxsize):
        return self._anchored("match", string, pos, endpos)

    def fullmatch(self, string, pos=0, endpos=sys.maxsize):
        return self._anchored("fullmatch", string, pos, endpos)

    def search(self, string, pos=0, endpos=sys.maxsize):
        return self._anchored("search", string, pos, endpos)


for _name in ("findall", "finditer", "split", "sub", "subn"):
    setattr(_PatternProxy, _name, lambda self, *args, _name=_name, **kwargs: getattr(self._pattern, _name)(
        *(concrete_deep(a) for a in args), **{k: concrete_deep(v) for k, v in kwargs.items()}))


def _regex_module() -> GuardedModule:
    """``re`` whose functions pin what they examine (the subject is pinned whole, except for matching)."""
    def compiled(pattern, flags=0):
        return _PatternProxy(re.compile(concrete_deep(pattern), flags))

    overrides = {"compile": compiled}
    for name in ("match", "fullmatch", "search"):
        overrides[name] = lambda pattern, string, flags=0, _name=name: getattr(compiled(pattern, flags), _name)(string)
    for name in ("findall", "finditer", "split", "sub", "subn"):
        overrides[name] = pinning(getattr(re, name))
    return GuardedModule(re, overrides)


def _is_pattern_method(value) -> bool:
    return isinstance(value, types.BuiltinMethodType) and isinstance(getattr(value, "__self__", None), re.Pattern)


def register_models() -> None:
    """``re`` becomes :func:`_regex_module`, a compiled pattern a proxy, a pattern's bound method the proxy's."""
    register(re, _regex_module)
    register_kind(lambda value: isinstance(value, re.Pattern), _PatternProxy)
    register_kind(_is_pattern_method, lambda value: getattr(_PatternProxy(value.__self__), value.__name__))


__all__ = ["register_models"]
