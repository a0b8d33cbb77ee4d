"""The path recorder: branches taken on symbolic data and fixed-value (concretisation) constraints.

A *branch* is recorded whenever the truth value of a symbolic condition is asked for; its
site id is derived from the code location of the first frame outside the engine (the
``executors/concolic`` package and its sub-packages: file basename, qualified name, line and
bytecode offset) hashed with SHA-256, so the same branch has the same id in every process. A
*pin* records ``expr == concrete value`` where the engine had to give up symbolic tracking
(index, hash, C code): the solver must then keep that value, which keeps every generated input
honest about what the engine could not model.

A *token* is a constant string or bytes the input was compared with, searched for or looked up
against (``==``, ``find``/``startswith``/``split`` separators, dict and set keys): the hybrid
mutator's dictionary (:mod:`..hybrid.havoc`), like libFuzzer's comparison tracing.

A *pattern* is a compiled regular expression a symbolic subject was matched against (its
``(pattern, flags)``): the mutator's dictionary takes its literals and samples
(:func:`..hybrid.module_words.regex_words`). Each such *match* is kept too (first
:data:`MAX_MATCHES`): the pattern, the subject's text from where the match was tried or found
(at most :data:`MAX_TOKEN_LENGTH` characters) and the matched length (None when it failed), the
material of regex input-to-state (:func:`..hybrid.input_to_state.regex_pairs`).

A *comparison* ``(site, left, right)`` is kept apart from the path: two concrete operands of a
comparison that involved an opaque value (the result of unmodelled code run on input, see
:mod:`..values.opaque`), the material of input-to-state proposals.

A *text comparison* ``(text, constant)`` is input-derived text, symbolic (its concrete value: the
solver cannot change text a pin fixed) or made concrete, that differed from a constant it was
compared with (``==`` in :meth:`..values.seq.SymSequence.__eq__` and
:mod:`..tracing.literal_compares`; the constant is the text with a missing affix added for
``startswith``/``endswith`` in :mod:`..models.containers`, and another attribute's suffix for a
name dispatched with ``getattr`` in :func:`..models.builtinslib.recording_getattr`; first
:data:`MAX_TEXT_COMPARES` distinct pairs, text at most :data:`MAX_TOKEN_LENGTH` long): the hybrid
phase puts the constant where the text stands in the input
(:func:`..hybrid.input_to_state.propose`).

A *callee argument* ``(module, text)`` is the concrete value of input-derived text passed to a
Python function of a module that is not instrumented (:class:`..models.unmodelled.GuardedModule`;
first :data:`MAX_CALLEES` distinct pairs): the engine cannot see what that code compares the
text with, so the hybrid phase tries the words of that module (:mod:`..hybrid.module_words`) in
its place.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field

from . import expr as E

BRANCH, PIN = 0, 1
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # concolic/
_CHECK_EVERY = 256
MAX_COMPARES = 1024
MAX_TOKENS = 512
MAX_TOKEN_LENGTH = 64
MAX_PATTERNS = 64
MAX_MATCHES = 256
MAX_TEXT_COMPARES = 256
MAX_CALLEES = 16


class ExecTimeout(BaseException):
    """The run went past its deadline (BaseException so that ``except Exception`` in targets cannot eat it)."""


def stable_id(text: str, bits: int = 64) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[: bits // 8], "big")


_engine_code: dict[int, tuple[bool, object]] = {}
_site_ids: dict[tuple[int, int], tuple[int, object]] = {}


def _is_engine(code) -> bool:
    hit = _engine_code.get(id(code))
    if hit is None:
        folder = os.path.dirname(os.path.abspath(code.co_filename))
        inside = folder == _ENGINE_DIR or folder.startswith(_ENGINE_DIR + os.sep)
        hit = _engine_code[id(code)] = (inside, code)
    return hit[0]


def site_of(frame) -> int:
    """Stable id of the innermost non-engine location at or above ``frame``."""
    while frame is not None and _is_engine(frame.f_code):
        frame = frame.f_back
    if frame is None:
        return 0
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    hit = _site_ids.get(key)
    if hit is None:
        text = f"{os.path.basename(code.co_filename)}:{code.co_qualname}:{frame.f_lineno}:{frame.f_lasti}"
        hit = _site_ids[key] = (stable_id(text), code)
    return hit[0]


@dataclass
class Path:
    """Entries in execution order: ``(BRANCH, condition, site)`` or ``(PIN, equality, 0)``."""

    deadline: float
    max_entries: int
    entries: list[tuple[int, E.Node, int]] = field(default_factory=list)
    compares: list[tuple[int, object, object]] = field(default_factory=list)
    tokens: dict[bytes | str, None] = field(default_factory=dict)
    patterns: dict[tuple[str | bytes, int], None] = field(default_factory=dict)
    matches: list[tuple[tuple[str | bytes, int], str | bytes, int | None]] = field(default_factory=list)
    texts: dict[tuple[str | bytes, str | bytes], None] = field(default_factory=dict)
    callees: dict[tuple[str, str | bytes], None] = field(default_factory=dict)
    branches: int = 0
    pins: int = 0
    truncated: bool = False

    def _room(self) -> bool:
        if len(self.entries) % _CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise ExecTimeout("symbolic run exceeded its deadline")
        if len(self.entries) >= self.max_entries:
            self.truncated = True
            return False
        return True


_active: Path | None = None


def start(deadline: float, max_entries: int) -> Path:
    global _active
    E.reset()
    _active = Path(deadline, max_entries)
    return _active


def stop() -> Path | None:
    global _active
    path, _active = _active, None
    return path


def branch(cond: E.Node) -> bool:
    """Record that the program asked for the truth of ``cond``; returns its concrete value."""
    path = _active
    if path is not None and path._room():
        path.entries.append((BRANCH, cond, site_of(sys._getframe(1))))
        path.branches += 1
    return cond.val


def pin(node: E.Node):
    """Concretise ``node``: record ``node == value`` and return the value."""
    if node.op == E.CONST:
        return node.val
    path = _active
    if path is not None and path._room():
        fixed = E.make(E.EQ, (node, E.const(node.val)))
        if isinstance(fixed, E.Node):
            path.entries.append((PIN, fixed, 0))
            path.pins += 1
    return node.val


def compare(left, right) -> None:
    """Record the concrete operands of a comparison involving an opaque value (first MAX_COMPARES)."""
    path = _active
    if path is not None and len(path.compares) < MAX_COMPARES:
        path.compares.append((site_of(sys._getframe(1)), left, right))


def token(value) -> None:
    """Record a constant str/bytes the input was compared with (a dictionary word for the mutator)."""
    path = _active
    if (path is not None and type(value) in (bytes, str) and 0 < len(value) <= MAX_TOKEN_LENGTH
            and len(path.tokens) < MAX_TOKENS):
        path.tokens[value] = None


def text_compare(text, constant) -> None:
    """Record that ``text`` (the concrete value of input-derived text) was compared with the
    constant ``constant`` and differed; pairs of single characters are left to the solver and
    the byte edits of the mutator, and an empty constant leaves nothing to put in the text's place."""
    path = _active
    if (path is not None and text != constant and 0 < len(text) <= MAX_TOKEN_LENGTH and constant
            and max(len(text), len(constant)) > 1 and len(path.texts) < MAX_TEXT_COMPARES):
        path.texts[(text, constant)] = None


def callee(module: str, text) -> None:
    """Record that uninstrumented code of ``module`` was given input-derived ``text`` (its concrete value)."""
    path = _active
    if path is not None and text and len(path.callees) < MAX_CALLEES:
        path.callees[(module, text)] = None


def regex(pattern, text, length: int | None) -> None:
    """Record that ``pattern`` was matched against symbolic text: ``text`` from where the match was
    tried or found, ``length`` the matched length or None (see the module docstring)."""
    path = _active
    if path is None:
        return
    key = (pattern.pattern, pattern.flags)
    if len(path.patterns) < MAX_PATTERNS:
        path.patterns[key] = None
    if len(path.matches) < MAX_MATCHES:
        path.matches.append((key, text[:MAX_TOKEN_LENGTH], length))
