"""The compiled evaluator's shortcuts against a plain tree walk.

The compiler folds constants, inlines a field lookup into the comparison or call that reads it
(``config.X < 4``, ``is_pow2(config.num_warps)``) and two such comparisons into their ``and`` or
``or``, and, with a bound namespace (``compile_expr(node, bound)``: the evaluator the engine uses
for a large batch, with the architecture's values as constants), reads bound names at compile
time. Each must give what a plain walk of the tree gives, value or error (class, message,
position, missing root), in every environment that holds the bound values.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelrules.arch import load_arch
from kernelrules.expr import BinOp, BoolOp, Call, Compare, ExprError, ListExpr, Literal, MissingName, Name, Unary
from kernelrules.expr.ast import walk as exprwalk
from kernelrules.expr import FUNCTIONS, ExprEvalError, compile_expr, parse, to_source
from kernelrules.expr.values import BINARY, OPERAND_ERRORS, UNARY, operand_error
from kernelrules.judge.engine import default_engine

ARCH = {"sm": 90, "warp_size": 32, "name": "hopper", "zero": 0, "wgmma": True, "half": 0.5,
        "dtypes": ["fp8e4nv", "fp8e5"], "limits": {"smem": 232448}}
ENV = {
    "config": {"BLOCK_M": 128, "BLOCK_N": 96, "num_warps": 4, "name": "mm", "blocks": {"BLOCK_M": 128, "BLOCK_N": 96},
               "amd_options": {}, "flags": [1, 2]},
    "arch": ARCH,
    "facts": {"shared_bytes": 65536, "mma_path": "wgmma"},
    "problem": {},
    "kernel": {"dtypes": ["fp16"]},
}


def walk(node: Any, env: dict[str, Any]) -> Any:
    """The reference: evaluate a tree node by node, with no folding, inlining or binding."""
    where = (node.line or None, node.column or None)
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Name):
        try:
            value = env[node.root]
            for part in node.parts[1:]:
                value = value[part]
            return value
        except (KeyError, TypeError, IndexError):
            raise MissingName(node.root, node.dotted, *where) from None
    if isinstance(node, ListExpr):
        return [walk(item, env) for item in node.items]
    if isinstance(node, Unary):
        value = walk(node.operand, env)
        if node.op == "not":
            return not value
        try:
            return UNARY[node.op](value)
        except OPERAND_ERRORS as exc:
            raise operand_error(node.op, (value,), exc).locate(*where) from None
    if isinstance(node, BoolOp):
        left = walk(node.left, env)
        if (node.op == "or") == bool(left):
            return left
        return walk(node.right, env)
    if isinstance(node, (BinOp, Compare)):
        a, b = walk(node.left, env), walk(node.right, env)
        try:
            return BINARY[node.op](a, b)
        except ExprEvalError as exc:
            raise exc.locate(*where) from None
        except OPERAND_ERRORS as exc:
            raise operand_error(node.op, (a, b), exc).locate(*where) from None
    function = FUNCTIONS[node.func]
    args = [walk(arg, env) for arg in node.args]
    try:
        return function.impl(*args)
    except ExprEvalError as exc:
        raise exc.locate(*where) from None
    except OPERAND_ERRORS as exc:
        raise ExprEvalError(f"{function.name}() failed: {exc}", *where) from None


def outcome(run: Any, env: dict[str, Any]) -> tuple:
    """What an evaluation gives: the value (NaN as a marker), or the error's class, text and root."""
    try:
        value = run(env)
    except ExprError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "root", None))
    if isinstance(value, float) and math.isnan(value):
        return ("value", "nan")
    return ("value", type(value).__name__, value)


LEAVES = [Name(("arch", key)) for key in (*ARCH, "missing")] + [
    Name(("arch", "limits", "smem")), Name(("arch",)), Name(("config", "BLOCK_M")), Name(("config", "name")),
    Name(("config", "blocks")), Name(("config", "amd_options")), Name(("config", "flags")), Name(("facts", "shared_bytes")),
    Name(("facts", "mma_path")), Name(("facts", "missing")), Name(("problem", "M")), Name(("config", "BLOCK_M", "x")),
]
leaves = st.one_of(st.sampled_from(LEAVES), st.integers(0, 300).map(Literal), st.sampled_from(["wgmma", ""]).map(Literal),
                   st.booleans().map(Literal), st.sampled_from([0.0, 2.5]).map(Literal))
FUNCTION_NAMES = ["len", "keys", "non_pow2", "is_pow2", "max", "min", "cdiv", "join", "log2", "nosuch"]


def _compound(children: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.tuples(children, children)
    return st.one_of(
        st.builds(Unary, st.sampled_from(["-", "+", "not"]), children),
        st.builds(lambda op, lr: BinOp(op, *lr), st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), pair),
        st.builds(lambda op, lr: Compare(op, *lr), st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]),
                  pair),
        st.builds(lambda op, lr: BoolOp(op, *lr), st.sampled_from(["and", "or"]), pair),
        st.builds(Call, st.sampled_from(FUNCTION_NAMES), st.lists(children, min_size=1, max_size=2).map(tuple)),
        st.lists(children, max_size=3).map(lambda items: ListExpr(tuple(items))),
    )


