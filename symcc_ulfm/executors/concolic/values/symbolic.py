"""Symbolic ints and booleans that behave like the real values they carry.

:class:`SymInt` supports Python's integer protocol: every modelled operation returns a new
symbolic value (or a plain int when the result no longer depends on the input) whose concrete
value is exactly what plain ints would give. Operations that are not modelled concretise honestly
through :func:`..expressions.path.pin`: ``__index__`` (list indices, ``range``, slicing),
``__hash__``, ``__int__``, formatting, true division, symbolic shift amounts and divisors, and
results wider than :data:`..expressions.expr.MAX_WIDTH` bits.

:class:`SymBool` is the result of a comparison; asking for its truth (``if``, ``and``, ``not``,
``while``) records a branch. Arithmetic on it follows Python's bool-is-int rule.
"""

from __future__ import annotations

import operator
from typing import ClassVar

from ..expressions import expr as E
from ..expressions import path as P

_PY = {
    E.ADD: operator.add, E.SUB: operator.sub, E.MUL: operator.mul, E.AND: operator.and_,
    E.OR: operator.or_, E.XOR: operator.xor, E.SHL: operator.lshift, E.SHR: operator.rshift,
    E.FDIV: operator.floordiv, E.MOD: operator.mod,
}
_PY_CMP = {E.EQ: operator.eq, E.LT: operator.lt, E.LE: operator.le}
_SMALL_POWER = 16


def node_of(value) -> E.Node | None:
    """The expression node of an int-like value (None for anything that is not an int)."""
    if isinstance(value, SymInt):
        return value.node
    if isinstance(value, SymBool):
        return value.as_int().node
    if isinstance(value, int):
        return E.const(value)
    return None


def wrap(result):
    """Plain results stay plain; nodes become SymInt / SymBool."""
    if isinstance(result, E.Node):
        return SymBool(result) if result.op in E.BOOL_OPS else SymInt(result)
    return result


def concrete(value):
    """Concretise any symbolic value (recording the fixed value), leave others unchanged."""
    if isinstance(value, SymInt):
        return P.pin(value.node)
    if isinstance(value, SymBool):
        return bool(value)
    return value


def _floating(left, right) -> bool:
    return isinstance(left, (float, complex)) or isinstance(right, (float, complex))


def _arith(op: int, left, right):
    a, b = node_of(left), node_of(right)
    if a is None or b is None:
        return _PY[op](concrete(left), concrete(right)) if _floating(left, right) else NotImplemented
    if op in (E.SHL, E.SHR):
        amount = P.pin(b)
        if amount < 0:
            raise ValueError("negative shift count")
        if amount > E.MAX_WIDTH:
            return _PY[op](P.pin(a), amount)
        return _guarded(op, (a,), amount)
    if op in (E.FDIV, E.MOD):
        divisor = P.pin(b)
        if divisor == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        return _guarded(op, (a, E.const(divisor)), None)
    return _guarded(op, (a, b), None)


def _guarded(op: int, args: tuple[E.Node, ...], param):
    try:
        return wrap(E.make(op, args, param))
    except E.TooWide:
        values = [P.pin(x) for x in args]
        return _PY[op](values[0], param) if param is not None else _PY[op](*values)


def _compare(op: int, left, right, negate: bool = False):
    a, b = node_of(left), node_of(right)
    if a is None or b is None:
        if not _floating(left, right):
            return NotImplemented
        result = _PY_CMP[op](concrete(left), concrete(right))
        return not result if negate else result
    result = E.make(op, (a, b))
    if negate:
        result = E.negate(result) if isinstance(result, E.Node) else not result
    return wrap(result)


def _binary_pair(op: int):
    def forward(self, other):
        return _arith(op, self, other)

    def reverse(self, other):
        return _arith(op, other, self)

    return forward, reverse


