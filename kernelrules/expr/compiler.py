"""AST to a fast evaluator: a tree of Python closures built once.

``compile_expr(node)`` returns ``run(env)``. Each node becomes one closure
that calls its children's closures directly; constant operands are captured
as values rather than closures, subtrees whose operands are all constants
are evaluated once at compile time (when the result is a scalar and no error
occurs), and ``x in [literal, ...]`` becomes a frozenset lookup. The shapes rule
conditions are mostly made of run as one closure each: a two-part name compared
with a constant (``facts.shared_bytes > 232448``) or passed to a one-argument
function (``is_pow2(config.num_warps)``), and ``and``/``or`` of two such
comparisons. Names of a ``bound`` namespace are read when compiling. No user text
ever reaches ``eval``/``exec``: the only code run is the closures below, the
guarded operators of :mod:`values` and the registered functions.

``env`` maps each namespace root to a mapping (nested mappings for dotted
access) and ``value`` to the value itself. A name with no value raises
:class:`MissingName`; every other failure is :class:`ExprEvalError`.

Why over 400 lines: the closure of every node shape and those of the shapes run as
one closure raise the same errors at the same positions; they are kept side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping

from . import ast
from .ast import check_depth
from .errors import ExprEvalError, ExprNameError, MissingName
from .functions import FUNCTIONS
from .parser import parse
from .values import BINARY, MAX_SEQUENCE, OPERAND_ERRORS, UNARY, operand_error, weight

Env = Mapping[str, Any]
Evaluator = Callable[[Env], Any]

_FOLDABLE = (int, float, bool, str)
_MAX_FOLDED_STRING = 10_000
_LOOKUP_ERRORS = (KeyError, TypeError, IndexError)
_EMPTY_ENV: Env = {}
_CAUGHT = (ExprEvalError, *OPERAND_ERRORS)


@dataclass(frozen=True)
class _Code:
    """A compiled node: its closure, and what is known about it statically."""

    run: Evaluator
    constant: bool = False
    value: Any = None
    items: tuple[Any, ...] | None = None  # set for a list of constant scalars
    # set for ``root.key OP constant``: (root, key, dotted, line, column of the name, operator, constant, fail)
    field_op: tuple[Any, ...] | None = None


def compile_expr(expr: ast.Expr, bound: Mapping[str, Mapping[str, Any]] | None = None) -> Evaluator:
    """Compile an AST into ``run(env) -> value``.

    ``bound`` maps namespace roots to values known when compiling (the architecture a
    batch of configs is judged on): a name found there whose value is a scalar becomes
    that constant, and folds with its neighbours. The evaluator then gives what the
    unbound one gives in an ``env`` holding the same values under those roots. A name
    not found there is looked up in ``env`` as usual.

    Raises :class:`ExprNameError` for an unknown function or a wrong argument
    count (names are checked against ``env`` only when evaluating).
    """
    check_depth(expr)
    return _compile(expr, bound or _EMPTY_ENV).run


def evaluate(expr_or_text: ast.Expr | str, env: Env) -> Any:
    """Parse (if given text), compile and evaluate in one call; compiled texts are cached."""
    run = _compile_text(expr_or_text) if isinstance(expr_or_text, str) else compile_expr(expr_or_text)
    return run(env)


@lru_cache(maxsize=256)
def _compile_text(text: str) -> Evaluator:
    return compile_expr(parse(text))


def _compile(node: ast.Expr, bound: Env) -> _Code:
    """Dispatch on the node type."""
    if isinstance(node, ast.Literal):
        return _constant(node.value)
    if isinstance(node, ast.Name):
        known = _bound_value(node, bound)
        return _Code(_name(node)) if known is _UNBOUND else _constant(known)
    if isinstance(node, ast.ListExpr):
        return _list(node, bound)
    if isinstance(node, ast.Unary):
        return _unary(node, bound)
    if isinstance(node, ast.BoolOp):
        return _boolop(node, bound)
    if isinstance(node, (ast.BinOp, ast.Compare)):
        return _binary(node, bound)
    if isinstance(node, ast.Call):
        return _call(node, bound)
    raise TypeError(f"not an expression node: {type(node).__name__}")


def _constant(value: Any) -> _Code:
    return _Code(lambda env: value, True, value)


def _fold(code: _Code, operands: list[_Code]) -> _Code:
    """Evaluate ``code`` now if all operands are constants and the result is a scalar."""
    if not all(operand.constant for operand in operands):
        return code
    try:
        value = code.run(_EMPTY_ENV)
    except ExprEvalError:
        return code  # keep the error for evaluation time, where callers expect it
    if type(value) not in _FOLDABLE or (type(value) is str and len(value) > _MAX_FOLDED_STRING):
        return code  # lists stay fresh per evaluation; huge strings are not kept alive by the compiled code
    return _constant(value)


def _where(node: ast.Expr) -> tuple[int | None, int | None]:
    return (node.line or None, node.column or None)


# --------------------------------------------------------------------------- names

_UNBOUND = object()


def _bound_value(node: ast.Name, bound: Env) -> Any:
    """The scalar value of a name from ``bound``, or ``_UNBOUND`` (looked up when evaluating)."""
    if node.root not in bound:
        return _UNBOUND
    try:
        value = bound[node.root]
        for part in node.parts[1:]:
            value = value[part]
    except _LOOKUP_ERRORS:
        return _UNBOUND  # missing: the lookup at evaluation time raises MissingName, as unbound
    return value if type(value) in _FOLDABLE else _UNBOUND


def _field(node: ast.Expr, bound: Env) -> tuple[str, str, str, int | None, int | None] | None:
    """(root, key, dotted, line, column) of a two-part name looked up when evaluating, else None."""
    if not isinstance(node, ast.Name) or len(node.parts) != 2 or _bound_value(node, bound) is not _UNBOUND:
        return None
    return (node.parts[0], node.parts[1], node.dotted, *_where(node))


def _name(node: ast.Name) -> Evaluator:
    """Look a dotted name up in env, raising MissingName where any step has no value."""
    root, rest, dotted = node.root, node.parts[1:], node.dotted
    line, column = _where(node)

    if not rest:

        def lookup_root(env: Env) -> Any:
            try:
                return env[root]
            except _LOOKUP_ERRORS:
                raise MissingName(root, dotted, line, column) from None

        return lookup_root

    if len(rest) == 1:
        key = rest[0]

        def lookup_field(env: Env) -> Any:
            try:
                return env[root][key]
            except _LOOKUP_ERRORS:
                raise MissingName(root, dotted, line, column) from None

        return lookup_field

    def lookup_path(env: Env) -> Any:
        try:
            value = env[root]
            for part in rest:
                value = value[part]
            return value
        except _LOOKUP_ERRORS:
            raise MissingName(root, dotted, line, column) from None

    return lookup_path


# --------------------------------------------------------------------------- lists


def _list(node: ast.ListExpr, bound: Env) -> _Code:
    codes = [_compile(item, bound) for item in node.items]
    if all(code.constant for code in codes):
        items = tuple(code.value for code in codes)
        return _Code(lambda env: list(items), items=items)
    runs = [code.run for code in codes]
    line, column = _where(node)
    return _Code(lambda env: _gather(runs, env, line, column))


def _gather(runs: list[Evaluator], env: Env, line: int | None, column: int | None) -> list[Any]:
    """Evaluate items into a list, stopping as soon as their strings and lists together pass the size limit.

    Without this, ``[[0] * 999999, [0] * 999999, ...]`` would hold hundreds of
    maximal lists at once before anything looked at their total.
    """
    values: list[Any] = []
    total = 0
    for run in runs:
        value = run(env)
        if isinstance(value, (str, list, tuple)):
            total += weight(value)
            if total > MAX_SEQUENCE:
                raise ExprEvalError(f"list would hold more than {MAX_SEQUENCE} items", line, column)
        values.append(value)
    return values


# --------------------------------------------------------------------------- operators


def _unary(node: ast.Unary, bound: Env) -> _Code:
    operand = _compile(node.operand, bound)
    inner, op = operand.run, node.op
    line, column = _where(node)
    if op == "not":
        return _fold(_Code(lambda env: not inner(env)), [operand])
    apply = UNARY[op]

    def unary(env: Env) -> Any:
        value = inner(env)
        try:
            return apply(value)
        except OPERAND_ERRORS as exc:
            raise operand_error(op, (value,), exc).locate(line, column) from None

    return _fold(_Code(unary), [operand])


def _boolop(node: ast.BoolOp, bound: Env) -> _Code:
    """``and``/``or``: a constant left side decides statically which operand is the result."""
    left, right = _compile(node.left, bound), _compile(node.right, bound)
    if left.constant:
        decides = bool(left.value) if node.op == "or" else not left.value
        return left if decides else right
    if left.field_op is not None and right.field_op is not None:
        return _Code(_field_boolop(node.op == "or", left.field_op, right.field_op))
    first, second = left.run, right.run
    if node.op == "or":
        return _Code(lambda env: first(env) or second(env))
    return _Code(lambda env: first(env) and second(env))


def _field_boolop(either: bool, left: tuple[Any, ...], right: tuple[Any, ...]) -> Evaluator:
    """``a.x OP c and b.y OP d`` (or ``or``) in one closure: the two comparisons of
    ``binary_field_const`` inlined, with Python's short circuit."""
    root1, key1, dotted1, line1, column1, apply1, b1, fail1 = left
    root2, key2, dotted2, line2, column2, apply2, b2, fail2 = right

    def field_boolop(env: Env) -> Any:
        try:
            a = env[root1][key1]
        except _LOOKUP_ERRORS:
            raise MissingName(root1, dotted1, line1, column1) from None
        try:
            result = apply1(a, b1)
        except _CAUGHT as exc:
            raise fail1(a, b1, exc) from None
        if result if either else not result:
            return result
        try:
            a = env[root2][key2]
        except _LOOKUP_ERRORS:
            raise MissingName(root2, dotted2, line2, column2) from None
        try:
            return apply2(a, b2)
        except _CAUGHT as exc:
            raise fail2(a, b2, exc) from None

    return field_boolop


