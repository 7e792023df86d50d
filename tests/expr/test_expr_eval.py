"""Evaluation: every operator, Python semantics, missing names, runtime errors and limits."""

from __future__ import annotations

import math
import pickle

import pytest

from kernelrules.expr import (
    BinOp,
    Call,
    ExprError,
    ExprEvalError,
    ExprNameError,
    Literal,
    MissingName,
    Name,
    compile_expr,
    evaluate,
    parse,
)

ENV = {
    "config": {"BLOCK_M": 128, "BLOCK_N": 96, "num_warps": 4, "num_ctas": 2, "name": "mm", "flags": [1, 2]},
    "arch": {"sm": 90, "warp_size": 32, "tensor_cores": {"wgmma": True}, "fp8_dtypes": ["fp8e4nv", "fp8e5"]},
    "facts": {"shared_bytes": 65536},
    "problem": {},
    "kernel": {"dtypes": ["fp16", "fp32"]},
    "value": 96,
}


def ev(text: str, env: dict | None = None) -> object:
    return evaluate(text, ENV if env is None else env)


def same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- operators


@pytest.mark.parametrize(
    "text, expected",
    [
        ("7 + 2", 9),
        ("7 - 2", 5),
        ("7 * 2", 14),
        ("7 / 2", 3.5),
        ("8 / 2", 4.0),
        ("7 // 2", 3),
        ("-7 // 2", -4),
        ("7 % 3", 1),
        ("-7 % 3", 2),
        ("7.5 % 2", 1.5),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("-2 ** 2", -4),
        ("(-2) ** 2", 4),
        ("2 ** 3 ** 2", 512),
        ("-3", -3),
        ("+3", 3),
        ("- -3", 3),
        ("-true", -1),
        ("true + true", 2),
        ("1 + 2.5", 3.5),
        ("'ab' + 'cd'", "abcd"),
        ("'ab' * 3", "ababab"),
        ("3 * 'ab'", "ababab"),
        ("'ab' * -1", ""),
        ("[1] + [2, 3]", [1, 2, 3]),
        ("[0] * 3", [0, 0, 0]),
        ("1 == 1.0", True),
        ("1 != 2", True),
        ("'a' == 1", False),
        ("2 < 3", True),
        ("3 <= 3", True),
        ("2 > 3", False),
        ("3 >= 4", False),
        ("'abc' < 'abd'", True),
        ("[1, 2] < [1, 3]", True),
        ("2 in [1, 2]", True),
        ("2.0 in [1, 2]", True),
        ("[1] in [[1], [2]]", True),
        ("3 not in [1, 2]", True),
        ("'b' in 'abc'", True),
        ("'BLOCK_M' in config", True),
        ("'x' not in config", True),
        ("not 0", True),
        ("not []", True),
        ("not 'a'", False),
        ("1 and 2", 2),
        ("0 and 2", 0),
        ("0 or 'x'", "x"),
        ("[] or [1]", [1]),
        ("true and false or true", True),
        ("[]", []),
        ("[1 + 1, 'a']", [2, "a"]),
    ],
)
def test_operators(text: str, expected: object) -> None:
    assert same(ev(text), expected)


def test_short_circuit_skips_missing_names() -> None:
    assert ev("false and facts.missing") is False
    assert ev("config.num_ctas > 1 or facts.missing > 0") is True
    assert ev("config.num_ctas < 1 and facts.missing > 0") is False
    with pytest.raises(MissingName):
        ev("config.num_ctas > 1 and facts.missing > 0")


def test_typical_condition() -> None:
    text = "config.num_warps not in [1, 2, 4, 8, 16, 32] or config.num_ctas > 1 and arch.sm < 90"
    run = compile_expr(parse(text))
    assert run({"config": {"num_warps": 3, "num_ctas": 1}, "arch": {"sm": 90}}) is True
    assert run({"config": {"num_warps": 4, "num_ctas": 2}, "arch": {"sm": 80}}) is True
    assert run({"config": {"num_warps": 4, "num_ctas": 2}, "arch": {"sm": 90}}) is False
    assert run({"config": {"num_warps": [4], "num_ctas": 1}, "arch": {"sm": 90}}) is True  # unhashable operand


