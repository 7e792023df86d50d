"""Calls of a package's own functions at import time, interpreted from their syntax tree, never run.

:mod:`kernelrules.discover.pkgcompute` decides module-level values such as ``exp = get_exp()`` or
``_FP8 = tl.float8e4b8 if is_hip() else tl.float8e4nv``; this module gives it what such a call
returns: the body is interpreted with :func:`kernelrules.discover.pkgvalues.evaluate` (``return``,
``if``, ``try`` bodies, local assignments; the call's arguments bound), and a body with loops or
string building goes to the config interpreter
(:class:`kernelrules.discover.autotune_eval.ConfigEvaluator`) when the arguments are plain data.
A function with other decorators than ``lru_cache``/``cache``, or one that reads a global some
function of its file rebinds with ``global`` (``set_backend()`` then ``get_backend()``), is not
interpreted: its value depends on calls kernelrules does not follow.

Why a module of its own: the statement interpreter is one concern; pkgcompute keeps the
expressions, facts and the values bound into a kernel's module.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from .autotune_eval import ConfigEvaluator, ModuleScope, Unsupported
from .pkgfiles import bound_by
from .pkgvalues import UNKNOWN, Context, evaluate, file_context
from .pysource import read_python

#: Decorators that do not change what a function returns.
_PURE_DECORATORS = ("lru_cache", "cache", "functools.lru_cache", "functools.cache")
#: Plain data the config interpreter may take and give.
_DATA = (bool, int, float, str, type(None), tuple, list)


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Opaque(Exception):
    """A statement the small interpreter does not run, or a value it does not know."""


def call_function(where: Path, func: ast.FunctionDef, args: list, kwargs: dict, ctx: Context) -> Any:
    """The value ``func`` (a ``def`` of the file ``where``) returns for these arguments, or UNKNOWN."""
    if ctx.depth > 8 or not all(_pure_decorator(d) for d in func.decorator_list) or _rebinds_globals(where, func):
        return UNKNOWN
    base = file_context(where, ctx.roots, ctx.depth + 1, ctx.reader)
    base = replace(base, facts=ctx.facts)
    local = _bind(func, args, kwargs, base)
    if local is None:
        return UNKNOWN
    inner = replace(base, locals=local)
    try:
        _run(func.body, inner)
    except _Return as ret:
        return ret.value
    except _Opaque:
        return _interpreted(where, func, args, kwargs, base)
    return None


def _pure_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    try:
        return ast.unparse(target) in _PURE_DECORATORS
    except (AttributeError, ValueError):
        return False


def _bind(func: ast.FunctionDef, args: list, kwargs: dict, ctx: Context) -> dict[str, Any] | None:
    """The parameters of ``func`` bound to the call's values (defaults evaluated), or None."""
    spec = func.args
    if spec.posonlyargs or spec.vararg or spec.kwarg or len(args) > len(spec.args):
        return None
    local = dict(zip((a.arg for a in spec.args), args))
    defaults = dict(zip((a.arg for a in spec.args[len(spec.args) - len(spec.defaults):]), spec.defaults))
    defaults.update({a.arg: d for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
    for name, value in kwargs.items():
        if name in local or name not in {a.arg for a in (*spec.args, *spec.kwonlyargs)}:
            return None
        local[name] = value
    for param in (*spec.args, *spec.kwonlyargs):
        if param.arg not in local:
            if param.arg not in defaults:
                return None
            local[param.arg] = evaluate(defaults[param.arg], ctx)
    return local


def _run(body: Sequence[ast.stmt], ctx: Context) -> None:
    """Run ``body``; raises :class:`_Return` with the value, :class:`_Opaque` for what it does not run."""
    for statement in body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Return):
            raise _Return(None if statement.value is None else _known(evaluate(statement.value, ctx)))
        if isinstance(statement, ast.If):
            test = _known(evaluate(statement.test, ctx))
            _run(statement.body if test else statement.orelse, ctx)
            continue
        if isinstance(statement, ast.Try) and not statement.finalbody:
            _run(statement.body, ctx)  # a body that raises would run a handler: values must be known
            continue
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and len(bound_by(statement)) == 1 \
                and statement.value is not None and (not isinstance(statement, ast.Assign)
                                                     or isinstance(statement.targets[0], ast.Name)):
            ctx.locals[bound_by(statement)[0]] = evaluate(statement.value, ctx)
            continue
        raise _Opaque


def _known(value: Any) -> Any:
    """``value``, or :class:`_Opaque` when it is unknown (the config interpreter may still run the function)."""
    if value is UNKNOWN:
        raise _Opaque
    return value


def _interpreted(where: Path, func: ast.FunctionDef, args: list, kwargs: dict, ctx: Context) -> Any:
    """``func`` run by the config interpreter (loops, string building), for plain-data arguments."""
    if not all(isinstance(v, _DATA) for v in (*args, *kwargs.values())):
        return UNKNOWN
    names = ctx.reader.names(where)
    constants = {n: s.value for n, s in names.defined.items()
                 if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None and n not in names.uncertain}
    functions = {n: s for n, s in names.defined.items() if isinstance(s, ast.FunctionDef)}
    try:
        value = ConfigEvaluator(ModuleScope(constants, functions, lambda dotted: dotted), 20_000).call(
            func, list(args), dict(kwargs), func)
    except (Unsupported, RecursionError, TypeError, ValueError, AttributeError, KeyError, IndexError):
        return UNKNOWN
    return value if isinstance(value, _DATA) else UNKNOWN


_GLOBALS: dict[tuple[str, int, int], frozenset[str]] = {}


def _rebinds_globals(where: Path, func: ast.FunctionDef) -> bool:
    """Whether ``func`` declares ``global`` names or reads one some function of its file rebinds that
    way (``set_backend()`` then ``get_backend()``): its value then depends on calls kernelrules does not run."""
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(func)):
        return True
    path = Path(where)
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in _GLOBALS:
            tree = ast.parse(read_python(path))
            _GLOBALS[key] = frozenset(name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return True
    read = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    return bool(read & _GLOBALS[key])


