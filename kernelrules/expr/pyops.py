"""Python's operators by syntax-tree node type, and Triton's integer helpers, for the small interpreters.

kernelrules walks Python syntax in two places without ever calling ``eval``: config lists
of ``@triton.autotune`` (:mod:`kernelrules.discover.autotune_eval`) and the ``problem`` section of
a space file (:mod:`kernelrules.expr.safeexpr`). Each allows a subset of these operators,
picked by node type, so an operator missing from its subset is refused by name, and both
walk comparisons, conditionals and slices with the functions below (each takes the
interpreter's own ``evaluate`` of a child node, so its step counting and errors stay its own).
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable, Iterable

BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.MatMult: operator.matmul,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert,
}
COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}


def compare_chain(node: ast.Compare, evaluate: Callable[[ast.AST], Any],
                  table: dict[type, Callable[[Any, Any], Any]]) -> bool:
    """Python's chained comparison ``a < b <= c``: each operand evaluated once, from the left, and
    none after the first false link (``table`` is the interpreter's allowed subset of :data:`COMPARE`)."""
    left = evaluate(node.left)
    for op, comparator in zip(node.ops, node.comparators):
        right = evaluate(comparator)
        if not table[type(op)](left, right):
            return False
        left = right
    return True


def conditional(node: ast.IfExp, evaluate: Callable[[ast.AST], Any]) -> Any:
    """``body if test else orelse``, evaluating only the branch taken."""
    return evaluate(node.body if evaluate(node.test) else node.orelse)


def make_slice(node: ast.Slice, evaluate: Callable[[ast.AST], Any]) -> slice:
    """The ``slice`` of ``lower:upper:step``; a missing part is None."""
    return slice(*(None if part is None else evaluate(part) for part in (node.lower, node.upper, node.step)))


def subset(table: dict[type, Callable], excluded: Iterable[type]) -> dict[type, Callable]:
    """``table`` without the node types in ``excluded``."""
    excluded = tuple(excluded)
    return {node: fn for node, fn in table.items() if node not in excluded}


def cdiv(a: int, b: int) -> int:
    """``triton.cdiv``: the ceiling of ``a / b``."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """``triton.next_power_of_2``: the smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
