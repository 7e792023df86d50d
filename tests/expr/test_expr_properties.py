"""Property tests: printer/parser round trip, agreement with Python, robustness to hostile text.

Python's ``eval`` appears here only as a test oracle, on texts this file
generated from numbers and operators.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelrules.expr import (
    BinOp,
    BoolOp,
    Call,
    Compare,
    Expr,
    ExprError,
    ExprEvalError,
    ExprSyntaxError,
    ListExpr,
    Literal,
    Name,
    Unary,
    check,
    compile_expr,
    parse,
    to_source,
)

#: Multiply example counts for a longer local run: KR_EXPR_EXAMPLES_SCALE=20 pytest tests/expr/test_expr_properties.py
SCALE = float(os.environ.get("KR_EXPR_EXAMPLES_SCALE", "1"))


def examples(count: int) -> settings:
    """Settings for a property test: ``count`` examples (scaled), no deadline."""
    return settings(max_examples=int(count * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])


FAST = examples(250)

KEYWORDS = {"and", "or", "not", "in", "true", "false", "True", "False"}
identifiers = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,5}", fullmatch=True)
roots = identifiers.filter(lambda word: word not in KEYWORDS)

# --------------------------------------------------------------------------- random ASTs

literals = st.one_of(
    st.integers(min_value=0, max_value=2**70).map(Literal),
    st.floats(min_value=0, allow_nan=False).map(Literal),
    st.booleans().map(Literal),
    st.text(max_size=6).map(Literal),
)
names = st.builds(lambda root, rest: Name((root, *rest)), roots, st.lists(identifiers, max_size=3))


def _compound(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    pair = st.tuples(children, children)
    return st.one_of(
        st.builds(Unary, st.sampled_from(["-", "+", "not"]), children),
        st.builds(lambda op, lr: BinOp(op, *lr), st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), pair),
        st.builds(
            lambda op, lr: Compare(op, *lr),
            st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]),
            pair,
        ),
        st.builds(lambda op, lr: BoolOp(op, *lr), st.sampled_from(["and", "or"]), pair),
        st.builds(Call, roots, st.lists(children, max_size=3).map(tuple)),
        st.lists(children, max_size=3).map(lambda items: ListExpr(tuple(items))),
    )


asts = st.recursive(st.one_of(literals, names), _compound, max_leaves=25)


@FAST
@given(asts)
def test_printed_ast_parses_back_to_itself(node: Expr) -> None:
    text = to_source(node)
    assert parse(text) == node, text


# --------------------------------------------------------------------------- random texts


def _spaced(draw: Callable[..., Any], *pieces: str) -> str:
    return "".join(piece + draw(st.sampled_from(["", " ", "  ", "\n"])) for piece in pieces)


PLAIN_ATOMS = ("1", "0", "1_024", ".5", "2.", "1e3", "1E-2", "true", "False", "'s'", '"d\\"q"', "[]", "x", "a.b.in")


@st.composite
def texts(
    draw: Callable[..., Any], depth: int = 3, atoms: tuple[str, ...] = PLAIN_ATOMS, functions: tuple[str, ...] = ("f",)
) -> str:
    """Loosely grammatical text: often parses, sometimes not (those are skipped)."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(atoms))
    inner = texts(depth - 1, atoms, functions)
    shape = draw(st.integers(0, 4))
    if shape == 0:
        op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "==", "<", ">=", "in", "not in", "and", "or"]))
        return _spaced(draw, draw(inner), op, draw(inner))
    if shape == 1:
        return _spaced(draw, draw(st.sampled_from(["-", "+", "not "])), draw(inner))
    if shape == 2:
        return _spaced(draw, "(", draw(inner), ")")
    if shape == 3:
        name = draw(st.sampled_from(functions))
        return _spaced(draw, name + "(", ", ".join(draw(st.lists(inner, max_size=3))), ")")
    return _spaced(draw, "[", ", ".join(draw(st.lists(inner, max_size=3))), "]")


