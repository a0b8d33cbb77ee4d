"""Dictionary words from the target's own modules: the constants of their code and their regexes.

The hybrid mutator (:mod:`.havoc`) splices words into inputs. The words a symbolic run records
(:func:`.havoc.dictionary`) are what the input was compared with on *that* path; the words of
this module are what the parser could compare with anywhere, found without running it:

* :func:`code_words`: the ``str`` and ``bytes`` constants of every code object of a module
  (``co_consts``, recursively through nested functions, classes and comprehensions, and the
  members of constant tuples and frozensets), and its integer constants as decimal ASCII. Strings
  that read as messages (longer than :data:`MESSAGE_LENGTH` with two or more spaces) are left
  out, as is anything longer than :data:`..expressions.path.MAX_TOKEN_LENGTH`;
* :func:`regex_words`: what a regular expression expects, from its parse tree (``re._parser``):
  its runs of literal characters, the members of its small character classes, and a few sample
  strings it matches (:func:`_samples`: every repetition at its minimum, or once, choosing the
  first, the last or the k-th alternative of each alternation and member of each class), e.g.
  ``0000-01-01T00:00:00.0Z`` for a date-time pattern. A pattern the parser cannot read gives no words.

:func:`module_words` gathers both for a list of modules (the regexes are the compiled patterns
among the module's globals and its classes' attributes); ``str`` words are encoded as UTF-8
(``surrogateescape``), the encoding the mutator uses for the run's own words. The result is
deduplicated, in a deterministic order (regex words first, then code constants, module by
module) and at most :data:`MAX_WORDS` long.
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Iterable, Iterator

from ..expressions import path as P

try:
    from re import _parser
except ImportError:  # a Python without re._parser: no regex words
    _parser = None

MAX_WORDS = 1024
MESSAGE_LENGTH = 16
MAX_CLASS = 16  # a character class with more members than this gives no member words
MAX_REPEAT = 8  # a sample repeats an item at most this often
_MAX_ALTERNATIVES = 4  # samples choosing the k-th alternative, k < this
_CATEGORY_SAMPLE = {"DIGIT": "0", "SPACE": " ", "WORD": "a", "LINEBREAK": "\n"}
_NEGATED_SAMPLE = " a0\n-_.:/"


def _encode(value) -> bytes | None:
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray)) and 0 < len(value) <= P.MAX_TOKEN_LENGTH:
        return bytes(value)
    return None


def _flat(const) -> list:
    """A constant, or the members of a constant tuple or frozenset in a deterministic order (a
    frozenset's iteration order follows the hash seed); code objects are not constants here."""
    if isinstance(const, frozenset):
        return sorted(const, key=lambda v: (type(v).__name__, repr(v)))
    if isinstance(const, tuple):
        return list(const)
    return [] if isinstance(const, types.CodeType) else [const]


def _code_objects(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object nested in it, breadth first."""
    queue = [code]
    for current in queue:
        queue.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return queue


def code_words(code: types.CodeType) -> list[bytes]:
    """The words of one module's code object (module docstring); the names of its functions and
    classes (which ``co_consts`` hold for ``__qualname__`` and ``__all__``) are not words."""
    codes = _code_objects(code)
    names = {c.co_name for c in codes} | {c.co_qualname for c in codes}
    words: dict[bytes, None] = {}
    for const in (k for c in codes for entry in c.co_consts for k in _flat(entry)):
        if isinstance(const, bool) or const in names:
            continue
        if isinstance(const, int):
            const = str(const)
        if isinstance(const, str) and len(const) > MESSAGE_LENGTH and const.count(" ") >= 2:
            continue
        word = _encode(const)
        if word is not None:
            words.setdefault(word, None)
    return list(words)


# -- regular expressions ---------------------------------------------------------------------------
def _class_members(items: list) -> list[int] | None:
    """The characters of a class (``IN``) with at most :data:`MAX_CLASS` members, else None."""
    members: list[int] = []
    for op, av in items:
        if op is _parser.LITERAL:
            members.append(av)
        elif op is _parser.RANGE and av[1] - av[0] < MAX_CLASS:
            members.extend(range(av[0], av[1] + 1))
        else:
            return None
        if len(members) > MAX_CLASS:
            return None
    return members


def _class_sample(items: list, pick: int) -> int:
    """One character of a class: the ``pick``-th listed one, or one outside a negated class."""
    if items and items[0][0] is _parser.NEGATE:
        listed = set()
        for op, av in items[1:]:
            if op is _parser.LITERAL:
                listed.add(av)
            elif op is _parser.RANGE:
                listed.update(range(av[0], av[1] + 1))
        return next((ord(c) for c in _NEGATED_SAMPLE if ord(c) not in listed), ord("~"))
    choices: list[int] = []
    for op, av in items:
        if op is _parser.LITERAL:
            choices.append(av)
        elif op is _parser.RANGE:
            choices.extend((av[0], av[1]))
        elif op is _parser.CATEGORY:
            choices.append(_category_sample(av))
    return choices[min(pick, len(choices) - 1)] if choices else ord("a")


def _category_sample(category) -> int:
    name = str(category).removeprefix("CATEGORY_")
    if name.startswith("NOT_"):
        return ord(" ") if name[4:] == "WORD" else ord("a")
    return ord(_CATEGORY_SAMPLE.get(name.removeprefix("UNI_"), "a"))


def _sample(items, once: bool, pick: int, out: list[int]) -> None:
    """Append to ``out`` the characters of one string ``items`` match (see :func:`_samples`)."""
    for op, av in items:
        if len(out) > P.MAX_TOKEN_LENGTH:
            return
        if op is _parser.LITERAL:
            out.append(av)
        elif op is _parser.NOT_LITERAL:
            out.append(ord("a") if av != ord("a") else ord("b"))
        elif op is _parser.ANY:
            out.append(ord("a"))
        elif op is _parser.IN:
            out.append(_class_sample(av, pick))
        elif op is _parser.CATEGORY:
            out.append(_category_sample(av))
        elif op is _parser.BRANCH:
            alternatives = av[1]
            _sample(alternatives[min(pick, len(alternatives) - 1)], once, pick, out)
        elif op is _parser.SUBPATTERN:
            _sample(av[3], once, pick, out)
        elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, getattr(_parser, "POSSESSIVE_REPEAT", None)):
            low, high, item = av
            times = min(max(low, 1 if once else 0), high, MAX_REPEAT)
            for _ in range(times):
                _sample(item, once, pick, out)
        elif op is getattr(_parser, "ATOMIC_GROUP", None):
            _sample(av, once, pick, out)
        elif op is _parser.GROUPREF_EXISTS:
            _sample(av[1], once, pick, out)
        # AT, ASSERT, ASSERT_NOT, GROUPREF: nothing to add


def _samples(parsed) -> list[list[int]]:
    """Strings ``parsed`` matches: minimal repetitions and first choices, then single repetitions
    with the first, last and k-th (k < :data:`_MAX_ALTERNATIVES`) choices."""
    out = []
    for once, pick in ((False, 0), (True, 0), (True, 1 << 30), *((True, k) for k in range(1, _MAX_ALTERNATIVES))):
        chars: list[int] = []
        _sample(parsed, once, pick, chars)
        out.append(chars)
    return out


def _pieces(items, out: list[list[int]]) -> None:
    """Append the runs of consecutive literals and the members of small classes, everywhere in ``items``."""
    run: list[int] = []
    for op, av in items:
        if op is _parser.LITERAL:
            run.append(av)
            continue
        if run:
            out.append(run)
            run = []
        if op is _parser.IN:
            out.extend([c] for c in _class_members(av) or ())
        elif op is _parser.BRANCH:
            for alternative in av[1]:
                _pieces(alternative, out)
        elif op is _parser.SUBPATTERN:
            _pieces(av[3], out)
        elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, getattr(_parser, "POSSESSIVE_REPEAT", None)):
            _pieces(av[2], out)
    if run:
        out.append(run)


def _parse(pattern: str | bytes, flags: int):
    if _parser is None:
        return None
    try:
        return _parser.parse(pattern, flags)
    except (re.error, TypeError, ValueError, RecursionError, AttributeError):
        return None


def _texts(pattern: str | bytes, runs: list[list[int]]) -> list[str | bytes]:
    """Character runs as texts of the pattern's own type, non-empty, deduplicated, in order."""
    texts: dict[str | bytes, None] = {}
    for chars in runs:
        try:
            text = bytes(chars) if isinstance(pattern, bytes) else "".join(map(chr, chars))
        except ValueError:
            continue
        if 0 < len(text) <= P.MAX_TOKEN_LENGTH:
            texts.setdefault(text, None)
    return list(texts)


@functools.lru_cache(maxsize=1024)
def regex_samples(pattern: str | bytes, flags: int = 0) -> tuple[str | bytes, ...]:
    """Strings the pattern matches (:func:`_samples`), of its own type; ``()`` when it cannot be parsed."""
    parsed = _parse(pattern, flags)
    return () if parsed is None else tuple(_texts(pattern, _samples(parsed)))


@functools.lru_cache(maxsize=1024)
def regex_words(pattern: str | bytes, flags: int = 0) -> tuple[bytes, ...]:
    """The words of one regular expression (module docstring); ``()`` when it cannot be parsed."""
    parsed = _parse(pattern, flags)
    if parsed is None:
        return ()
    runs = _samples(parsed)
    _pieces(parsed, runs)
    return tuple(dict.fromkeys(w for w in map(_encode, _texts(pattern, runs)) if w is not None))


def _patterns(module: types.ModuleType) -> Iterator[re.Pattern]:
    """Compiled patterns among a module's globals and the attributes of its classes."""
    for value in list(vars(module).values()):
        if isinstance(value, re.Pattern):
            yield value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            yield from (v for v in vars(value).values() if isinstance(v, re.Pattern))


def _module_code(module: types.ModuleType) -> types.CodeType | None:
    """The code object of a module's source (its loader's, usually from the bytecode cache)."""
    spec = getattr(module, "__spec__", None)
    try:
        return spec.loader.get_code(spec.name)
    except (AttributeError, ImportError, SyntaxError, ValueError, OSError):  # no spec, loader or source
        return None


def module_words(modules: Iterable[types.ModuleType]) -> list[bytes]:
    """Regex words, then code constants, of ``modules`` (module docstring)."""
    modules = list({id(m): m for m in modules}.values())
    words: dict[bytes, None] = {}
    for module in modules:
        for pattern in _patterns(module):
            words.update(dict.fromkeys(regex_words(pattern.pattern, pattern.flags)))
    for module in modules:
        code = _module_code(module)
        if code is not None:
            words.update(dict.fromkeys(code_words(code)))
    return list(words)[:MAX_WORDS]


__all__ = ["MAX_WORDS", "code_words", "module_words", "regex_samples", "regex_words"]
