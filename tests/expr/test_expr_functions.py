"""The function registry: every function's results, its errors, and extending it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelrules.expr import FUNCTIONS, ExprEvalError, ExprNameError, check, evaluate, function, parse

ENV = {
    "config": {"BLOCK_M": 128, "BLOCK_N": 96, "BLOCK_K": 32, "num_stages": 3},
    "arch": {"fp8_dtypes": ["fp8e4nv", "fp8e5", "fp8e4b15"]},
    "kernel": {"dtypes": ["fp8e4b8", "fp8e5", "fp32"]},
}


def ev(text: str) -> object:
    return evaluate(text, ENV)


def same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(
    "text, expected",
    [
        ("min(3, 1, 2)", 1),
        ("min([3, 1, 2])", 1),
        ("max(3, 1.5)", 3),
        ("max([1, 5, 2])", 5),
        ("min('b', 'a')", "a"),
        ("abs(-3)", 3),
        ("abs(-2.5)", 2.5),
        ("ceil(2.1)", 3),
        ("ceil(-2.1)", -2),
        ("ceil(4)", 4),
        ("floor(2.9)", 2),
        ("floor(-2.1)", -3),
        ("round(2.5)", 2),
        ("round(3.5)", 4),
        ("round(2.567, 2)", 2.57),
        ("round(1234, -2)", 1200),
        ("log2(8)", 3.0),
        ("log2(0.5)", -1.0),
        ("log2(2 ** 1000)", 1000.0),
        ("is_pow2(1)", True),
        ("is_pow2(64)", True),
        ("is_pow2(96)", False),
        ("is_pow2(0)", False),
        ("is_pow2(-4)", False),
        ("is_pow2(64.0)", True),
        ("is_pow2(0.5)", False),
        ("is_pow2(1e999)", False),
        ("is_pow2(true)", False),
        ("is_pow2('8')", False),
        ("is_pow2([8])", False),
        ("floor_pow2(96)", 64),
        ("floor_pow2(64)", 64),
        ("floor_pow2(1)", 1),
        ("floor_pow2(100.5)", 64),
        ("floor_pow2(0.3)", 0.25),
        ("ceil_pow2(96)", 128),
        ("ceil_pow2(64)", 64),
        ("ceil_pow2(1)", 1),
        ("ceil_pow2(64.5)", 128),
        ("ceil_pow2(0.25)", 0.25),
        ("ceil_pow2(0.3)", 0.5),
        ("ceil_pow2(0.75)", 1),
        ("cdiv(10, 3)", 4),
        ("cdiv(9, 3)", 3),
        ("cdiv(0, 3)", 0),
        ("cdiv(-10, 3)", -3),
        ("clamp(5, 1, 3)", 3),
        ("clamp(-5, 1, 3)", 1),
        ("clamp(2.5, 1, 3)", 2.5),
        ("len([1, 2, 3])", 3),
        ("len('abcd')", 4),
        ("len(config)", 4),
        ("sum([1, 2, 3.5])", 6.5),
        ("sum([])", 0),
        ("sum([true, true, false])", 2),
        ("any([0, '', 3])", True),
        ("any([])", False),
        ("all([1, 'a'])", True),
        ("all([])", True),
        ("all([1, 0])", False),
        ("keys(config)", ["BLOCK_K", "BLOCK_M", "BLOCK_N", "num_stages"]),
        ("non_pow2(config)", ["BLOCK_N", "num_stages"]),
        ("join(['a', 1, 2.5])", "a, 1, 2.5"),
        ("join([1, 2], '-')", "1-2"),
        ("join([])", ""),
        ("without(kernel.dtypes, arch.fp8_dtypes)", ["fp8e4b8", "fp32"]),
        ("intersect(kernel.dtypes, arch.fp8_dtypes)", ["fp8e5"]),
        ("len(without(intersect(kernel.dtypes, arch.fp8_dtypes), ['fp8e5'])) > 0", False),
    ],
)
def test_functions(text: str, expected: object) -> None:
    assert same(ev(text), expected)


def test_floor_pow2_of_a_huge_number() -> None:
    assert ev("floor_pow2(2 ** 4000 + 5)") == 2**4000
    with pytest.raises(ExprEvalError, match="too large"):
        ev("ceil_pow2(2 ** 4096 - 1)")


@pytest.mark.parametrize(
    "text, words",
    [
        ("min([])", "empty list"),
        ("min(1)", "needs a list"),
        ("max(1, 'a')", "cannot compare int, string"),
        ("abs('a')", "needs a number"),
        ("ceil(1e999)", "ceil() failed"),
        ("floor('x')", "needs a number"),
        ("round(1e999)", "round() failed"),
        ("round(1.5, 'a')", "int number of digits"),
        ("round(5, -10 ** 100)", "at most 1000 digits"),
        ("log2(0)", "positive"),
        ("log2(-1)", "positive"),
        ("log2('a')", "needs a number"),
        ("floor_pow2(0)", "positive"),
        ("floor_pow2(-2)", "positive"),
        ("floor_pow2(true)", "positive"),
        ("ceil_pow2(1e999)", "positive"),
        ("ceil_pow2('a')", "positive"),
        ("cdiv(1, 0)", "by zero"),
        ("cdiv(1.5, 2)", "needs ints"),
        ("clamp(1, 3, 2)", "lo <= hi"),
        ("clamp('a', 1, 2)", "needs a number"),
        ("len(5)", "needs a list, mapping or string"),
        ("sum(5)", "needs a list"),
        ("sum(['a'])", "needs a number"),
        ("any(1)", "needs a list"),
        ("all('ab')", "needs a list"),
        ("keys([1])", "needs a mapping"),
        ("non_pow2(5)", "needs a mapping"),
        ("join('abc')", "needs a list"),
        ("join([1], 2)", "string separator"),
        ("join(['aaaa'] * 190000, 'xxxxxxx')", "longer than"),
        ("without(1, [1])", "needs a list"),
        ("intersect([1], 'a')", "needs a list"),
    ],
)
def test_function_errors(text: str, words: str) -> None:
    with pytest.raises(ExprEvalError) as info:
        ev(text)
    assert words in info.value.message
    assert info.value.line == 1 and info.value.column == 1


def test_keys_of_mixed_types_do_not_fail() -> None:
    assert sorted(evaluate("keys(problem)", {"problem": {1: "a", "b": 2}}), key=str) == [1, "b"]


def test_arity_is_registered() -> None:
    arity = {name: (f.min_args, f.max_args) for name, f in FUNCTIONS.items()}
    assert arity["min"] == (1, None)
    assert arity["join"] == (1, 2)
    assert arity["clamp"] == (3, 3)
    assert arity["round"] == (1, 2)


def test_registry_is_extensible() -> None:
    @function("twice", 1, signature="twice(x)")
    def twice(x: object) -> object:
        """Double a value."""
        return x * 2  # type: ignore[operator]

    try:
        assert evaluate("twice(config.BLOCK_M)", ENV) == 256
        assert check(parse("twice(1)")) == []
        assert FUNCTIONS["twice"].doc == "Double a value."
        with pytest.raises(ExprNameError, match="twice\\(x\\) takes 1 argument, got 2"):
            evaluate("twice(1, 2)", ENV)
    finally:
        del FUNCTIONS["twice"]


def test_impure_functions_are_not_folded() -> None:
    calls: list[int] = []

    @function("tick", 0, signature="tick()", pure=False)
    def tick() -> int:
        calls.append(1)
        return len(calls)

    try:
        from kernelrules.expr import compile_expr

        run = compile_expr(parse("tick()"))
        assert (run({}), run({})) == (1, 2)
    finally:
        del FUNCTIONS["tick"]


def test_every_function_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "expressions.md").read_text(encoding="utf-8")
    for name in FUNCTIONS:
        assert f"`{name}(" in doc, f"{name} is missing from docs/expressions.md"


def test_log2_is_a_float() -> None:
    assert math.isclose(ev("log2(10)"), math.log2(10))


def test_documented_examples_parse_and_check() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "expressions.md").read_text(encoding="utf-8")
    block = doc.split("## Examples", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) >= 5
    for line in lines:
        assert check(parse(line)) == [], line


def test_join_stops_early_on_long_text() -> None:
    with pytest.raises(ExprEvalError, match="longer than"):
        ev("join([2 ** 4095] * 999999)")  # 999999 items, but over a billion characters of text
    with pytest.raises(ExprEvalError, match="more than 10000 items"):
        ev("join([[2 ** 4095] * 999999])")
    assert ev("join([[1, 2], [3]], '; ')") == "[1, 2]; [3]"