# --------------------------------------------------------------------------- names


def test_names() -> None:
    assert ev("config.BLOCK_M") == 128
    assert ev("arch.tensor_cores.wgmma") is True
    assert ev("value") == 96
    assert ev("config") is ENV["config"]
    assert ev("kernel.dtypes") == ["fp16", "fp32"]


@pytest.mark.parametrize(
    "text, root, name",
    [
        ("facts.registers > 0", "facts", "facts.registers"),
        ("problem.M", "problem", "problem.M"),
        ("nothing.x", "nothing", "nothing.x"),
        ("config.BLOCK_M.x", "config", "config.BLOCK_M.x"),  # lookup into an int
        ("config.name.x", "config", "config.name.x"),  # lookup into a string
        ("config.flags.x", "config", "config.flags.x"),  # lookup into a list
        ("arch.tensor_cores.mma", "arch", "arch.tensor_cores.mma"),
        ("value.x", "value", "value.x"),
        ("1 + max(2, facts.spill_bytes)", "facts", "facts.spill_bytes"),
    ],
)
def test_missing_names(text: str, root: str, name: str) -> None:
    with pytest.raises(MissingName) as info:
        ev(text)
    assert (info.value.root, info.value.name) == (root, name)
    assert name in info.value.message


def test_missing_name_position_and_root_absent() -> None:
    with pytest.raises(MissingName) as info:
        ev("1 +\n  facts.x", {})
    assert (info.value.line, info.value.column, info.value.root) == (2, 3, "facts")
    with pytest.raises(MissingName):
        ev("facts", {})
    with pytest.raises(MissingName):
        ev("facts.x", {"facts": 5})


def test_missing_name_is_not_an_eval_error() -> None:
    assert issubclass(MissingName, ExprError)
    assert not issubclass(MissingName, ExprEvalError)


# --------------------------------------------------------------------------- runtime errors


@pytest.mark.parametrize(
    "text, words, column",
    [
        ("1 / 0", "division by zero", 3),
        ("1 // 0", "division by zero", 3),
        ("1 % 0", "modulo by zero", 3),
        ("1.0 / 0.0", "division by zero", 5),
        ("0 ** -1", "negative power", 3),
        ("'a' + 1", "'+' cannot be applied to string and int", 5),
        ("1 - 'a'", "int and string", 3),
        ("[1] * 'a'", "list and string", 5),
        ("1 < 'a'", "'<' cannot be applied", 3),
        ("1 in 2", "'in' cannot be applied to int and int", 3),
        ("1 in 'abc'", "'in'", 3),
        ("-'a'", "'-' cannot be applied to string", 1),
        ("+[1]", "'+' cannot be applied to list", 1),
        ("'%s' % 1", "'%' cannot be applied to string and int", 6),
        ("config % 2", "mapping and int", 8),
        ("(-8) ** 0.5", "no real value", 6),
        ("2.0 ** 5000", "too large", 5),
        ("10 ** 400 * 1.5", "too large", 11),
        ("2 ** 5000", "too large", 3),
        ("9 ** 9 ** 9 ** 9", "too large", 8),
        ("(2 ** 4000) * (2 ** 4000)", "too large", 13),
        ("'ab' * 600000", "limit is 1000000", 6),
        ("[1, 2] * 10 ** 6", "limit is 1000000", 8),
        ("'a' * 10 ** 300", "limit is 1000000", 5),
    ],
)
def test_eval_errors(text: str, words: str, column: int) -> None:
    with pytest.raises(ExprEvalError) as info:
        ev(text)
    assert words in info.value.message
    assert (info.value.line, info.value.column) == (1, column)


def test_limits_allow_results_at_the_edge() -> None:
    assert ev("2 ** 4095").bit_length() == 4096
    assert ev("(2 ** 4095 - 1) * 2 + 1").bit_length() == 4096
    with pytest.raises(ExprEvalError, match="too large"):
        ev("2 ** 4095 * 2")
    with pytest.raises(ExprEvalError, match="too large"):
        ev("2 ** 4095 + 2 ** 4095")
    assert len(ev("'a' * 1000000")) == 1_000_000
    with pytest.raises(ExprEvalError):
        ev("'a' * 1000000 + 'b'")
    assert ev("1 ** (10 ** 100)") == 1
    assert ev("(-1) ** (10 ** 100 + 1)") == -1
    assert ev("0 ** (10 ** 100)") == 0


