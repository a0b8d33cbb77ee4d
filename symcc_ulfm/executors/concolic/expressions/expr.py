"""Hash-consed expression graph over the input bytes.

Every node stores, besides its structure, the *concrete value* it has on the input of the
current run and a static interval ``[lo, hi]`` that holds for **every** input (each input byte
ranges over 0..255). The interval fixes the node's signed bit width, so that the z3 encoding
(:mod:`.z3conv`) can compute in a width where two's complement arithmetic equals Python's
unbounded ints exactly. A result that would need more than :data:`MAX_WIDTH` bits raises
:class:`TooWide` and the symbolic layer concretises instead of silently wrapping.

Nodes are interned per run (:func:`reset` clears the table): structurally equal expressions are
the same object, which keeps graphs small and makes the z3 conversion cache effective. ``h`` is a
structural hash that is equal for equal structures across runs of one process; the search uses
it as a cache key (never as a cross-process identifier).
"""

from __future__ import annotations

from collections.abc import Callable

(CONST, VAR, ADD, SUB, MUL, AND, OR, XOR, SHL, SHR, FDIV, MOD, NEG, INV, ITE,
 EQ, LT, LE, NOT, BAND, BOR) = range(21)

OP_NAMES = ("const", "var", "add", "sub", "mul", "and", "or", "xor", "shl", "shr", "floordiv", "mod",
            "neg", "invert", "ite", "eq", "lt", "le", "not", "band", "bor")
BOOL_OPS = frozenset({EQ, LT, LE, NOT, BAND, BOR})
MAX_WIDTH = 256
LENGTH = -1
"""The variable id of the input's length (byte variables are ids 0, 1, ...)."""
MAX_LENGTH = (1 << 16) - 1
"""Largest input length the solver may choose for a child."""
_NO_VARS: frozenset[int] = frozenset()


class TooWide(Exception):
    """The exact result needs more than MAX_WIDTH bits: the caller must concretise."""


def signed_width(lo: int, hi: int) -> int:
    """Smallest two's complement width holding every value of ``[lo, hi]``."""
    mlo = lo.bit_length() if lo >= 0 else (~lo).bit_length()
    mhi = hi.bit_length() if hi >= 0 else (~hi).bit_length()
    return max(mlo, mhi) + 1


class Node:
    __slots__ = ("op", "args", "param", "val", "lo", "hi", "width", "h", "vars")

    def __init__(self, op: int, args: tuple, param, val, lo: int, hi: int, h: int, vars_: frozenset[int]):
        self.op = op
        self.args = args
        self.param = param
        self.val = val
        self.lo = lo
        self.hi = hi
        self.width = 1 if op in BOOL_OPS else signed_width(lo, hi)
        self.h = h
        self.vars = vars_

    def __hash__(self) -> int:
        return self.h

    def __repr__(self) -> str:
        if self.op == CONST:
            return f"{self.val}"
        if self.op == VAR:
            return f"b{self.param}"
        inner = ", ".join(repr(a) for a in self.args)
        extra = f", {self.param}" if self.param is not None else ""
        return f"{OP_NAMES[self.op]}({inner}{extra})"


_table: dict[tuple, Node] = {}


def reset() -> None:
    """Start a new run: forget every interned node (their concrete values belong to the old input)."""
    _table.clear()


def const(value: int) -> Node:
    value = int(value)
    key = (CONST, value)
    node = _table.get(key)
    if node is None:
        node = _table[key] = Node(CONST, (), value, value, value, value, hash(key), _NO_VARS)
    return node


def var(index: int, value: int) -> Node:
    """Input byte ``index`` whose concrete value in this run is ``value``."""
    key = (VAR, index)
    node = _table.get(key)
    if node is None:
        node = _table[key] = Node(VAR, (), index, value, 0, 255, hash(key), frozenset((index,)))
    elif node.val != value:
        raise RuntimeError(f"input byte {index} redefined within one run (expr.reset() starts a run)")
    return node


def length(value: int) -> Node:
    """The input's length, whose concrete value in this run is ``value`` (a variable like a byte)."""
    key = (VAR, LENGTH)
    node = _table.get(key)
    if node is None:
        node = _table[key] = Node(VAR, (), LENGTH, value, 0, MAX_LENGTH, hash(key), frozenset((LENGTH,)))
    elif node.val != value:
        raise RuntimeError("input length redefined within one run (expr.reset() starts a run)")
    return node


def _bitwise_range(op: int, a: Node, b: Node) -> tuple[int, int]:
    if a.lo >= 0 and b.lo >= 0:
        top = (1 << max(a.hi.bit_length(), b.hi.bit_length())) - 1
        if op == AND:
            return 0, min(a.hi, b.hi)
        if op == OR:
            return max(a.lo, b.lo), top
        return 0, top
    if op == AND and a.lo >= 0:
        return 0, a.hi
    if op == AND and b.lo >= 0:
        return 0, b.hi
    half = 1 << (max(a.width, b.width) - 1)
    return -half, half - 1


def _mul_range(a: Node, b: Node) -> tuple[int, int]:
    corners = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return min(corners), max(corners)