class SymInt:
    bytes_type: ClassVar[type]  # SymBytes, set by :mod:`.symbytes` (built on this module) when it is imported

    """An int whose value depends on input bytes."""

    __slots__ = ("node",)

    def __init__(self, node: E.Node):
        self.node = node

    @property
    def value(self) -> int:
        return self.node.val

    def __neg__(self):
        return _guarded(E.NEG, (self.node,), None)

    def __pos__(self):
        return self

    def __invert__(self):
        return _guarded(E.INV, (self.node,), None)

    def __abs__(self):
        negative = E.make(E.LT, (self.node, E.const(0)))
        if not isinstance(negative, E.Node):
            return -self if negative else self
        flipped = node_of(-self)
        return wrap(E.make(E.ITE, (negative, flipped, self.node)))

    def __eq__(self, other):
        return _compare(E.EQ, self, other)

    def __ne__(self, other):
        return _compare(E.EQ, self, other, negate=True)

    def __lt__(self, other):
        return _compare(E.LT, self, other)

    def __le__(self, other):
        return _compare(E.LE, self, other)

    def __gt__(self, other):
        return _compare(E.LT, other, self)

    def __ge__(self, other):
        return _compare(E.LE, other, self)

    def __bool__(self) -> bool:
        cond = E.make(E.EQ, (self.node, E.const(0)))
        if not isinstance(cond, E.Node):
            return not cond
        return not P.branch(cond)

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __pow__(self, exponent, modulo=None):
        exp = concrete(exponent)
        if modulo is None and isinstance(exp, int) and 0 <= exp <= _SMALL_POWER:
            result = 1
            for _ in range(exp):
                result = result * self
            return result
        return pow(P.pin(self.node), exp, concrete(modulo)) if modulo is not None else P.pin(self.node) ** exp

    def __rpow__(self, base, modulo=None):
        return pow(concrete(base), P.pin(self.node), concrete(modulo))

    def __truediv__(self, other):
        return P.pin(self.node) / concrete(other)

    def __rtruediv__(self, other):
        return concrete(other) / P.pin(self.node)

    def __index__(self) -> int:
        return P.pin(self.node)

    def __int__(self) -> int:
        return P.pin(self.node)

    def __float__(self) -> float:
        return float(P.pin(self.node))

    def __hash__(self) -> int:
        return hash(P.pin(self.node))

    def __round__(self, ndigits=None):
        return round(P.pin(self.node), ndigits)

    def __trunc__(self) -> int:
        return P.pin(self.node)

    __floor__ = __ceil__ = __trunc__

    def __str__(self) -> str:
        return str(P.pin(self.node))

    def __repr__(self) -> str:
        return repr(P.pin(self.node))

    def __format__(self, spec: str) -> str:
        return format(P.pin(self.node), spec)

    def bit_length(self) -> int:
        return P.pin(self.node).bit_length()

    def bit_count(self) -> int:
        return P.pin(self.node).bit_count()

    def to_bytes(self, length: int = 1, byteorder: str = "big", *, signed: bool = False):
        """Modelled when every possible value fits; otherwise concretised (Python would raise)."""
        length = concrete(length)
        low, high = (-(1 << (8 * length - 1)), 1 << (8 * length - 1)) if signed else (0, 1 << (8 * length))
        if not (low <= self.node.lo and self.node.hi < high):
            return P.pin(self.node).to_bytes(length, byteorder, signed=signed)
        digits = [(self >> (8 * k)) & 0xFF for k in range(length)]
        if byteorder == "big":
            digits.reverse()
        return SymInt.bytes_type.from_elements(digits)


for _name, _op in (("add", E.ADD), ("sub", E.SUB), ("mul", E.MUL), ("and", E.AND), ("or", E.OR),
                   ("xor", E.XOR), ("lshift", E.SHL), ("rshift", E.SHR), ("floordiv", E.FDIV),
                   ("mod", E.MOD)):
    _fwd, _rev = _binary_pair(_op)
    setattr(SymInt, f"__{_name}__", _fwd)
    setattr(SymInt, f"__r{_name}__", _rev)


class SymBool:
    """A condition on input bytes; truth tests record a branch."""

    __slots__ = ("node",)

    def __init__(self, node: E.Node):
        self.node = node

    def __bool__(self) -> bool:
        return P.branch(self.node)

    def as_int(self):
        return wrap(E.make(E.ITE, (self.node, E.const(1), E.const(0))))

    def _logic(self, other, op: int):
        if isinstance(other, SymBool):
            return wrap(E.make(op, (self.node, other.node)))
        if isinstance(other, bool):
            if op == E.BAND:
                return self if other else False
            return True if other else self
        return NotImplemented

    def __and__(self, other):
        result = self._logic(other, E.BAND)
        return self.as_int() & other if result is NotImplemented else result

    def __or__(self, other):
        result = self._logic(other, E.BOR)
        return self.as_int() | other if result is NotImplemented else result

    __rand__, __ror__ = __and__, __or__

    def __xor__(self, other):
        if isinstance(other, (bool, SymBool)):
            return self != other
        return self.as_int() ^ other

    __rxor__ = __xor__

    def __eq__(self, other):
        return self.as_int() == other

    def __ne__(self, other):
        return self.as_int() != other

    def __index__(self) -> int:
        return int(bool(self))

    __int__ = __index__

    def __hash__(self) -> int:
        return hash(bool(self))

    def __str__(self) -> str:
        return str(bool(self))

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(bool(self), spec)


def _via_int(name: str):
    def method(self, *args):
        return getattr(self.as_int(), name)(*args)

    return method


for _name in ("add", "sub", "mul", "lshift", "rshift", "floordiv", "mod", "divmod", "pow", "truediv"):
    setattr(SymBool, f"__{_name}__", _via_int(f"__{_name}__"))
    setattr(SymBool, f"__r{_name}__", _via_int(f"__r{_name}__"))
for _name in ("neg", "pos", "invert", "abs", "lt", "le", "gt", "ge", "float"):
    setattr(SymBool, f"__{_name}__", _via_int(f"__{_name}__"))
