"""Static checking: namespaces, fields, functions and arity, each error at its node."""

from __future__ import annotations

import pytest

from kernelrules.expr import DEFAULT_ROOTS, BinOp, Call, ExprNameError, Literal, Name, check, parse

ROOTS = {"config": None, "arch": {"sm", "warp_size", "tensor_cores"}, "facts": frozenset({"shared_bytes"})}


def problems(text: str, roots: object = ROOTS, allow_value: bool = False) -> list[tuple[str, int, int]]:
    found = check(parse(text), roots, allow_value=allow_value)  # type: ignore[arg-type]
    assert all(isinstance(error, ExprNameError) for error in found)
    return [(error.message, error.line, error.column) for error in found]


def test_clean_expressions() -> None:
    assert problems("config.anything > arch.sm and facts.shared_bytes < 1") == []
    assert problems("arch.tensor_cores.wgmma") == []  # only the first field is checked
    assert problems("len(keys(config)) + max(1, 2, 3)") == []
    assert check(parse("kernel.dtypes and problem.M and arch.whatever")) == []  # default roots are open


def test_default_roots() -> None:
    assert set(DEFAULT_ROOTS) == {"config", "arch", "facts", "problem", "kernel"}
    assert all(fields is None for fields in DEFAULT_ROOTS.values())


def test_unknown_root() -> None:
    [(message, line, column)] = problems("1 + confg.BLOCK_M")
    assert "unknown name 'confg'" in message and "did you mean 'config'" in message
    assert (line, column) == (1, 5)


def test_function_name_used_as_a_name() -> None:
    [(message, _, _)] = problems("min + 1")
    assert "'min' is a function" in message


def test_unknown_field() -> None:
    [(message, line, column)] = problems("x > 0 or\n  facts.shared_byte > 1", {"x": None, **ROOTS})
    assert message == "unknown field 'shared_byte' in namespace 'facts' (did you mean 'shared_bytes'?)"
    assert (line, column) == (2, 3)


def test_value_root() -> None:
    [(message, _, _)] = problems("value + 1")
    assert "only available in repair expressions" in message
    assert problems("floor_pow2(max(value, 1))", allow_value=True) == []
    assert problems("value.x", allow_value=True) == []


@pytest.mark.parametrize(
    "text, words, column",
    [
        ("mn(1, 2)", "unknown function 'mn' (did you mean 'min'?)", 1),
        ("1 + frobnicate()", "unknown function 'frobnicate'", 5),
        ("cdiv(1)", "cdiv(a, b) takes 2 arguments, got 1", 1),
        ("abs(1, 2)", "abs(x) takes 1 argument, got 2", 1),
        ("clamp(1, 2)", "takes 3 arguments", 1),
        ("join()", "takes 1 to 2 arguments, got 0", 1),
        ("min()", "takes at least 1 argument", 1),
    ],
)
def test_call_problems(text: str, words: str, column: int) -> None:
    [(message, line, col)] = problems(text)
    assert words in message and (line, col) == (1, column)


def test_all_problems_are_reported() -> None:
    found = problems("foo.x + mn(arch.nope) + cdiv(1)")
    assert [message.split(" '")[0].split(" (")[0] for message, _, _ in found] == [
        "unknown name",
        "unknown function",
        "unknown field",
        "cdiv(a, b) takes 2 arguments, got 1",
    ]


def test_hand_built_trees_with_hidden_names() -> None:
    node = BinOp("+", Name(("config", "__class__")), Call("_secret", (Literal(1),)))
    found = check(node)
    assert len(found) == 2
    assert all("may not start with '_'" in error.message for error in found)
