"""AST to text: the inverse of :func:`parse`, with minimal parentheses.

Each node has a precedence level (higher binds tighter). A child is wrapped in
parentheses when its level is below what its position in the parent needs:
left-associative operators need a strictly tighter right operand, comparisons
need tighter operands on both sides (they do not chain), and ``**`` needs an
atom on its left but accepts a unary sign on its right (``2 ** -1``), exactly
mirroring the grammar.
"""

from __future__ import annotations

import math

from . import ast
from .ast import check_depth

#: Precedence levels, lowest binding first.
_OR, _AND, _NOT, _COMPARE, _SUM, _TERM, _UNARY, _POWER, _ATOM = range(1, 10)

_BINARY_LEVEL = {
    "or": _OR,
    "and": _AND,
    "+": _SUM,
    "-": _SUM,
    "*": _TERM,
    "/": _TERM,
    "//": _TERM,
    "%": _TERM,
    "**": _POWER,
}
_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


def to_source(expr: ast.Expr) -> str:
    """Render an AST as expression text such that ``parse(to_source(e)) == e``."""
    check_depth(expr)
    return _render(expr)


def _level(expr: ast.Expr) -> int:
    """Precedence level of a node as it would be printed without parentheses."""
    if isinstance(expr, (ast.BinOp, ast.BoolOp)):
        return _BINARY_LEVEL[expr.op]
    if isinstance(expr, ast.Compare):
        return _COMPARE
    if isinstance(expr, ast.Unary):
        return _NOT if expr.op == "not" else _UNARY
    return _ATOM


def _child(expr: ast.Expr, minimum: int) -> str:
    """Render a child, in parentheses if it binds looser than ``minimum``."""
    text = _render(expr)
    return f"({text})" if _level(expr) < minimum else text


def _render(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Literal):
        return _literal(expr.value)
    if isinstance(expr, ast.Name):
        return expr.dotted
    if isinstance(expr, ast.ListExpr):
        return "[" + ", ".join(_render(item) for item in expr.items) + "]"
    if isinstance(expr, ast.Call):
        return f"{expr.func}(" + ", ".join(_render(arg) for arg in expr.args) + ")"
    if isinstance(expr, ast.Unary):
        return _unary(expr)
    if isinstance(expr, ast.Compare):
        return f"{_child(expr.left, _SUM)} {expr.op} {_child(expr.right, _SUM)}"
    if isinstance(expr, (ast.BinOp, ast.BoolOp)):
        return _binary(expr)
    raise TypeError(f"not an expression node: {type(expr).__name__}")


def _unary(expr: ast.Unary) -> str:
    if expr.op == "not":
        return "not " + _child(expr.operand, _NOT)
    return expr.op + _child(expr.operand, _UNARY)


def _binary(expr: ast.BinOp | ast.BoolOp) -> str:
    level = _BINARY_LEVEL[expr.op]
    if expr.op == "**":  # right-associative: atom ** (unary or power)
        return f"{_child(expr.left, _ATOM)} ** {_child(expr.right, _UNARY)}"
    return f"{_child(expr.left, level)} {expr.op} {_child(expr.right, level + 1)}"


def _literal(value: ast.Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "1e999" if math.isinf(value) else repr(abs(value))
    return '"' + "".join(_STRING_ESCAPES.get(char, char) for char in value) + '"'