def _div_range(op: int, a: Node, d: int) -> tuple[int, int]:
    if op == FDIV:
        ends = (a.lo // d, a.hi // d)
        return min(ends), max(ends)
    return (0, d - 1) if d > 0 else (d + 1, 0)


_VALUE: dict[int, Callable] = {
    ADD: lambda a, b, p: a + b,
    SUB: lambda a, b, p: a - b,
    MUL: lambda a, b, p: a * b,
    AND: lambda a, b, p: a & b,
    OR: lambda a, b, p: a | b,
    XOR: lambda a, b, p: a ^ b,
    FDIV: lambda a, b, p: a // b,
    MOD: lambda a, b, p: a % b,
    EQ: lambda a, b, p: a == b,
    LT: lambda a, b, p: a < b,
    LE: lambda a, b, p: a <= b,
    BAND: lambda a, b, p: a and b,
    BOR: lambda a, b, p: a or b,
}


def _range(op: int, args: tuple[Node, ...], param) -> tuple[int, int]:
    if op in BOOL_OPS:
        return 0, 1
    a = args[0]
    if op == SHL:
        return a.lo << param, a.hi << param
    if op == SHR:
        return a.lo >> param, a.hi >> param
    if op == NEG:
        return -a.hi, -a.lo
    if op == INV:
        return -a.hi - 1, -a.lo - 1
    if op == ITE:
        return min(args[1].lo, args[2].lo), max(args[1].hi, args[2].hi)
    b = args[1]
    if op == ADD:
        return a.lo + b.lo, a.hi + b.hi
    if op == SUB:
        return a.lo - b.hi, a.hi - b.lo
    if op == MUL:
        return _mul_range(a, b)
    if op in (FDIV, MOD):
        return _div_range(op, a, b.val)
    return _bitwise_range(op, a, b)


def _value(op: int, args: tuple[Node, ...], param):
    if op == SHL:
        return args[0].val << param
    if op == SHR:
        return args[0].val >> param
    if op == NEG:
        return -args[0].val
    if op == INV:
        return ~args[0].val
    if op == NOT:
        return not args[0].val
    if op == ITE:
        return args[1].val if args[0].val else args[2].val
    return _VALUE[op](args[0].val, args[1].val, param)


def _all_ones(mask: int) -> bool:
    return mask >= 0 and (mask & (mask + 1)) == 0


def _simplify(op: int, args: tuple[Node, ...], param):
    """Cheap algebraic identities; returns a replacement (Node, int or bool) or None."""
    a = args[0]
    if op in (SHL, SHR) and param == 0:
        return a
    if op == SHR and a.lo >= 0 and a.hi >> param == 0:
        return 0
    if op == NOT:
        if a.op == NOT:
            return a.args[0]
        return None
    if op == ITE or len(args) < 2:
        return None
    b = args[1]
    if b.op == CONST and op in (ADD, SUB, OR, XOR) and b.val == 0:
        return a
    if a.op == CONST and op in (ADD, OR, XOR) and a.val == 0:
        return b
    if op == MUL and (a.op == CONST or b.op == CONST):
        c, x = (a, b) if a.op == CONST else (b, a)
        return 0 if c.val == 0 else x if c.val == 1 else None
    if op == AND and (a.op == CONST or b.op == CONST):
        c, x = (a, b) if a.op == CONST else (b, a)
        if c.val == 0:
            return 0
        if _all_ones(c.val) and x.lo >= 0 and x.hi <= c.val:
            return x
    if op == MOD and b.val > 0 and a.lo >= 0 and a.hi < b.val:
        return a
    if op == EQ:
        if a.hi < b.lo or b.hi < a.lo:
            return False
    elif op == LT:
        if a.hi < b.lo:
            return True
        if a.lo >= b.hi:
            return False
    elif op == LE:
        if a.hi <= b.lo:
            return True
        if a.lo > b.hi:
            return False
    return None


def make(op: int, args: tuple[Node, ...], param=None):
    """The node for ``op(args)``, or a plain int/bool when the result does not depend on input.

    Division and shifts take a constant divisor/amount (the symbolic layer concretises symbolic
    ones first); a zero divisor raises ZeroDivisionError exactly like Python.
    """
    key = (op, param, *args)
    node = _table.get(key)
    if node is not None:
        return node
    if all(x.op == CONST for x in args):
        return _value(op, args, param)
    simpler = _simplify(op, args, param)
    if simpler is not None:
        return simpler
    val = _value(op, args, param)
    lo, hi = _range(op, args, param)
    if op not in BOOL_OPS and (lo < -(1 << MAX_WIDTH) or hi >= 1 << MAX_WIDTH):
        raise TooWide(OP_NAMES[op])
    if len(args) == 1:
        vars_ = args[0].vars
    else:
        vars_ = args[0].vars
        for other in args[1:]:
            if other.vars and other.vars is not vars_:
                vars_ = vars_ | other.vars if vars_ else other.vars
    h = hash((op, param, *(x.h for x in args)))
    node = _table[key] = Node(op, args, param, val, lo, hi, h, vars_)
    return node


def negate(node: Node):
    return make(NOT, (node,))


def lift(value) -> Node:
    """A node for a plain int/bool or an existing node."""
    return value if isinstance(value, Node) else const(int(value))


def evaluate(root: Node, data: bytes):
    """Value of ``root`` when the input bytes are ``data`` (Python semantics, no z3)."""
    memo: dict[int, object] = {}
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        if node.op == CONST:
            memo[id(node)] = node.val
            stack.pop()
            continue
        if node.op == VAR:
            memo[id(node)] = len(data) if node.param == LENGTH else data[node.param]
            stack.pop()
            continue
        pending = [a for a in node.args if id(a) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        vals = [memo[id(a)] for a in node.args]
        memo[id(node)] = _apply_values(node.op, vals, node.param)
    return memo[id(root)]


def _apply_values(op: int, vals: list, param):
    if op == SHL:
        return vals[0] << param
    if op == SHR:
        return vals[0] >> param
    if op == NEG:
        return -vals[0]
    if op == INV:
        return ~vals[0]
    if op == NOT:
        return not vals[0]
    if op == ITE:
        return vals[1] if vals[0] else vals[2]
    return _VALUE[op](vals[0], vals[1], param)
