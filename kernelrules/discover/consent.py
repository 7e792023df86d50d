"""No user code without consent: what in a jit function would run the user's Python when defined or compiled.

kernelrules rebuilds a kernel's module from its source to cross-compile it
(:mod:`kernelrules.discover.kernelsource`): imports of ``triton``/``tl``/``math``, literal
constants and the ``@triton.jit`` functions. Defining a function still evaluates its
parameters' default values and annotations, and Triton runs a
``@triton.constexpr_function`` helper's Python while compiling. So a jit function is
defined only when those are plain data: literals, names, attribute chains, operators,
subscripts and ``constexpr(...)``; a call anywhere else (``64 + 0 * __import__("os")
.system(...)``), a lambda, a comprehension or a ``constexpr_function`` needs consent:
``lint --import`` (which runs the module's code anyway) sets :data:`ALLOW_CODE_ENV` for
the run and its compile workers. Without it the function is left out of the rebuilt
module and a kernel that needs it gets a one-line reason (lint: needs-spec).
"""

from __future__ import annotations

import ast
import contextlib
import os
from typing import Iterator

#: Set to ``1`` (by ``lint --import``) to let the cross-compile run the user's code.
ALLOW_CODE_ENV = "KERNELRULES_ALLOW_CODE"

#: Decorators of helpers whose body Triton runs as Python at compile time.
CODE_DECORATORS = ("constexpr_function",)

#: Nodes whose evaluation runs code beyond operators on data.
_CODE_NODES = (ast.Lambda, ast.NamedExpr, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Await,
               ast.Yield, ast.YieldFrom)


@contextlib.contextmanager
def allowing_user_code(allowed: bool) -> Iterator[None]:
    """Let this process and the compile workers it starts run the user's code (:data:`ALLOW_CODE_ENV`)
    while linting with --import; the environment is restored after."""
    before = os.environ.get(ALLOW_CODE_ENV)
    if allowed:
        os.environ[ALLOW_CODE_ENV] = "1"
    try:
        yield
    finally:
        if allowed:
            if before is None:
                os.environ.pop(ALLOW_CODE_ENV, None)
            else:
                os.environ[ALLOW_CODE_ENV] = before


def user_code_allowed() -> bool:
    """Whether this process (and its compile workers) may run the user's code."""
    return os.environ.get(ALLOW_CODE_ENV) == "1"


def _last_name(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    while isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else None


def _is_code(expr: ast.expr) -> bool:
    """Whether evaluating ``expr`` can run code: a call other than ``constexpr(...)``, a lambda, ..."""
    for node in ast.walk(expr):
        if isinstance(node, _CODE_NODES):
            return True
        if isinstance(node, ast.Call) and _last_name(node.func) != "constexpr":
            return True
    return False


def runs_user_code(func: ast.FunctionDef) -> str | None:
    """Why defining or compiling ``func`` would run the user's code (one phrase), else None."""
    if any(_last_name(d) in CODE_DECORATORS for d in func.decorator_list):
        return f"`{func.name}` is a @triton.constexpr_function, Python that Triton runs while compiling"
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    defaults = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for param, default in defaults:
        if _is_code(default):
            return f"the default of `{param.arg}` in `{func.name}` ({_short(default)}) is code"
    params = [*positional, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a is not None)]
    for param in params:
        if param.annotation is not None and _is_code(param.annotation):
            return f"the annotation of `{param.arg}` in `{func.name}` ({_short(param.annotation)}) is code"
    if func.returns is not None and _is_code(func.returns):
        return f"the return annotation of `{func.name}` ({_short(func.returns)}) is code"
    return None


def refusal(func: ast.FunctionDef) -> str:
    """The one-line reason for a kernel that needs ``func`` without consent."""
    return f"{runs_user_code(func)}, and kernelrules runs none of the linted code unless asked (--import)"


def _short(node: ast.expr, limit: int = 60) -> str:
    text = ast.unparse(node)
    return f"`{text}`" if len(text) <= limit else f"`{text[:limit]}...`"
