"""Printing: minimal parentheses that respect precedence, associativity, unary minus and **."""

from __future__ import annotations

import pytest

from kernelrules.expr import BinOp, BoolOp, Compare, Literal, Name, Unary, parse, to_source

L = Literal
X, Y, Z = Name(("x",)), Name(("y",)), Name(("z",))


@pytest.mark.parametrize(
    "text, printed",
    [
        ("1+2*3", "1 + 2 * 3"),
        ("(1+2)*3", "(1 + 2) * 3"),
        ("1-(2-3)", "1 - (2 - 3)"),
        ("(1-2)-3", "1 - 2 - 3"),
        ("2**3**2", "2 ** 3 ** 2"),
        ("(2**3)**2", "(2 ** 3) ** 2"),
        ("-2**2", "-2 ** 2"),
        ("(-2)**2", "(-2) ** 2"),
        ("2**-1", "2 ** -1"),
        ("2**(-1)", "2 ** -1"),
        ("-(2)", "-2"),
        ("-(-x)", "--x"),
        ("-(x+y)", "-(x + y)"),
        ("not (a and b)", "not (a and b)"),
        ("not a and b", "not a and b"),
        ("(not a) == b", "(not a) == b"),
        ("(a < b) < c", "(a < b) < c"),
        ("a < (b < c)", "a < (b < c)"),
        ("a or (b or c)", "a or (b or c)"),
        ("(a or b) and c", "(a or b) and c"),
        ("x not in [1, 2,]", "x not in [1, 2]"),
        ("f( x , [ ] )", "f(x, [])"),
        ("'it\\'s'", '"it\'s"'),
        ('"a\\\\b\\n\\t\\""', '"a\\\\b\\n\\t\\""'),
        ("True", "true"),
        ("1_000", "1000"),
        (".5", "0.5"),
        ("1e16", "1e+16"),
        ("1e999", "1e999"),
        ("config.in", "config.in"),
    ],
)
def test_printing(text: str, printed: str) -> None:
    node = parse(text)
    assert to_source(node) == printed
    assert parse(printed) == node


@pytest.mark.parametrize(
    "node",
    [
        BinOp("-", X, BinOp("+", Y, Z)),
        BinOp("**", BinOp("**", X, Y), Z),
        BinOp("**", Unary("-", X), Unary("-", Y)),
        Unary("-", BinOp("**", X, Y)),
        Compare("==", Compare("<", X, Y), Unary("not", Z)),
        BoolOp("and", X, BoolOp("and", Y, Z)),
        Unary("not", Unary("not", BoolOp("or", X, Y))),
        BinOp("*", Unary("+", L(1.5)), BinOp("%", L(2), L(3))),
        Literal(-0.0),
        Literal(float("inf")),
        Literal("quote \" and ' and \\ and\nnewline"),
    ],
)
def test_round_trip_of_hand_built_trees(node: object) -> None:
    assert parse(to_source(node)) == node  # type: ignore[arg-type]


def test_literal_invariants() -> None:
    with pytest.raises(ValueError):
        Literal(-1)
    with pytest.raises(ValueError):
        Literal(float("nan"))
    with pytest.raises(TypeError):
        Literal(None)  # type: ignore[arg-type]
