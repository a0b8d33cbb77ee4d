"""Lazy conversion of expression nodes to z3, and solving.

Input byte ``i`` is the 8-bit variable ``b{i}``; the input's length (:data:`.expr.LENGTH`) is the
16-bit variable ``len``. An integer node of width ``w`` (see
:func:`.expr.signed_width`) becomes a ``w``-bit vector holding its two's complement value. An
operation sign-extends its operands to a common width ``W`` that holds the operands and the
result, computes there and truncates to the result width: because the static interval of the
result fits the result width, the truncation is exact and the encoding agrees with Python on
every input, not only on the current one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from . import expr as E

SAT, UNSAT, UNKNOWN = "sat", "unsat", "unknown"


def _ext(value: z3.BitVecRef, have: int, to_width: int) -> z3.BitVecRef:
    return z3.SignExt(to_width - have, value) if to_width > have else value


def _fit(value: z3.BitVecRef, have: int, width: int) -> z3.BitVecRef:
    return z3.Extract(width - 1, 0, value) if have > width else value


class Converter:
    """Node -> z3 with a cache; one converter per run (nodes are interned per run)."""

    def __init__(self) -> None:
        self._cache: dict[int, z3.ExprRef] = {}
        self._keep: list[E.Node] = []
        self._vars: dict[int, z3.BitVecRef] = {}
        self.length: int | None = None

    def note_length(self, value: int) -> None:
        """The current input's length, which :func:`solve` keeps or changes as little as it can."""
        self.length = value

    def byte(self, index: int) -> z3.BitVecRef:
        bv = self._vars.get(index)
        if bv is None:
            if index == E.LENGTH:
                bv = self._vars[index] = z3.BitVec("len", E.MAX_LENGTH.bit_length())
            else:
                bv = self._vars[index] = z3.BitVec(f"b{index}", 8)
        return bv

    def __call__(self, root: E.Node) -> z3.ExprRef:
        cache = self._cache
        hit = cache.get(id(root))
        if hit is not None:
            return hit
        stack = [root]
        while stack:
            node = stack[-1]
            if id(node) in cache:
                stack.pop()
                continue
            pending = [a for a in node.args if id(a) not in cache]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            cache[id(node)] = self._convert(node, [cache[id(a)] for a in node.args])
            self._keep.append(node)
        return cache[id(root)]

    def _convert(self, node: E.Node, args: list) -> z3.ExprRef:
        op, w = node.op, node.width
        if op == E.CONST:
            return z3.BitVecVal(node.val % (1 << w), w)
        if op == E.VAR:
            return z3.ZeroExt(1, self.byte(node.param))  # the length's width is also its bits + 1
        if op == E.NOT:
            return z3.Not(args[0])
        if op == E.BAND:
            return z3.And(args[0], args[1])
        if op == E.BOR:
            return z3.Or(args[0], args[1])
        sizes = [a.width for a in node.args]  # every integer node's term has exactly its node's width
        if op == E.ITE:
            width = max(w, sizes[1], sizes[2])
            return _fit(z3.If(args[0], _ext(args[1], sizes[1], width), _ext(args[2], sizes[2], width)), width, w)
        if op in (E.EQ, E.LT, E.LE):
            width = max(sizes)
            a, b = (_ext(x, have, width) for x, have in zip(args, sizes, strict=True))
            return a == b if op == E.EQ else a < b if op == E.LT else a <= b
        width = max([w, *sizes])
        if op in (E.FDIV, E.MOD):
            width += 1
        xs = [_ext(a, have, width) for a, have in zip(args, sizes, strict=True)]
        return _fit(self._arith(op, xs, node.param, width), width, w)

    @staticmethod
    def _arith(op: int, xs: list, param, width: int) -> z3.BitVecRef:
        a = xs[0]
        if op == E.SHL:
            return a << z3.BitVecVal(param, width) if param < width else z3.BitVecVal(0, width)
        if op == E.SHR:
            return a >> z3.BitVecVal(min(param, width - 1), width)
        if op == E.NEG:
            return -a
        if op == E.INV:
            return ~a
        b = xs[1]
        if op == E.ADD:
            return a + b
        if op == E.SUB:
            return a - b
        if op == E.MUL:
            return a * b
        if op == E.AND:
            return a & b
        if op == E.OR:
            return a | b
        if op == E.XOR:
            return a ^ b
        remainder = a % b  # z3's % on bit-vectors is bvsmod: the sign follows the divisor, like Python
        if op == E.MOD:
            return remainder
        return (a - remainder) / b  # exact division, so truncation equals floor


NEAR = (8, 256)
"""A resized child is first sought at most this many bytes from its parent's length, then this many."""


def _check(terms: list, timeout_ms: int):
    solver = z3.SolverFor("QF_BV")
    solver.set("timeout", int(timeout_ms))
    context, handle = solver.ctx.ref(), solver.solver
    for term in terms:  # the terms are boolean already: skip z3py's per-argument coercion in add()
        z3.Z3_solver_assert(context, handle, term.as_ast())
    return solver, solver.check()


@dataclass
class Answer:
    status: str
    model: dict[int, int] | None
    seconds: float


def solve(conv: Converter, constraints: list[E.Node], timeout_ms: int, with_length: bool = False) -> Answer:
    """Check the conjunction of boolean nodes; a model maps every byte index they mention.

    When the length is among the variables (and the converter knows the current length, see
    :meth:`Converter.note_length`), the length stays near the current one and every byte the
    constraints mention lies inside it.
    The model holds the length (key :data:`.expr.LENGTH`) only ``with_length``: a caller that
    patches bytes in place asks for constraints that keep the length instead.
    """
    start = time.perf_counter()
    terms = [conv(node) for node in constraints]
    indices: set[int] = set().union(*(node.vars for node in constraints)) if constraints else set()
    if E.LENGTH in indices and conv.length is not None:
        # A resized child is first sought within a few bytes of its parent's length (NEAR): a child
        # that reads past the end should not get 64 KiB of padding when four bytes do.
        # (Fresh solvers: push/pop is much slower in z3.) No mentioned byte may be cut off.
        length = conv.byte(E.LENGTH)
        top = max((i for i in indices if i != E.LENGTH), default=-1)
        if top >= 0:
            terms.append(z3.UGT(length, top))
        for near in NEAR:
            bounds = [z3.ULE(length, conv.length + near), z3.UGE(length, max(0, conv.length - near))]
            solver, result = _check([*terms, *bounds], timeout_ms)
            if result != z3.unsat:
                break
        else:
            solver, result = _check(terms, timeout_ms)
    else:
        solver, result = _check(terms, timeout_ms)
    if result == z3.sat:
        model = solver.model()
        values = {i: model.eval(conv.byte(i), model_completion=True).as_long() for i in sorted(indices)
                  if with_length or i != E.LENGTH}
        return Answer(SAT, values, time.perf_counter() - start)
    status = UNSAT if result == z3.unsat else UNKNOWN
    return Answer(status, None, time.perf_counter() - start)