def test_string_repetition_chain_is_bounded() -> None:
    with pytest.raises(ExprEvalError):
        ev("'aaaaaaaaaa' * 1000 * 1000 * 1000")


def test_errors_from_env_values() -> None:
    with pytest.raises(ExprEvalError, match="string and int"):
        ev("config.name + 1")
    with pytest.raises(ExprEvalError, match="too large"):
        ev("facts.big * 2", {"facts": {"big": 2**4096 - 1}})


def test_errors_are_picklable() -> None:
    for error in (MissingName("facts", "facts.x", 1, 2), ExprEvalError("boom", 3, 4)):
        clone = pickle.loads(pickle.dumps(error))
        assert type(clone) is type(error) and clone.__dict__ == error.__dict__


# --------------------------------------------------------------------------- compilation


def test_constant_folding_keeps_errors_for_evaluation() -> None:
    run = compile_expr(parse("1 / 0"))  # does not raise here
    with pytest.raises(ExprEvalError):
        run({})
    assert compile_expr(parse("2 ** 10 + len('abc')"))({}) == 1027


def test_list_results_are_fresh() -> None:
    run = compile_expr(parse("[1, 2]"))
    first = run({})
    first.append(3)
    assert run({}) == [1, 2]


def test_compile_rejects_unknown_functions_and_arity() -> None:
    with pytest.raises(ExprNameError, match="unknown function"):
        compile_expr(parse("nope(1)"))
    with pytest.raises(ExprNameError, match="takes 2 arguments, got 1"):
        compile_expr(parse("cdiv(1)"))


def test_compile_hand_built_tree() -> None:
    node = BinOp("+", Name(("config", "BLOCK_M")), Call("max", (Literal(1), Literal(2))))
    assert compile_expr(node)(ENV) == 130


def test_compile_refuses_too_deep_hand_built_tree() -> None:
    node: object = Literal(1)
    for _ in range(5000):
        node = BinOp("+", node, Literal(1))  # type: ignore[arg-type]
    with pytest.raises(ExprError, match="nests too deeply"):
        compile_expr(node)  # type: ignore[arg-type]


def test_evaluate_accepts_text_or_tree() -> None:
    assert evaluate("config.BLOCK_M // 2", ENV) == 64
    assert evaluate(parse("config.BLOCK_M // 2"), ENV) == 64


def test_floats_behave_like_python() -> None:
    assert ev("1e308 * 10") == math.inf
    assert math.isnan(ev("1e999 - 1e999"))


@pytest.mark.parametrize(
    "text",
    [
        "join([[1] * 999999] * 999999)",
        "[['a' * 999999] * 2]",
        "[['a' * 999999]] * 2",
        "[[1] * 999999] + [[1] * 999999]",
        "sum([[1] * 999999] * 999999)",
    ],
)
def test_nested_repetition_counts_nested_items(text: str) -> None:
    """Repetition shares references; the limit counts what printing or summing would walk."""
    with pytest.raises(ExprEvalError, match="limit is 1000000"):
        ev(text)


@pytest.mark.parametrize(
    "text",
    [
        "[[0] * 999999, [0] * 999999, [0] * 999999]",
        "['a' * 600000, 'b' * 600000]",
        "max([0] * 999999, [0] * 999999, [0] * 999999)",
        "len([config.name * 499999, config.name * 499999])",
    ],
)
def test_fan_out_of_large_values_is_bounded(text: str) -> None:
    with pytest.raises(ExprEvalError, match="more than 1000000 items"):
        ev(text)


def test_quadratic_list_functions_are_bounded() -> None:
    assert ev("len(without([1] * 999999, [2] * 999999))") == 999_999
    assert ev("len(intersect([[1]] * 3, [[1], [2]]))") == 3
    with pytest.raises(ExprEvalError, match="would compare"):
        ev("without([[1]] * 499999, [[1]] * 999)")
