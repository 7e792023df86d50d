"""A small evaluator of constexpr expressions in a kernel's syntax tree (never ``eval``).

:mod:`kernelrules.specify.constexpr_constraints` asks it whether a static assert, an ``if`` test
or a ``tl.arange`` bound holds for given constexpr values. It knows literals, arithmetic,
comparisons, ``and``/``or`` (an operand that decides is enough), ``x if c else y``, tuples and
their constant subscripts, ``tl.<dtype>`` (as ``"tl.float32"``), ``tl.constexpr(x)``, ``x.value``
and Triton's integer helpers (``triton.next_power_of_2``, ``tl.cdiv``, ``min``, ``max``, ``len``).
A name resolves through a :class:`Scope`: a helper's parameter to the caller's argument, a local
assigned once to its expression, a module constant to its value. Anything else (a runtime value,
an unknown call) raises :class:`Unknown`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..discover.pyast import dotted_name
from ..expr.pyops import BINARY, COMPARE, UNARY, cdiv, next_power_of_2, subset

_BINOPS = subset(BINARY, (ast.MatMult,))
_DTYPE_NAMES = frozenset({
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
    "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16", "float8_e4m3fn",
})


class Unknown(Exception):
    """An expression the evaluator cannot give a compile-time value for."""


@dataclass
class Scope:
    """Where names of one function resolve: the helper's parameters bound to the caller's argument
    expressions (evaluated in ``outer``), its locals assigned once, and the module's constants."""

    params: frozenset[str]
    bindings: Mapping[str, ast.expr] = field(default_factory=dict)
    derived: Mapping[str, ast.expr] = field(default_factory=dict)
    constants: Mapping[str, ast.expr] = field(default_factory=dict)
    outer: "Scope | None" = None
    #: the module the function is in, for finding the helpers it calls (None: the kernel's module)
    where: Any = None


def _call(name: str, args: list[Any]) -> Any:
    """The compile-time helpers a constexpr expression may call."""
    last = name.rsplit(".", 1)[-1]
    if last == "constexpr" and len(args) == 1:
        return args[0]
    if last == "next_power_of_2" and len(args) == 1:
        return next_power_of_2(int(args[0]))
    if last == "cdiv" and len(args) == 2:
        return cdiv(int(args[0]), int(args[1]))
    if last in ("_log2", "log2") and len(args) == 1 and isinstance(args[0], int) and args[0] > 0:
        return args[0].bit_length() - 1
    if name in ("min", "max") and args:
        return (min if name == "min" else max)(*args)
    if name in ("len", "abs", "int", "bool") and len(args) == 1:
        return {"len": len, "abs": abs, "int": int, "bool": bool}[name](args[0])
    raise Unknown(name)


def evaluate(node: ast.expr, scope: Scope, values: Mapping[str, Any], depth: int = 0) -> Any:
    """The value of ``node`` in ``scope`` with the kernel's constexprs ``values``; raises :class:`Unknown`."""
    if depth > 40:
        raise Unknown("too deep")
    ev = lambda n, s=scope: evaluate(n, s, values, depth + 1)  # noqa: E731
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _name(node.id, scope, values, depth)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = ev(node.left), ev(node.right)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) and abs(left) < 2**62 > abs(right):
            try:
                return _BINOPS[type(node.op)](left, right)
            except (ZeroDivisionError, OverflowError, ValueError) as exc:
                raise Unknown(str(exc)) from None
        if isinstance(node.op, ast.Add) and isinstance(left, (str, tuple)) and type(left) is type(right):
            return left + right
        raise Unknown("operands")
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](ev(node.operand))
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, ev)
    if isinstance(node, ast.Compare) and all(type(op) in COMPARE for op in node.ops):
        left = ev(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = ev(comparator)
            try:
                if not COMPARE[type(op)](left, right):
                    return False
            except TypeError:
                raise Unknown("comparison") from None
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return ev(node.body if ev(node.test) else node.orelse)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(ev(e) for e in node.elts)
    if isinstance(node, ast.Subscript):
        target, index = ev(node.value), ev(node.slice)
        if isinstance(target, tuple) and isinstance(index, int) and -len(target) <= index < len(target):
            return target[index]
        raise Unknown("subscript")
    if isinstance(node, ast.Attribute):
        dotted = dotted_name(node) or ""
        if dotted.split(".")[0] in ("tl", "triton", "language") and node.attr in _DTYPE_NAMES:
            return f"tl.{node.attr}"
        if node.attr == "value":
            return ev(node.value)
        raise Unknown(dotted or node.attr)
    if isinstance(node, ast.Call) and not node.keywords:
        return _call((dotted_name(node.func) or ""), [ev(a) for a in node.args])
    raise Unknown(type(node).__name__)


def _name(name: str, scope: Scope, values: Mapping[str, Any], depth: int) -> Any:
    if name in scope.bindings and scope.outer is not None:
        return evaluate(scope.bindings[name], scope.outer, values, depth + 1)
    if scope.outer is None and name in values:
        return values[name]
    if name in scope.derived:
        return evaluate(scope.derived[name], scope, values, depth + 1)
    if name in scope.constants and name not in scope.params:
        return evaluate(scope.constants[name], Scope(frozenset(), constants=scope.constants), values, depth + 1)
    if name in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[name]
    raise Unknown(name)


def _bool_op(node: ast.BoolOp, ev: Any) -> Any:
    """``and``/``or`` where an operand that decides is enough: ``False and <unknown>`` is False."""
    unknown = False
    for operand in node.values:
        try:
            value = ev(operand)
        except Unknown:
            unknown = True
            continue
        if isinstance(node.op, ast.And) and not value:
            return value
        if isinstance(node.op, ast.Or) and value:
            return value
    if unknown:
        raise Unknown("bool operand")
    return isinstance(node.op, ast.And)
