"""Static check of an AST: every name and call must make sense before a rule is used.

The checker reports all problems it finds (as :class:`ExprNameError`, each at
the offending node) rather than stopping at the first, so a rule author fixes
a file in one pass. It knows nothing about values: whether ``config.BLOCK_M``
exists for a given config is an evaluation-time question (MissingName).
"""

from __future__ import annotations

import difflib
from types import MappingProxyType
from typing import Collection, Iterable, Mapping

from . import ast
from .ast import MAX_DEPTH, depth
from .errors import ExprError, ExprNameError, ExprSyntaxError
from .functions import FUNCTIONS

Roots = Mapping[str, Collection[str] | None]

#: The namespaces of rule expressions; None means any field is allowed.
DEFAULT_ROOTS: Roots = MappingProxyType({"config": None, "arch": None, "facts": None, "problem": None, "kernel": None})

#: The extra root available in repair expressions: the value being repaired.
VALUE_ROOT = "value"


def check(expr: ast.Expr, roots: Roots = DEFAULT_ROOTS, allow_value: bool = False) -> list[ExprError]:
    """All static problems of ``expr``: unknown roots, fields, functions, wrong arity.

    ``roots`` maps each allowed namespace to its known fields, or to None when
    any field is allowed; only the first segment after the root is checked.
    ``allow_value`` admits the bare ``value`` root of repair expressions.
    """
    if depth(expr) > MAX_DEPTH:
        return [ExprSyntaxError(f"expression nests too deeply (more than {MAX_DEPTH} levels)", 1, 1)]
    problems: list[ExprError] = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            problems.extend(_check_name(node, roots, allow_value))
        elif isinstance(node, ast.Call):
            problems.extend(_check_call(node))
    return problems


def _error(message: str, node: ast.Expr) -> ExprNameError:
    return ExprNameError(message, node.line or None, node.column or None)


def _suggest(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for a close match, else ''."""
    match = difflib.get_close_matches(word, [str(choice) for choice in choices], n=1, cutoff=0.75)
    return f" (did you mean '{match[0]}'?)" if match else ""


def _check_name(node: ast.Name, roots: Roots, allow_value: bool) -> list[ExprError]:
    hidden = [part for part in node.parts if part.startswith("_")]
    if hidden:
        return [_error(f"names may not start with '_' ({hidden[0]!r})", node)]
    root = node.root
    if root == VALUE_ROOT and root not in roots:
        if allow_value:
            return []
        return [_error("'value' is only available in repair expressions", node)]
    if root not in roots:
        return [_error(_unknown_root_message(root, roots), node)]
    fields = roots[root]
    if fields is None or len(node.parts) < 2 or node.parts[1] in fields:
        return []
    field = node.parts[1]
    return [_error(f"unknown field '{field}' in namespace '{root}'{_suggest(field, fields)}", node)]


def _unknown_root_message(root: str, roots: Roots) -> str:
    if root in FUNCTIONS:
        return f"'{root}' is a function; call it as {FUNCTIONS[root].signature}"
    known = ", ".join(sorted(roots))
    return f"unknown name '{root}'{_suggest(root, roots)}; names start with one of: {known}"


def _check_call(node: ast.Call) -> list[ExprError]:
    if node.func.startswith("_"):
        return [_error(f"names may not start with '_' ({node.func!r})", node)]
    function = FUNCTIONS.get(node.func)
    if function is None:
        return [_error(f"unknown function '{node.func}'{_suggest(node.func, FUNCTIONS)}", node)]
    problem = function.arity_error(len(node.args))
    return [_error(problem, node)] if problem else []
