"""The programs and numbers of a suite-style problem description, for the perf models.

A problem (a tune space's ``problem:``) gives its grid and sizes as expressions over the
config's constexprs and the problem's own values (``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)``);
these helpers evaluate them with kernelrules' safe expression language (never ``eval``),
including the grid read without rounding up, which says how much of a tile holds data, and
the share of a tile's lanes inside the data when a block is wider than the size it tiles.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Any, Mapping


def programs(grid: Any, env: Mapping[str, Any]) -> int:
    """The programs the grid launches (its dimensions' product, at least 1); ValueError without a grid."""
    if grid is None:
        raise ValueError("the problem has no grid (problem.grid): the general perf model needs the programs")
    total = 1
    for g in _dimensions(grid):
        total *= int(_evaluate(g, env))
    return max(1, total)


def _dimensions(grid: Any) -> list:
    """The grid's dimension expressions (one expression is a one-dimensional grid)."""
    return grid if isinstance(grid, list) else [grid]


def exact_programs(grid: Any, env: Mapping[str, Any]) -> float:
    """The programs the data need, without rounding up: the grid with ``cdiv(a, b)`` read as
    ``a / b``. Below the programs launched when a tile is larger than the data (masked lanes)."""
    total = 1.0
    for g in _dimensions(grid):
        try:
            total *= float(_evaluate(_exact_text(str(g)), env))
        except Exception:  # noqa: BLE001 - an expression it cannot rewrite: as launched
            total *= float(_evaluate(g, env))
    return max(total, 1e-9)


@lru_cache(maxsize=256)
def _exact_text(grid: str) -> str:
    """``grid`` with ``cdiv(a, b)`` written ``a / b`` (the same few grids come for every config)."""
    return ast.unparse(_ExactDivision().visit(ast.parse(grid, mode="eval")))


class _ExactDivision(ast.NodeTransformer):
    """Rewrites ``cdiv(a, b)`` as ``a / b``."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "cdiv" and len(node.args) == 2:
            return ast.BinOp(left=node.args[0], op=ast.Div(), right=node.args[1])
        return node


def number(expr: Any, env: Mapping[str, Any]) -> float | None:
    """``expr`` evaluated over ``env``, or None when it is absent or names values ``env`` lacks."""
    if expr is None:
        return None
    try:
        return float(_evaluate(expr, env))
    except Exception:  # noqa: BLE001 - an expression over names the problem lacks
        return None


def _evaluate(expr: Any, env: Mapping[str, Any]) -> Any:
    """``expr`` (a number, or an expression without torch) over ``env``: parsed once per text, and evaluated once
    per value of the names it reads (a problem's bytes read no constexpr: one value for a whole space)."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return expr
    text = str(expr)
    expression = _parsed(text)
    bound = tuple((name, env[name]) for name in sorted(expression.names) if name in env)
    try:
        return _value(text, bound)
    except TypeError:  # a value that cannot be a key: evaluated as it is
        return expression.evaluate(env)


@lru_cache(maxsize=4096)
def _value(text: str, bound: tuple) -> Any:
    """The value of ``text`` with its names bound as ``bound`` says (a name missing there raises, uncached)."""
    return _parsed(text).evaluate(dict(bound))


@lru_cache(maxsize=256)
def _parsed(text: str) -> Any:
    """The checked expression of ``text``: a problem's grid, bytes and FLOPs are the same few texts for every
    config the perf models rank, and parsing them again for each was much of an estimate's time."""
    from ..expr.safeexpr import parse

    return parse(text, torch_allowed=False)


def tile_fill(constexprs: Mapping[str, Any], sizes: Mapping[str, Any]) -> float:
    """The share of a tile's lanes that hold data along dimensions named after a problem size:
    ``BLOCK_N`` (or ``BLOCK_SIZE_N``) over a size ``N`` smaller than it leaves ``N / BLOCK_N`` of
    the lanes filled (a 2048-wide row chunk over 1024 columns moves half a tile)."""
    fill = 1.0
    for name, value in constexprs.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 1:
            continue
        for prefix in ("BLOCK_SIZE_", "BLOCK_"):
            if name.startswith(prefix):
                size = sizes.get(name[len(prefix):])
                if isinstance(size, int) and not isinstance(size, bool) and 0 < size < value:
                    fill *= size / value
                break
    return fill
