"""Tensor shapes a kernel builds from its constexprs, and what they require of them.

``tl.reshape(x, (BLOCK_ROWS, RDH, 2))`` of an ``x`` built ``(BLOCK_ROWS, RD)`` needs ``RD == 2 * RDH``;
``a + b`` of an ``a`` shaped ``(BT, BK)`` and a ``b`` shaped ``(BT, K)`` needs ``BK == K`` (or
one of them 1). :func:`shape_conditions` follows the shapes of a function's locals through its
statements, symbolically (each dimension an expression of the constexprs, never a value):
``tl.arange``, ``tl.zeros``/``tl.full``, ``x[:, None]``, elementwise operators and ``tl.*``
functions, ``tl.load`` of a pointer tensor, ``tl.where``, ``.to()``, reductions with a constant
``axis``, ``tl.dot``, ``tl.reshape``/``.reshape``/``tl.view``. A name given different shapes on
two paths (the branches of an ``if``, a loop body) becomes unknown, and anything not listed
is unknown: an unknown shape yields no condition. A call of a plain name (a ``@triton.jit``
helper) on tensors of known shapes is taken to be elementwise, and an operand of unknown shape
beside one of known shape (``i_k * BK + tl.arange(0, BK)`` with ``i_k`` from a helper) a scalar. Each condition is returned as
``(kind, exprs, guards, line)`` for :mod:`kernelrules.specify.constexpr_constraints`: kind
``reshape`` (``exprs``: the old and the new dimensions, as tuples of the same product),
``broadcast`` (``exprs``: two dimensions, equal unless one is 1) or ``dot`` (``exprs``: the inner
dimensions of ``tl.dot``'s operands, equal and at least 16).
"""

from __future__ import annotations

import ast
from typing import Any, Sequence

#: A shape: dimension expressions (None: unknown).
Shape = "tuple[ast.expr, ...] | None"
#: ``tl`` functions whose result has the broadcast shape of their tensor arguments.
ELEMENTWISE = frozenset({
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sigmoid", "maximum", "minimum", "fma", "erf", "cos", "sin",
    "floor", "ceil", "clamp", "fdiv", "div_rn", "sqrt_rn", "cast", "umulhi", "tanh", "softplus", "where", "load",
    "multiple_of", "max_contiguous", "max_constancy", "flip", "cdiv",
})
#: ``tl`` functions that return a scalar.
SCALARS = frozenset({"program_id", "num_programs", "cdiv", "next_power_of_2", "int", "float", "min", "max"})
#: Loops whose counter is a scalar.
RANGES = frozenset({"range", "static_range", "tl_range"})
#: Reductions: the result drops the ``axis`` dimension.
REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "prod"})
#: Longest chain of statements a function is followed through.
MAX_STATEMENTS = 2000

_ONE = 1


def _dims(node: ast.expr) -> tuple[ast.expr, ...] | None:
    """The dimensions of a shape argument written as a list or tuple."""
    return tuple(node.elts) if isinstance(node, (ast.List, ast.Tuple)) else None


def _is_one(dim: ast.expr) -> bool:
    return isinstance(dim, ast.Constant) and dim.value == _ONE


def _key(shape: Any) -> Any:
    return None if shape is None else tuple(ast.dump(d) for d in shape)


