"""Instrumented code for the symbolic run: operators that C code would answer become hook calls.

``x in c`` (where ``c`` is a plain set, dict or string constant) and ``d[k]`` are answered by C
code that only sees concrete values, and no Python method of the symbolic operand is called. For
the modules the shadow instruments, this module recompiles their source with those operations
(and ``.get``, ``.join``, ``.issuperset``, ``.tobytes``, ``.startswith``, ``.endswith`` calls)
routed through :mod:`..models.containers`, and ``==`` / ``!=`` with a ``str`` or ``bytes``
literal on one side through :mod:`.literal_compares`, keeping every line number, and swaps the
new code objects into the module's functions and methods for the duration of a symbolic run
(:class:`CodeSwap`). Concrete runs always execute the original code, so
coverage is measured on the code as written.

A function is only swapped when its recompiled code has the same free variables; one created
during a symbolic run from swapped code keeps calling the hooks afterwards, which is harmless:
with plain operands each hook does exactly the plain operation, and the hooks stay installed
in the module's globals.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types

from ..expressions.path import MAX_TOKEN_LENGTH
from ..models.containers import HOOKS, REWRITTEN_METHODS
from .literal_compares import HOOKS as COMPARE_HOOKS


def _text_literal(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) in (str, bytes)
            and 0 < len(node.value) <= MAX_TOKEN_LENGTH)


class _Hooks(ast.NodeTransformer):
    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            name = "__symcc_in__" if isinstance(node.ops[0], ast.In) else "__symcc_not_in__"
            call = ast.Call(ast.Name(name, ast.Load()), [node.left, node.comparators[0]], [])
            return ast.copy_location(call, node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            sides = [node.left, node.comparators[0]]
            literal = [i for i, side in enumerate(sides) if _text_literal(side)]
            if len(literal) == 1:
                name = "__symcc_eq__" if isinstance(node.ops[0], ast.Eq) else "__symcc_ne__"
                call = ast.Call(ast.Name(name, ast.Load()), [*sides, ast.Constant(literal[0])], [])
                return ast.copy_location(call, node)
        return node

    def visit_Subscript(self, node: ast.Subscript):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        key = node.slice
        if isinstance(key, ast.Slice):
            key = ast.Call(ast.Name("__symcc_slice__", ast.Load()),
                           [key.lower or ast.Constant(None), key.upper or ast.Constant(None),
                            key.step or ast.Constant(None)], [])
        elif isinstance(key, ast.Tuple) and any(isinstance(e, ast.Slice) for e in key.elts):
            return node
        call = ast.Call(ast.Name("__symcc_getitem__", ast.Load()), [node.value, key], [])
        return ast.copy_location(call, node)

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in REWRITTEN_METHODS and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            call = ast.Call(ast.Name("__symcc_method__", ast.Load()),
                            [func.value, ast.Constant(func.attr), *node.args], [])
            return ast.copy_location(call, node)
        return node


@functools.cache
def _compiled(filename: str, source: str) -> dict[tuple[str, int], types.CodeType]:
    tree = _Hooks().visit(ast.parse(source, filename))
    ast.fix_missing_locations(tree)
    module_code = compile(tree, filename, "exec", dont_inherit=True)
    table: dict[tuple[str, int], types.CodeType] = {}
    stack = [module_code]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                table[(const.co_qualname, const.co_firstlineno)] = const
                stack.append(const)
    return table


def _functions_of(module: types.ModuleType):
    """Every function defined in ``module``: module level, in its classes, behind decorators."""
    filename = getattr(module, "__file__", None)
    seen: set[int] = set()
    pending = list(vars(module).values())
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, (staticmethod, classmethod)):
            pending.append(value.__func__)
        elif isinstance(value, property):
            pending.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif isinstance(value, types.FunctionType):
            if value.__code__.co_filename == filename:
                yield value
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                pending.append(wrapped)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            pending.extend(vars(value).values())


class CodeSwap:
    """The instrumented code of some modules, swapped in by :meth:`enter` and out by :meth:`leave`."""

    def __init__(self, modules: list[types.ModuleType]):
        self.pairs: list[tuple[types.FunctionType, types.CodeType, types.CodeType]] = []
        self.skipped = 0
        for module in modules:
            try:
                source = inspect.getsource(module)
            except (OSError, TypeError):
                continue
            table = _compiled(module.__file__, source)
            for function in _functions_of(module):
                old = function.__code__
                new = table.get((old.co_qualname, old.co_firstlineno))
                if new is None or new.co_freevars != old.co_freevars:
                    self.skipped += 1
                    continue
                self.pairs.append((function, old, new))
            for name, hook in {**HOOKS, **COMPARE_HOOKS, "__symcc_slice__": slice}.items():
                vars(module).setdefault(name, hook)

    def enter(self) -> None:
        for function, _, new in self.pairs:
            function.__code__ = new

    def leave(self) -> None:
        for function, old, _ in self.pairs:
            function.__code__ = old


__all__ = ["CodeSwap"]
