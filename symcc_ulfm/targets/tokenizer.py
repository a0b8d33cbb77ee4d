"""``tokenizer``: an arithmetic expression tokenizer and recursive-descent evaluator.

Input: ASCII like ``((4000*(3+1))-11)``: non-negative integers, ``+ - * / %`` (``/`` is floor
division and ``%`` the remainder), parentheses, spaces and unary minus. Malformed input and a
zero divisor raise :class:`ExpressionError` (a ``ValueError``: expected). The deepest branch
needs an expression nested three deep that uses a division and evaluates to exactly 1337; the
seed nests three deep but has no division.

Bugs: ``%`` does not check its divisor as ``/`` does, so ``x % 0`` raises ``ZeroDivisionError``;
nesting has no limit, so deeply nested parentheses (or unary minus) raise ``RecursionError``.
"""

from __future__ import annotations

DESCRIPTION = "expression tokenizer + recursive-descent evaluator (deepest: nested, divides, == 1337)"
DEEP = "1337 by division"
SEEDS = (b"((4000*(3+1))-11)",)
EXPECTED = ("ValueError",)
BUGS = (
    "exception: ZeroDivisionError from '%' with a zero divisor (only '/' checks it)",
    "exception: RecursionError on deeply nested parentheses or unary minus (no nesting limit)",
)


class ExpressionError(ValueError):
    """The input is not a well-formed expression, or divides by zero."""


def _symbol(c: int) -> str | None:
    if c == 0x28:
        return "("
    if c == 0x29:
        return ")"
    if c == 0x2F:
        return "/"
    if c == 0x2B:
        return "+"
    if c == 0x2D:
        return "-"
    if c == 0x2A:
        return "*"
    if c == 0x25:
        return "%"
    return None


def tokenize(data: bytes) -> list[tuple[str, object]]:
    tokens: list[tuple[str, object]] = []
    i = 0
    n = len(data)
    while i < n:
        c = data[i]
        if c == 0x20:
            i += 1
            continue
        symbol = _symbol(c)
        if symbol is not None:
            tokens.append(("op", symbol))
            i += 1
            continue
        if 0x30 <= c <= 0x39:
            value = 0
            while i < n and 0x30 <= data[i] <= 0x39:
                value = value * 10 + (data[i] - 0x30)
                i += 1
            tokens.append(("num", value))
            continue
        raise ExpressionError(f"unexpected byte at {i}")
    return tokens


class Parser:
    def __init__(self, tokens: list[tuple[str, object]]):
        self.tokens = tokens
        self.pos = 0
        self.depth = 0
        self.max_depth = 0
        self.divisions = 0

    def peek(self) -> object:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, object]:
        if self.pos >= len(self.tokens):
            raise ExpressionError("unexpected end of input")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expression(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            right = self.term()
            value = value + right if op == "+" else value - right
        return value

    def term(self):
        value = self.factor()
        while self.peek() in ("*", "/", "%"):
            op = self.take()[1]
            right = self.factor()
            if op == "*":
                value = value * right
            elif op == "%":
                value = value % right  # the bug: no zero check, unlike "/"
            else:
                if right == 0:
                    raise ExpressionError("division by zero in expression")
                self.divisions += 1
                value = value // right
        return value

    def factor(self):
        kind, token = self.take()
        if kind == "num":
            return token
        if token == "-":
            return -self.factor()
        if token == "(":
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)
            value = self.expression()
            if self.take()[1] != ")":
                raise ExpressionError("expected )")
            self.depth -= 1
            return value
        raise ExpressionError(f"unexpected {token!r}")


def parse(data: bytes) -> str:
    parser = Parser(tokenize(data))
    value = parser.expression()
    if parser.pos != len(parser.tokens):
        raise ExpressionError("trailing tokens")
    if parser.max_depth >= 3 and parser.divisions > 0:
        if value == 1337:
            return DEEP
        if value < 0:
            return "negative quotient"
        return "quotient"
    return "value"
