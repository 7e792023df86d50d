"""The rule condition language: a small lark grammar, parsed and tree-walked, never eval-ed.

    >>> run = compile_expr(parse("config.num_ctas > 1 and arch.sm < 90"))
    >>> run({"config": {"num_ctas": 2}, "arch": {"sm": 80}})
    True

``parse`` gives a frozen-dataclass AST, ``check`` finds unknown names and
functions, ``compile_expr`` builds a closure evaluator, ``to_source`` prints
an AST back. See docs/expressions.md for the language itself.
"""

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
from .checker import DEFAULT_ROOTS, check
from .compiler import Evaluator, compile_expr, evaluate
from .errors import ExprError, ExprEvalError, ExprNameError, ExprSyntaxError, MissingName
from .functions import FUNCTIONS, Function, function
from .parser import MAX_LENGTH, parse
from .printer import to_source
from .values import MAX_SEQUENCE

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