class _ShapeReader:
    """Follows one function's statements, keeping each local's shape and collecting conditions."""

    def __init__(self, scalars: frozenset[str], scope: Any) -> None:
        self.env: dict[str, Any] = {name: () for name in scalars}
        self.scope = scope
        self.found: list[tuple[str, tuple, tuple, int]] = []
        self.steps = 0

    # ------------------------------------------------------------------ statements

    def block(self, body: Sequence[ast.stmt], guards: tuple) -> None:
        for stmt in body:
            self.steps += 1
            if self.steps > MAX_STATEMENTS:
                return
            self.statement(stmt, guards)

    def statement(self, stmt: ast.stmt, guards: tuple) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            shape = self.shape(stmt.value, guards)
            for target in targets:
                self.bind(target, shape)
        elif isinstance(stmt, ast.AugAssign):
            shape = self.shape(ast.BinOp(stmt.target, stmt.op, stmt.value, lineno=stmt.lineno), guards)
            self.bind(stmt.target, shape)
        elif isinstance(stmt, ast.If):
            self.shape(stmt.test, guards)
            before = dict(self.env)
            self.block(stmt.body, guards + ((stmt.test, True, self.scope),))
            taken = self.env
            self.env = dict(before)
            self.block(stmt.orelse, guards + ((stmt.test, False, self.scope),))
            self.env = self.merge(taken, self.env)
        elif isinstance(stmt, (ast.For, ast.While)):
            self.shape(stmt.iter if isinstance(stmt, ast.For) else stmt.test, guards)
            if isinstance(stmt, ast.For):  # a counter of a range is a scalar
                ranged = isinstance(stmt.iter, ast.Call) and _callee_name(stmt.iter) in RANGES
                self.bind(stmt.target, () if ranged else None)
            before = dict(self.env)
            self.block(stmt.body, guards)
            self.env = self.merge(before, self.env)
        elif isinstance(stmt, (ast.Expr, ast.Return)) and stmt.value is not None:
            self.shape(stmt.value, guards)

    def bind(self, target: ast.expr, shape: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = shape
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind(element, None)

    @staticmethod
    def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        """Names with one shape on both paths keep it; the others become unknown."""
        return {name: (a.get(name) if _key(a.get(name)) == _key(b.get(name)) else None) for name in {*a, *b}}

    # ------------------------------------------------------------------ expressions

    def shape(self, node: ast.expr, guards: tuple) -> Any:
        """The shape of ``node`` (None: unknown), noting the conditions it needs on the way."""
        if isinstance(node, ast.Constant):
            return ()
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.BinOp):
            return self.broadcast([self.shape(node.left, guards), self.shape(node.right, guards)], guards, node)
        if isinstance(node, ast.Compare):
            shapes = [self.shape(node.left, guards)] + [self.shape(c, guards) for c in node.comparators]
            return self.broadcast(shapes, guards, node)
        if isinstance(node, ast.UnaryOp):
            return self.shape(node.operand, guards)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, guards)
        if isinstance(node, ast.Call):
            return self.call(node, guards)
        return None

    def subscript(self, node: ast.Subscript, guards: tuple) -> Any:
        """``x[:, None]``: a 1 where ``None`` is, the dimension where ``:`` is; anything else unknown."""
        base = self.shape(node.value, guards)
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base is None or not all(_is_none(p) or _is_full_slice(p) for p in parts):
            return None
        if sum(1 for p in parts if _is_full_slice(p)) != len(base):
            return None
        dims = iter(base)
        return tuple(ast.Constant(_ONE) if _is_none(p) else next(dims) for p in parts)

    def call(self, node: ast.Call, guards: tuple) -> Any:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        receiver = func.value if isinstance(func, ast.Attribute) else None
        receiver_is_tl = isinstance(receiver, ast.Name) and receiver.id in ("tl", "gl")
        method_on = None if receiver_is_tl or receiver is None else receiver
        args = ([method_on] if method_on is not None else []) + list(node.args)
        if name == "arange" and len(node.args) == 2:
            start, end = node.args
            return (end if isinstance(start, ast.Constant) and start.value == 0 else ast.BinOp(end, ast.Sub(), start),)
        if name in SCALARS and not method_on:
            return ()
        if name in ("zeros", "full", "empty") and node.args:
            return _dims(node.args[0])
        if name in ("reshape", "view") and len(args) >= 2:
            new = _dims(args[1]) if len(args) == 2 and _dims(args[1]) is not None else tuple(args[1:])
            old = self.shape(args[0], guards)
            if old is not None and old and new:
                self.found.append(("reshape", (ast.Tuple(list(old)), ast.Tuple(list(new))), guards, node.lineno))
            return new
        if name == "trans" and len(args) == 1:
            base = self.shape(args[0], guards)
            return tuple(reversed(base)) if base is not None and len(base) == 2 else None
        if name in ("to", "cast", "advance") and args:
            return self.shape(args[0], guards)
        if name == "make_block_ptr":
            block = next((k.value for k in node.keywords if k.arg == "block_shape"),
                         node.args[5] if len(node.args) > 5 else None)
            return _dims(block) if block is not None else None
        if name in REDUCTIONS and args:
            return self.reduction(node, args, guards)
        if name == "dot" and len(args) >= 2:
            a, b = self.shape(args[0], guards), self.shape(args[1], guards)
            if a is not None and b is not None and len(a) == len(b) == 2:
                self.found.append(("dot", (a[1], b[0]), guards, node.lineno))
                return (a[0], b[1])
            return None
        if name in ELEMENTWISE and (receiver_is_tl or receiver is None):
            shapes = [self.shape(a, guards) for a in node.args if not isinstance(a, ast.Starred)]
            shapes += [self.shape(k.value, guards) for k in node.keywords if k.arg in ("mask", "other")]
            return self.broadcast(shapes, guards, node) if shapes else None
        shapes = [self.shape(argument, guards) for argument in args]  # conditions inside a call still count
        if isinstance(func, ast.Name) and shapes and all(s is not None for s in shapes) and any(shapes):
            return self.broadcast(shapes, guards, node)  # a jit helper of tensors: taken to be elementwise
        return None

    def reduction(self, node: ast.Call, args: list, guards: tuple) -> Any:
        base = self.shape(args[0], guards)
        axis = next((k.value for k in node.keywords if k.arg == "axis"), args[1] if len(args) > 1 else None)
        if base is None or not isinstance(axis, ast.Constant) or type(axis.value) is not int:
            return None if axis is not None or base is None else ()
        index = axis.value if axis.value >= 0 else len(base) + axis.value
        if not 0 <= index < len(base):
            return None
        keep = any(k.arg == "keep_dims" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords)
        return tuple(ast.Constant(_ONE) if keep and i == index else d for i, d in enumerate(base) if keep or i != index)

    def broadcast(self, shapes: list, guards: tuple, node: ast.AST) -> Any:
        """Numpy-style broadcast of ``shapes``, noting each pair of dimensions that must agree."""
        known = [s for s in shapes if s is not None]
        if not known or (len(known) < len(shapes) and not any(known)):
            return None
        ordered = sorted(known, key=len, reverse=True)  # an operand of unknown shape is taken to be a scalar
        result: list[ast.expr] = list(ordered[0])
        for shape in ordered[1:]:
            offset = len(result) - len(shape)
            for i, dim in enumerate(shape):
                mine = result[offset + i]
                if _is_one(mine):
                    result[offset + i] = dim
                elif not _is_one(dim) and ast.dump(mine) != ast.dump(dim):
                    self.found.append(("broadcast", (mine, dim), guards, getattr(node, "lineno", 0)))
        return tuple(result)


def _callee_name(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_full_slice(node: ast.expr) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def shape_conditions(func: ast.FunctionDef, scope: Any, guards: tuple, scalars: frozenset[str]) -> list:
    """The ``(kind, exprs, guards, line)`` conditions the shapes built in ``func`` put on the constexprs;
    ``scalars``: the parameters known to be scalars (a kernel's, not a helper's)."""
    reader = _ShapeReader(scalars, scope)
    try:
        reader.block(func.body, guards)
    except RecursionError:
        return []
    return reader.found
