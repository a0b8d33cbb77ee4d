"""Comparison tracing: the string constants instrumented code compares text with, equal or not.

:func:`..expressions.path.token` records the constants a *symbolic* value is compared with.
Parsers often compare text the engine had to make concrete (a header value after a regex match, a
field after a C call) with constants: ``maintype == 'multipart'``. Those comparisons are invisible
to the symbolic part, yet the constant is what the mutator should try there, as libFuzzer's
comparison hooks would give it. :mod:`.rewrite` therefore turns ``x == 'const'`` and ``x !=
'const'`` (a ``str`` or ``bytes`` literal on either side, one comparison operator) into
:func:`equals` / :func:`not_equals`, which record the constant as a token when the other operand
is text of the same kind (symbolic or not) that differs from it, and return exactly what the
comparison would. When that operand is concrete, the pair is recorded too
(:func:`..expressions.path.text_compare`): the hybrid phase then tries the input with the constant
in the text's place (input-to-state, as RedQueen does for the operands of compare instructions).
Only symbolic runs execute the rewritten code.
"""

from __future__ import annotations

from ..expressions import path as P
from ..values.seq import SymSequence


def _trace(left, right, constant: int) -> None:
    value, other = (right, left) if constant else (left, right)
    if isinstance(other, SymSequence) or isinstance(other, str) is not isinstance(value, str):
        return  # symbolic operands record their own tokens; str against bytes is never equal
    if isinstance(other, (str, bytes)) and other != value:
        P.token(value)
        P.text_compare(str.__str__(other) if isinstance(other, str) else bytes(other), value)


def equals(left, right, constant: int):
    """``left == right``; ``constant`` is 0 when ``left`` is the literal, 1 when ``right`` is."""
    _trace(left, right, constant)
    return left == right


def not_equals(left, right, constant: int):
    """``left != right``; ``constant`` as for :func:`equals`."""
    _trace(left, right, constant)
    return left != right


HOOKS = {"__symcc_eq__": equals, "__symcc_ne__": not_equals}
"""Global names the rewritten code calls (see :mod:`.rewrite`)."""

__all__ = ["HOOKS", "equals", "not_equals"]