#: Atoms that stress the limits once combined by the grammar.
HOSTILE_ATOMS = (
    "9**9**9", "10**4000", "2**4095", "'ab' * 999999", "[1] * 999999", "[[0] * 999] * 999", "1e999", "0",
    "-1", "config", "config.blocks", "config.name", "value", "facts.x", "arch.fp8_dtypes", "'%s'", "1e308",
)  # fmt: skip
FUNCTION_NAMES = ("len", "min", "max", "join", "sum", "keys", "non_pow2", "round", "floor_pow2", "log2", "cdiv")


@FAST
@given(texts())
def test_parsed_text_reprints_to_a_fixpoint(text: str) -> None:
    try:
        node = parse(text)
    except ExprSyntaxError:
        return
    printed = to_source(node)
    again = parse(printed)
    assert again == node
    assert to_source(again) == printed


# --------------------------------------------------------------------------- agreement with Python

# Python's grammar levels for the operators both languages share (higher binds tighter).
_LEVEL = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6, "u": 7, "**": 8}

numbers = st.one_of(
    st.integers(min_value=0, max_value=20).map(Literal),
    st.floats(min_value=0, max_value=1e6, allow_nan=False).map(Literal),
    st.sampled_from([0.0, 0.5, 1e300]).map(Literal),
    st.booleans().map(Literal),
)
exponents = st.one_of(
    st.integers(0, 3).map(Literal),
    st.integers(1, 3).map(lambda k: Unary("-", Literal(k))),
    st.sampled_from([0.0, 1.0, 2.0]).map(Literal),
)


def _numeric(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    pair = st.tuples(children, children)
    return st.one_of(
        st.builds(Unary, st.sampled_from(["-", "+", "not"]), children),
        st.builds(lambda op, lr: BinOp(op, *lr), st.sampled_from(["+", "-", "*", "/", "//", "%"]), pair),
        st.builds(lambda base, exp: BinOp("**", base, exp), children, exponents),
        st.builds(lambda op, lr: Compare(op, *lr), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), pair),
        st.builds(
            lambda op, left, items: Compare(op, left, ListExpr(tuple(items))),
            st.sampled_from(["in", "not in"]),
            children,
            st.lists(numbers, max_size=3),
        ),
        st.builds(lambda op, lr: BoolOp(op, *lr), st.sampled_from(["and", "or"]), pair),
    )


numeric_asts = st.recursive(numbers, _numeric, max_leaves=12)


def _level(node: Expr) -> int:
    if isinstance(node, Unary):
        return _LEVEL["not"] if node.op == "not" else _LEVEL["u"]
    if isinstance(node, Compare):
        return _LEVEL["cmp"]
    if isinstance(node, (BinOp, BoolOp)):
        return _LEVEL[node.op]
    return 9


def _emit(node: Expr, extra: Callable[[], bool], leaf: Callable[[Literal], str]) -> str:
    """Text valid in both languages: needed parentheses by Python's rules, plus random extra ones."""

    def sub(child: Expr, minimum: int) -> str:
        text = _emit(child, extra, leaf)
        return f"({text})" if _level(child) < minimum or extra() else text

    if isinstance(node, Literal):
        return leaf(node)
    if isinstance(node, ListExpr):
        return "[" + ", ".join(sub(item, 0) for item in node.items) + "]"
    if isinstance(node, Unary):
        space = " " if node.op == "not" else ""
        return node.op + space + sub(node.operand, _level(node))
    if isinstance(node, Compare):  # Python chains comparisons: operands must bind tighter
        return f"{sub(node.left, 5)} {node.op} {sub(node.right, 5)}"
    level = _level(node)
    if node.op == "**":
        return f"{sub(node.left, 9)} ** {sub(node.right, _LEVEL['u'])}"
    return f"{sub(node.left, level)} {node.op} {sub(node.right, level + 1)}"


def _python_literal(node: Literal) -> str:
    return repr(node.value)


def _python(text: str, namespace: dict[str, Any] | None = None) -> tuple[str, Any]:
    try:
        value = eval(text, namespace or {"__builtins__": {}})  # noqa: S307 - the test oracle, on generated text
    except (ZeroDivisionError, OverflowError, TypeError) as exc:
        return "error", exc
    if isinstance(value, complex):
        return "error", value
    return "value", value


def _agree(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, float) and isinstance(ours, float):
        if math.isnan(theirs) or math.isnan(ours):
            return math.isnan(theirs) and math.isnan(ours)
        return ours == theirs or math.isclose(ours, theirs, rel_tol=1e-12)
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(_agree, ours, theirs))
    return type(ours) is type(theirs) and ours == theirs