def _binary(node: ast.BinOp | ast.Compare, bound: Env) -> _Code:
    left, right = _compile(node.left, bound), _compile(node.right, bound)
    if node.op in ("in", "not in") and right.items is not None:
        return _membership(node, left, right.items)
    apply, op = BINARY[node.op], node.op
    line, column = _where(node)
    first = left.run

    def fail(a: Any, b: Any, exc: BaseException) -> ExprEvalError:
        if isinstance(exc, ExprEvalError):
            return exc.locate(line, column)
        return operand_error(op, (a, b), exc).locate(line, column)

    if right.constant:
        b = right.value
        field = _field(node.left, bound)
        if field is not None:  # ``config.X < 4``: the lookup inlined (the commonest shape of a rule)
            root, key, dotted, name_line, name_column = field

            def binary_field_const(env: Env) -> Any:
                try:
                    a = env[root][key]
                except _LOOKUP_ERRORS:
                    raise MissingName(root, dotted, name_line, name_column) from None
                try:
                    return apply(a, b)
                except _CAUGHT as exc:
                    raise fail(a, b, exc) from None

            return _Code(binary_field_const, field_op=(root, key, dotted, name_line, name_column, apply, b, fail))

        def binary_const(env: Env) -> Any:
            a = first(env)
            try:
                return apply(a, b)
            except _CAUGHT as exc:
                raise fail(a, b, exc) from None

        return _fold(_Code(binary_const), [left, right])

    second = right.run

    def binary(env: Env) -> Any:
        a = first(env)
        b = second(env)
        try:
            return apply(a, b)
        except _CAUGHT as exc:
            raise fail(a, b, exc) from None

    return _fold(_Code(binary), [left, right])


