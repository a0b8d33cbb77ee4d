"""``tokenizer``: an arithmetic expression tokenizer and recursive-descent evaluator.

Input: ASCII like ``((4000*(3+1))-11)``: non-negative integers, ``+ - * /`` (``/`` is floor
division, a zero divisor is an error), parentheses, spaces and unary minus. The deepest branch
needs an expression nested three deep that uses a division and evaluates to exactly 1337; the
seed nests three deep but has no division.
"""

from __future__ import annotations

from ._common import reached

DESCRIPTION = "expression tokenizer + recursive-descent evaluator (deepest: nested, divides, == 1337)"
DEEP = "1337 by division"
SEEDS = (b"((4000*(3+1))-11)",)

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
        raise SyntaxError(f"unexpected byte at {i}")
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
            raise SyntaxError("unexpected end of input")
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
        while self.peek() in ("*", "/"):
            op = self.take()[1]
            right = self.factor()
            if op == "*":
                value = value * right
            else:
                if right == 0:
                    raise ZeroDivisionError("division by zero in expression")
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
                raise SyntaxError("expected )")
            self.depth -= 1
            return value
        raise SyntaxError(f"unexpected {token!r}")


def parse(data: bytes) -> str:
    parser = Parser(tokenize(data))
    value = parser.expression()
    if parser.pos != len(parser.tokens):
        raise SyntaxError("trailing tokens")
    if parser.max_depth >= 3 and parser.divisions > 0:
        if value == 1337:
            return DEEP
        if value < 0:
            return "negative quotient"
        return "quotient"
    return "value"


def deepest(data: bytes) -> bool:
    return reached(parse, data, DEEP)