trees = st.recursive(leaves, _compound, max_leaves=10)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_bound_evaluator_agrees_with_the_unbound_one(node) -> None:
    """Same value or same error, for random trees over bound and unbound names (parsed back from
    their text, so positions are real)."""
    node = parse(to_source(node))
    try:
        plain = compile_expr(node)
    except ExprError as exc:  # an unknown function or a wrong arity: binding changes nothing
        with pytest.raises(type(exc)):
            compile_expr(node, {"arch": ARCH})
        return
    bound = compile_expr(node, {"arch": ARCH})
    assert outcome(bound, ENV) == outcome(plain, ENV), to_source(node)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_compiled_evaluators_agree_with_a_plain_walk(node) -> None:
    """Folding, inlined lookups and fused comparisons change no value and no error."""
    node = parse(to_source(node))
    if any(isinstance(n, Call) and n.func not in FUNCTIONS for n in exprwalk(node)):
        return
    try:
        plain = compile_expr(node)
    except ExprError:  # a wrong number of arguments
        return
    reference = outcome(lambda env: walk(node, env), ENV)
    assert outcome(plain, ENV) == reference, to_source(node)
    assert outcome(compile_expr(node, {"arch": ARCH}), ENV) == reference, to_source(node)


@pytest.mark.parametrize("text", [
    "config.BLOCK_M > 64 and facts.mma_path == 'wgmma'", "config.BLOCK_M > 256 or facts.shared_bytes < 1",
    "config.BLOCK_M > 64 and facts.missing == 1", "config.missing > 64 or facts.shared_bytes < 1",
    "config.name < 1 and facts.shared_bytes < 1", "config.BLOCK_M > 1 and facts.mma_path < 1",
    "config.BLOCK_M < 1 or facts.mma_path - 1", "is_pow2(config.BLOCK_N)", "log2(config.name)",
    "len(non_pow2(config.blocks)) > 0", "keys(config.flags)", "config.BLOCK_M % 0 == 1",
])
def test_inlined_shapes_agree_with_a_plain_walk(text) -> None:
    """The shapes the compiler inlines, with each way they can fail."""
    node = parse(text)
    assert outcome(compile_expr(node), ENV) == outcome(lambda env: walk(node, env), ENV)


def test_bound_names_are_not_read_from_the_environment() -> None:
    """The architecture's scalars are constants of the bound evaluator; other names are still looked up."""
    node = parse("config.num_warps * arch.warp_size > arch.max_threads_per_block")
    env = {"config": {"num_warps": 64}}
    with pytest.raises(MissingName) as missing:
        compile_expr(node)(env)
    assert missing.value.root == "arch"
    assert compile_expr(node, {"arch": {"warp_size": 32, "max_threads_per_block": 1024}})(env) is True
    with pytest.raises(MissingName) as missing:  # a bound root does not make the config's names known
        compile_expr(node, {"arch": {"warp_size": 32, "max_threads_per_block": 1024}})({})
    assert (missing.value.root, missing.value.name, missing.value.column) == ("config", "config.num_warps", 1)


def test_names_missing_from_the_bound_namespace_still_raise_where_they_are() -> None:
    node = parse("1 + arch.missing")
    with pytest.raises(MissingName) as missing:
        compile_expr(node, {"arch": ARCH})(ENV)
    assert (missing.value.root, missing.value.name, missing.value.line, missing.value.column) == ("arch", "arch.missing", 1, 5)


@pytest.mark.parametrize("arch_name", ["ada", "hopper", "blackwell", "gfx942"])
def test_every_rule_bound_to_a_profile_agrees_with_the_rule(arch_name: str) -> None:
    """Each built-in rule's condition, bound to a real profile, judges sample environments as the rule does."""
    arch = load_arch(arch_name)
    facts = [{}, {"shared_bytes": 300000, "dot_k": 8, "dot_operand_bits": 8, "dot_count": 1, "mma_path": "mma_sync",
                  "accumulator_registers_per_thread": 256, "register_demand_per_thread": 300, "origin": "predicted"},
             {"shared_bytes": "x", "dot_k": None}]
    configs = [{"num_warps": 4, "num_stages": 3, "num_ctas": 1, "blocks": {"BLOCK_M": 64}, "amd_options": {}},
               {"num_warps": 3, "num_stages": 0, "num_ctas": 2, "blocks": {"BLOCK_M": 48}, "amd_options": {"kpack": 2},
                "waves_per_eu": 2, "matrix_instr_nonkdim": 4}]
    for rule in default_engine().plan(arch):
        bound = compile_expr(rule.condition.node, {"arch": arch.namespace()})
        for config in configs:
            for known in facts:
                env = {"config": config, "arch": arch.namespace(), "kernel": {"dtypes": ["fp16"]}, "facts": known,
                       "problem": {}}
                assert outcome(bound, env) == outcome(rule.condition.evaluate, env), (rule.code, config, known)