def _membership(node: ast.BinOp | ast.Compare, left: _Code, items: tuple[Any, ...]) -> _Code:
    """``x in [constants]`` as a set lookup; unhashable x falls back to a scan (same answer)."""
    members, first, negate = frozenset(items), left.run, node.op == "not in"

    def member(env: Env) -> bool:
        value = first(env)
        try:
            found = value in members
        except TypeError:
            found = value in items
        return not found if negate else found

    return _fold(_Code(member), [left])


# --------------------------------------------------------------------------- calls


def _call(node: ast.Call, bound: Env) -> _Code:
    function = FUNCTIONS.get(node.func)
    line, column = _where(node)
    if function is None:
        raise ExprNameError(f"unknown function '{node.func}'", line, column)
    problem = function.arity_error(len(node.args))
    if problem:
        raise ExprNameError(problem, line, column)
    codes = [_compile(arg, bound) for arg in node.args]
    runs = [code.run for code in codes]
    impl, name = function.impl, function.name
    variadic = function.max_args is None  # only these take a fan-out of large values that is worth bounding

    def fail(exc: BaseException) -> ExprEvalError:
        if isinstance(exc, ExprEvalError):
            return exc.locate(line, column)
        return ExprEvalError(f"{name}() failed: {exc}", line, column)

    field = _field(node.args[0], bound) if len(runs) == 1 else None
    if field is not None:  # ``is_pow2(config.num_warps)``: the lookup inlined
        root, key, dotted, name_line, name_column = field

        def call_field(env: Env) -> Any:
            try:
                arg = env[root][key]
            except _LOOKUP_ERRORS:
                raise MissingName(root, dotted, name_line, name_column) from None
            try:
                return impl(arg)
            except _CAUGHT as exc:
                raise fail(exc) from None

        code = _Code(call_field)
    elif len(runs) == 1:
        only = runs[0]

        def call_one(env: Env) -> Any:
            arg = only(env)
            try:
                return impl(arg)
            except _CAUGHT as exc:
                raise fail(exc) from None

        code = _Code(call_one)
    else:

        def call(env: Env) -> Any:
            args = _gather(runs, env, line, column) if variadic else [run(env) for run in runs]
            try:
                return impl(*args)
            except _CAUGHT as exc:
                raise fail(exc) from None

        code = _Code(call)
    return _fold(code, codes) if function.pure else code
