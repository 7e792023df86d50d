"""Parsing: literals, names, precedence and associativity, syntax errors with positions."""

from __future__ import annotations

import pytest

from kernelrules.expr import (
    MAX_DEPTH,
    BinOp,
    BoolOp,
    Call,
    Compare,
    ExprSyntaxError,
    ListExpr,
    Literal,
    Name,
    Unary,
    parse,
)

L = Literal


def N(dotted: str) -> Name:
    return Name(tuple(dotted.split(".")))


# --------------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    "text, value",
    [
        ("0", 0),
        ("42", 42),
        ("1_024", 1024),
        ("1_000_000", 1_000_000),
        ("007", 7),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("1E-3", 0.001),
        ("2.5e+2", 250.0),
        (".5", 0.5),
        ("1.", 1.0),
        ("1_0.2_5", 10.25),
        ("1e999", float("inf")),
        ("true", True),
        ("false", False),
        ("True", True),
        ("False", False),
        ('"abc"', "abc"),
        ("'abc'", "abc"),
        ('""', ""),
        (r'"a\"b"', 'a"b'),
        (r"'a\'b'", "a'b"),
        (r'"a\\b"', "a\\b"),
        (r'"a\nb\tc"', "a\nb\tc"),
        ("'it''s'", None),  # two adjacent strings are a syntax error, checked below
    ],
)
def test_literals(text: str, value: object) -> None:
    if value is None:
        with pytest.raises(ExprSyntaxError):
            parse(text)
        return
    node = parse(text)
    assert isinstance(node, Literal)
    assert type(node.value) is type(value) and node.value == value


def test_literal_equality_distinguishes_types() -> None:
    assert parse("1") != parse("1.0")
    assert parse("1") != parse("true")
    assert parse("0") != parse("false")
    assert parse("true") == parse("True")
    assert hash(parse("1")) == hash(Literal(1))


@pytest.mark.parametrize(
    "text, items",
    [("[]", ()), ("[1]", (L(1),)), ("[1, 2,]", (L(1), L(2))), ("[ 'a' , x.y ]", (L("a"), N("x.y")))],
)
def test_lists(text: str, items: tuple) -> None:
    assert parse(text) == ListExpr(items)


def test_names_and_calls() -> None:
    assert parse("config.BLOCK_M") == N("config.BLOCK_M")
    assert parse("arch.tensor_cores.wgmma") == N("arch.tensor_cores.wgmma")
    assert parse("value") == N("value")
    assert parse("config . x") == N("config.x")  # whitespace around dots is allowed
    assert parse("max(1, 2)") == Call("max", (L(1), L(2)))
    assert parse("f()") == Call("f", ())
    assert parse("f(1,)") == Call("f", (L(1),))
    # keywords are fine after a dot, where only a field name can appear
    assert parse("config.in") == N("config.in")
    assert parse("indexes + notes + true_") == BinOp("+", BinOp("+", N("indexes"), N("notes")), N("true_"))


def test_multiline_text() -> None:
    assert parse("config.a\n  and\n  config.b") == BoolOp("and", N("config.a"), N("config.b"))


# --------------------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    "text, tree",
    [
        ("1 + 2 * 3", BinOp("+", L(1), BinOp("*", L(2), L(3)))),
        ("1 - 2 - 3", BinOp("-", BinOp("-", L(1), L(2)), L(3))),
        ("8 / 4 // 2 % 3", BinOp("%", BinOp("//", BinOp("/", L(8), L(4)), L(2)), L(3))),
        ("2 ** 3 ** 2", BinOp("**", L(2), BinOp("**", L(3), L(2)))),
        ("-2 ** 2", Unary("-", BinOp("**", L(2), L(2)))),
        ("2 ** -1", BinOp("**", L(2), Unary("-", L(1)))),
        ("(-2) ** 2", BinOp("**", Unary("-", L(2)), L(2))),
        ("- - 1", Unary("-", Unary("-", L(1)))),
        ("+-1", Unary("+", Unary("-", L(1)))),
        ("-x * y", BinOp("*", Unary("-", N("x")), N("y"))),
        ("a or b and c", BoolOp("or", N("a"), BoolOp("and", N("b"), N("c")))),
        ("a and b or c", BoolOp("or", BoolOp("and", N("a"), N("b")), N("c"))),
        ("a or b or c", BoolOp("or", BoolOp("or", N("a"), N("b")), N("c"))),
        ("not a and b", BoolOp("and", Unary("not", N("a")), N("b"))),
        ("not a == b", Unary("not", Compare("==", N("a"), N("b")))),
        ("not not a", Unary("not", Unary("not", N("a")))),
        ("a + 1 < b * 2", Compare("<", BinOp("+", N("a"), L(1)), BinOp("*", N("b"), L(2)))),
        ("a not in [1]", Compare("not in", N("a"), ListExpr((L(1),)))),
        ("a in b and c", BoolOp("and", Compare("in", N("a"), N("b")), N("c"))),
        ("(a < b) == c", Compare("==", Compare("<", N("a"), N("b")), N("c"))),
        ("f(x) ** 2", BinOp("**", Call("f", (N("x"),)), L(2))),
        ("-f(x)", Unary("-", Call("f", (N("x"),)))),
        ("((1))", L(1)),
    ],
)
def test_precedence(text: str, tree: object) -> None:
    assert parse(text) == tree


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">=", "in", "not in"])
def test_every_comparison_operator(op: str) -> None:
    assert parse(f"a {op} b") == Compare(op, N("a"), N("b"))


