"""The rule condition language: a small lark grammar, parsed and tree-walked, never eval-ed.

    >>> run = compile_expr(parse("config.num_ctas > 1 and arch.sm < 90"))
    >>> run({"config": {"num_ctas": 2}, "arch": {"sm": 80}})
    True

``parse`` gives a frozen-dataclass AST, ``check`` finds unknown names and
functions, ``compile_expr`` builds a closure evaluator, ``to_source`` prints
an AST back. See docs/expressions.md for the language itself.

The parser, checker, compiler and printer are imported on first use (PEP 562): a process that needs only
:mod:`kernelrules.expr.safeexpr` (``tune``'s benchmark worker, which evaluates a problem's argument expressions)
does not pay for lark and the grammar (about 0.06 s, ``python -X importtime``) before it can import torch.
"""

from __future__ import annotations

from typing import Any

from .ast import (
    MAX_DEPTH,
    MAX_INT_BITS,
    BinOp,
    BoolOp,
    Call,
    Compare,
    Expr,
    ListExpr,
    Literal,
    Name,
    Unary,
)
from .errors import ExprError, ExprEvalError, ExprNameError, ExprSyntaxError, MissingName
from .values import MAX_SEQUENCE

#: Public names imported on first use, by the module that defines them.
_LAZY = {
    "DEFAULT_ROOTS": ".checker",
    "check": ".checker",
    "Evaluator": ".compiler",
    "compile_expr": ".compiler",
    "evaluate": ".compiler",
    "FUNCTIONS": ".functions",
    "Function": ".functions",
    "function": ".functions",
    "MAX_LENGTH": ".parser",
    "parse": ".parser",
    "to_source": ".printer",
}

__all__ = [
    "BinOp",
    "BoolOp",
    "Call",
    "Compare",
    "DEFAULT_ROOTS",
    "Evaluator",
    "Expr",
    "ExprError",
    "ExprEvalError",
    "ExprNameError",
    "ExprSyntaxError",
    "FUNCTIONS",
    "Function",
    "ListExpr",
    "Literal",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_LENGTH",
    "MAX_SEQUENCE",
    "MissingName",
    "Name",
    "Unary",
    "check",
    "compile_expr",
    "evaluate",
    "function",
    "parse",
    "to_source",
]


def __getattr__(name: str) -> Any:
    """Import a lazily loaded public name (see the module docstring) and keep it."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
