"""AST of the expression language: small frozen dataclasses.

Every node carries ``line``/``column`` (1-based, within the expression text)
excluded from comparison, so two parses of differently spaced text are
equal. Binary nodes are located at their operator, other nodes at their
first character.

Invariant that makes ``parse(to_source(e)) == e`` hold for every node one
can build: a :class:`Literal` number is never negative (the grammar spells
``-1`` as a unary minus applied to ``1``) and never NaN, and an int literal
fits the language's integer size limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Union

from .errors import ExprSyntaxError

#: The deepest nesting accepted, counted in operators, calls, lists and parentheses.
MAX_DEPTH = 100
#: Largest magnitude of an integer anywhere in the language, in bits.
MAX_INT_BITS = 4096

Scalar = Union[int, float, bool, str]

ARITHMETIC_OPS = ("+", "-", "*", "/", "//", "%", "**")
COMPARISON_OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in")
BOOLEAN_OPS = ("and", "or")
UNARY_OPS = ("-", "+", "not")


@dataclass(frozen=True)
class Expr:
    """Base of all nodes: the source position, ignored by ``==``."""

    line: int = field(default=0, compare=False, kw_only=True)
    column: int = field(default=0, compare=False, kw_only=True)

    def children(self) -> tuple["Expr", ...]:
        """Direct sub-expressions, left to right."""
        return ()


@dataclass(frozen=True, eq=False)
class Literal(Expr):
    """A constant: int, float, bool or str.

    Equality also compares the Python type, so ``1``, ``1.0`` and ``true``
    are three different literals although Python calls them equal.
    """

    value: Scalar

    def __post_init__(self) -> None:
        value = self.value
        if type(value) not in (int, float, bool, str):
            raise TypeError(f"a literal is an int, float, bool or str, not {type(value).__name__}")
        if type(value) is int and (value < 0 or value.bit_length() > MAX_INT_BITS):
            raise ValueError(f"an int literal is non-negative and at most {MAX_INT_BITS} bits")
        if type(value) is float and (math.isnan(value) or value < 0):
            raise ValueError("a float literal is non-negative and not NaN")

    def __eq__(self, other: object) -> bool:
        if type(other) is not Literal:
            return NotImplemented
        return type(self.value) is type(other.value) and self.value == other.value

    def __hash__(self) -> int:
        return hash((Literal, type(self.value), self.value))


@dataclass(frozen=True)
class ListExpr(Expr):
    """``[a, b, c]``: evaluates to a new Python list."""

    items: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.items


@dataclass(frozen=True)
class Name(Expr):
    """A dotted name such as ``config.BLOCK_M``: ``parts[0]`` is the namespace root."""

    parts: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("a name has at least one part")

    @property
    def root(self) -> str:
        """The namespace: ``config`` for ``config.BLOCK_M``."""
        return self.parts[0]

    @property
    def dotted(self) -> str:
        """The name as written: ``config.BLOCK_M``."""
        return ".".join(self.parts)


@dataclass(frozen=True)
class Unary(Expr):
    """``-x``, ``+x`` or ``not x``."""

    op: str
    operand: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)


@dataclass(frozen=True)
class BinOp(Expr):
    """Arithmetic: ``+ - * / // % **``."""

    op: str
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Compare(Expr):
    """One comparison (never chained): ``== != < <= > >= in`` or ``not in``."""

    op: str
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class BoolOp(Expr):
    """``and`` / ``or``: short-circuit, yields one operand (Python semantics)."""

    op: str
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Call(Expr):
    """A call of a registered pure function: ``max(a, b)``."""

    func: str
    args: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.args


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of the tree, parents before children, without recursion."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children()))


def depth(expr: Expr) -> int:
    """Height of the tree (a lone literal is 1), computed without recursion."""
    deepest = 0
    stack = [(expr, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.children())
    return deepest


def check_depth(expr: Expr, limit: int = MAX_DEPTH) -> None:
    """Raise ExprSyntaxError for a tree deeper than ``limit``.

    Printing, checking and compiling recurse over the tree; this keeps them far
    from Python's recursion limit even for hand-built trees.
    """
    stack = [(expr, 1)]
    while stack:
        node, level = stack.pop()
        if level > limit:
            raise ExprSyntaxError(
                f"expression nests too deeply (more than {limit} levels)", node.line or None, node.column or None
            )
        stack.extend((child, level + 1) for child in node.children())
