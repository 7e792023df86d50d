"""Size bounds on values computed from the user's source, checked before computing them.

kernelrules evaluates a few expressions of a linted module itself (autotune lists in
:mod:`kernelrules.discover.autotune_eval`) and keeps literal constants when it rebuilds a module
for the cross-compile (:mod:`kernelrules.discover.kernelsource`). A tiny file can ask for a huge
value (``"x" * 3_000_000_000`` allocates 3 GB; ``A = 10**64; B = A**64; C = B**64``
takes minutes), so every product, power, shift and concatenation is checked against
these bounds *before* it is computed.
"""

from __future__ import annotations

import ast
from typing import Any

#: Longest sequence (string, list, tuple, bytes) an expression may build.
MAX_SEQUENCE = 100_000
#: Largest integer, in bits, an expression may compute (block sizes and counts need far fewer).
MAX_INT_BITS = 4096

_SEQUENCES = (str, bytes, list, tuple)


class TooLarge(ValueError):
    """The result of an operation would exceed the bounds."""


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) and not isinstance(value, bool) else 0


def check_binop(op: ast.operator, left: Any, right: Any) -> None:
    """Raise :class:`TooLarge` when ``left <op> right`` would exceed the bounds."""
    size = None
    if isinstance(op, ast.Mult):
        if isinstance(left, _SEQUENCES) and isinstance(right, int):
            size = len(left) * max(right, 0)
        elif isinstance(right, _SEQUENCES) and isinstance(left, int):
            size = len(right) * max(left, 0)
        elif _bits(left) + _bits(right) > MAX_INT_BITS:
            raise TooLarge(f"result larger than {MAX_INT_BITS} bits")
    elif isinstance(op, ast.Add) and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        size = len(left) + len(right)
    elif isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0:
        if _bits(left) * right > MAX_INT_BITS:
            raise TooLarge(f"result larger than {MAX_INT_BITS} bits")
    elif isinstance(op, ast.LShift) and isinstance(right, int) and _bits(left) + right > MAX_INT_BITS:
        raise TooLarge(f"result larger than {MAX_INT_BITS} bits")
    if size is not None and size > MAX_SEQUENCE:
        raise TooLarge(f"sequence longer than {MAX_SEQUENCE}")


#: A value the bounded evaluator does not compute (attributes, calls): not tracked, not refused.
UNKNOWN = object()

_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
           ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Invert: lambda a: ~a, ast.Not: lambda a: not a}


def bounded_value(node: ast.expr, known: dict[str, Any]) -> Any:
    """The value of a literal expression (names from ``known``), or :data:`UNKNOWN`; raises
    :class:`TooLarge` for one whose evaluation would exceed the bounds."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id, UNKNOWN)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [bounded_value(e, known) for e in node.elts]
        if any(i is UNKNOWN for i in items):
            return UNKNOWN
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = bounded_value(node.operand, known)
        return UNKNOWN if operand is UNKNOWN else _apply(_UNARY[type(node.op)], operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = bounded_value(node.left, known), bounded_value(node.right, known)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        check_binop(node.op, left, right)
        return _apply(_BINARY[type(node.op)], left, right)
    return UNKNOWN


def _apply(func: Any, *args: Any) -> Any:
    try:
        return func(*args)
    except Exception:  # noqa: BLE001 - a failing literal (1 / 0) is the compile's to report
        return UNKNOWN