# --------------------------------------------------------------------------- positions


def test_positions() -> None:
    node = parse("config.a + max(1, facts.b)")
    assert (node.line, node.column) == (1, 10)  # binary nodes sit at their operator
    assert (node.left.line, node.left.column) == (1, 1)
    call = node.right
    assert (call.line, call.column) == (1, 12)
    assert (call.args[1].line, call.args[1].column) == (1, 19)
    node = parse("x and\n   not y")
    assert (node.right.line, node.right.column) == (2, 4)
    assert (parse("  [1]").line, parse("  [1]").column) == (1, 3)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        ("a < b < c", 1, 7, "cannot be chained"),
        ("1 <= x not in y", 1, 8, "cannot be chained"),
        ("(a + b", 1, 1, "'(' is never closed"),
        ("f(a, (b)", 1, 2, "'(' is never closed"),
        ("a + b)", 1, 6, "')' has no matching '('"),
        ("[a)", 1, 3, "'[' is closed by ')'"),
        ("a = 1", 1, 3, "use '=='"),
        ("a => 1", 1, 3, "use '>='"),
        ("a && b", 1, 3, "use 'and'"),
        ("a || b", 1, 3, "use 'or'"),
        ("!a", 1, 1, "use 'not'"),
        ("a ^ 2", 1, 3, "'**'"),
        ("a is b", 1, 3, "'=='"),
        ("a if b else c", 1, 3, "conditional"),
        ("a + ", 1, 4, "unexpected end"),
        ("a +\n\n", 1, 4, "unexpected end"),
        ("a b", 1, 3, "expected an operator"),
        ("a +\n  * b", 2, 3, "expected a value"),
        ("config.", 1, 8, "field name"),
        ("config.1", 1, 8, "field name"),
        ('"abc', 1, 1, "unterminated string"),
        ("x == 'a\nb'", 1, 6, "unterminated string"),
        (r"'\q'", 1, 2, "unknown escape"),
        ("a == not b", 1, 6, "'a == (not b)'"),
        ("in + 1", 1, 1, "keyword"),
        ("config.__class__", 1, 8, "may not start with '_'"),
        ("__import__('os')", 1, 1, "may not start with '_'"),
        ("_x", 1, 1, "may not start with '_'"),
        ("", 1, 1, "empty"),
        ("   \n ", 1, 1, "empty"),
        ("é", 1, 1, "unexpected character"),
        ("a\x00", 1, 2, "NUL"),
        ("{config.x}", 1, 1, "braces"),
        ("f(,)", 1, 3, "unexpected ','"),
    ],
)
def test_syntax_errors(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse(text)
    error = info.value
    assert words in error.message
    assert (error.line, error.column) == (line, column)
    assert str(error).startswith(f"line {line}, column {column}: ")


def test_non_string_input() -> None:
    with pytest.raises(ExprSyntaxError, match="must be a string"):
        parse(5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- limits


def test_length_limit() -> None:
    ok = "x" * 10_000
    assert parse(ok) == N(ok)
    with pytest.raises(ExprSyntaxError, match="too long"):
        parse("x" * 10_001)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 3000 + "1" + ")" * 3000,
        "- " * 3000 + "1",
        "not " * 2000 + "x",
        "[" * 3000 + "]" * 3000,
        "f(" * 3000 + ")" * 3000,
        "2 ** " * 1500 + "2",
        "1" + " + 1" * 150,
    ],
)
def test_depth_limit(text: str) -> None:
    with pytest.raises(ExprSyntaxError, match="nests too deeply"):
        parse(text)


def test_depth_just_inside_limit() -> None:
    parse("(" * (MAX_DEPTH - 2) + "1" + ")" * (MAX_DEPTH - 2))
    parse("-" * (MAX_DEPTH - 2) + "1")


def test_unbalanced_deep_parentheses() -> None:
    with pytest.raises(ExprSyntaxError, match="never closed"):
        parse("(" * 9999)


def test_integer_literal_limit() -> None:
    assert parse("9" * 1000).value == int("9" * 1000)
    with pytest.raises(ExprSyntaxError, match="too large"):
        parse("9" * 1300)
    with pytest.raises(ExprSyntaxError, match="too large"):
        parse("9" * 6000)
    assert parse("0" * 9000 + "7") == Literal(7)  # leading zeros do not count
    assert parse("0" * 9000) == Literal(0)