def _check_against_python(
    text: str, run: Callable[[dict[str, Any]], Any], env: dict[str, Any], oracle: tuple[str, Any] | None = None
) -> None:
    kind, theirs = oracle or _python(text)
    try:
        ours = run(env)
    except ExprEvalError:
        assert kind == "error", f"{text!r}: Python gives {theirs!r}, ours raised"
        return
    assert kind == "value", f"{text!r}: Python raised {theirs!r}, ours gave {ours!r}"
    assert _agree(ours, theirs), f"{text!r}: ours {ours!r}, Python {theirs!r}"


@examples(400)
@given(numeric_asts, st.data())
def test_literal_expressions_agree_with_python(node: Expr, data: st.DataObject) -> None:
    text = _emit(node, lambda: data.draw(st.integers(0, 5)) == 0, _python_literal)
    _check_against_python(text, compile_expr(parse(text)), {})


@examples(300)
@given(numeric_asts, st.data())
def test_expressions_over_names_agree_with_python(node: Expr, data: st.DataObject) -> None:
    """Same, with most literals read from ``problem.*`` so little is constant-folded."""
    values: dict[str, Any] = {}

    def leaf(literal: Literal) -> str:
        if data.draw(st.integers(0, 3)) == 0:
            return _python_literal(literal)
        key = f"v{len(values)}"
        values[key] = literal.value
        return f"problem.{key}"

    ours_text = _emit(node, lambda: False, leaf)
    python_text = ours_text.replace("problem.", "")
    python_env = {"__builtins__": {}, **values}
    kind, theirs = _python(python_text, python_env)
    _check_against_python(ours_text, compile_expr(parse(ours_text)), {"problem": values}, (kind, theirs))


# --------------------------------------------------------------------------- robustness

ENV = {
    "config": {"BLOCK_M": 128, "name": "mm", "blocks": {"BLOCK_M": 128, "BLOCK_N": 96}, "flags": [1, 2]},
    "arch": {"sm": 90, "fp8_dtypes": ["fp8e5"]},
    "facts": {},
    "problem": {"M": 4096},
    "kernel": {"dtypes": ["fp16"]},
    "value": 3,
}

FRAGMENTS = [
    "(", ")", "[", "]", ",", ".", " ", "\n", "\x00", "é", "\\", '"', "'", "=", "==", "!", "&", "{",
    "__import__", "__class__", "_", "'os'", "config", "arch", "facts.x", "value", "x",
    "not ", " and ", " or ", " in ", " not in ", "-", "+", "*", "/", "//", "%", "**", "<", ">=",
    "0", "9", "1e999", ".5", "1_0", "9**9**9", "10**4000", "true", "False",
    "'a'", "'ab' * 999999", "[1] * 999999", "len(", "min(", "max(", "keys(", "join(", "cdiv(", "round(",
    "floor_pow2(", "log2(", "non_pow2(", "sum(", "config.blocks", "config.BLOCK_M.x",
]  # fmt: skip

hostile = st.one_of(
    texts(4, HOSTILE_ATOMS, FUNCTION_NAMES),
    st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join),
    st.builds(
        lambda piece, n, tail: piece * n + tail, st.sampled_from(FRAGMENTS), st.integers(1, 5000), st.text(max_size=5)
    ),
)


def _full_pipeline(text: str) -> None:
    """Parse, check, compile and evaluate; only ExprError may escape."""
    try:
        node = parse(text)
        check(node, allow_value=True)
        to_source(node)
        compile_expr(node)(ENV)
    except ExprError:
        pass


@FAST
@given(st.text(max_size=60))
def test_arbitrary_text_raises_only_expr_errors(text: str) -> None:
    _full_pipeline(text)


@FAST
@given(hostile)
def test_hostile_text_raises_only_expr_errors(text: str) -> None:
    _full_pipeline(text)


@FAST
@given(st.recursive(st.one_of(literals, names), _compound, max_leaves=15))
def test_random_trees_evaluate_or_raise_expr_errors(node: Expr) -> None:
    _full_pipeline(to_source(node))
