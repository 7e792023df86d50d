"""The AST-walking pieces both Python-subset interpreters share (kernelrules.expr.pyops).

``autotune_eval.ConfigEvaluator`` (autotune config lists) and ``tune.safeexpr`` (a space
file's ``problem`` section) evaluate chained comparisons, conditionals and slices with the
same functions, so they agree on Python's semantics: operands evaluated once, from the
left, and nothing after the first false link or in the branch not taken.
"""

from __future__ import annotations

import ast

import pytest

from kernelrules.discover.autotune_eval import ConfigEvaluator, ModuleScope
from kernelrules.expr.pyops import COMPARE, compare_chain, conditional, make_slice, subset
from kernelrules.expr import safeexpr


def recording_evaluator(env):
    """An ``evaluate`` for names and constants that records which names it read."""
    seen: list[str] = []

    def evaluate(node):
        if isinstance(node, ast.Name):
            seen.append(node.id)
            return env[node.id]
        return node.value

    return evaluate, seen


def body(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def test_compare_chain_stops_at_the_first_false_link():
    evaluate, seen = recording_evaluator({"a": 1, "b": 3, "c": 2, "d": 5})
    assert compare_chain(body("a < b < c < d"), evaluate, COMPARE) is False
    assert seen == ["a", "b", "c"]  # d is never read, and b once
    evaluate, seen = recording_evaluator({"a": 1, "b": 2, "c": 2})
    assert compare_chain(body("a < b <= c"), evaluate, COMPARE) is True and seen == ["a", "b", "c"]


def test_compare_chain_uses_only_the_given_operators():
    evaluate, _ = recording_evaluator({"a": 1, "b": [1]})
    with pytest.raises(KeyError):
        compare_chain(body("a in b"), evaluate, subset(COMPARE, (ast.In,)))


def test_conditional_evaluates_only_the_branch_taken():
    evaluate, seen = recording_evaluator({"t": 0, "x": 1, "y": 2})
    assert conditional(body("x if t else y"), evaluate) == 2 and seen == ["t", "y"]


def test_make_slice_leaves_missing_parts_none():
    evaluate, _ = recording_evaluator({"k": 4})
    node = body("s[:k]").slice
    assert make_slice(node, evaluate) == slice(None, 4, None)


@pytest.mark.parametrize("text", ["1 < 2 < 3", "3 > 2 > 2", "(4 if 1 < 0 else 5) == 5", "[1, 2, 3][1:] == [2, 3]",
                                  "2 <= 2 != 3"])
def test_both_interpreters_agree(text):
    expected = eval(text)  # noqa: S307 - literal test expressions
    walker = ConfigEvaluator(ModuleScope({}, {}, lambda d: d))
    assert walker.eval(body(text), {}) == expected
    assert safeexpr.evaluate(text, {}, torch_allowed=False) == expected
