"""Arguments that are pointers only in a constexpr branch the launch does not take.

A kernel may take one argument as a tensor or as a scalar, chosen by a constexpr flag:

    if IS_SEQLEN_OFFSETS_TENSOR:
        o = o_t + tl.load(seq_offsets + i_n)
    else:
        o = o_t + seq_offsets

The whole body says ``seq_offsets`` is a pointer, but Triton compiles only the branch the
constexpr values take (a branch on a constexpr is resolved at compile time), and with the flag
False the launch passes an integer. :func:`dead_branch_pointers` reads the body as Triton would
for given constexpr values (each ``if`` on constexprs replaced by the branch taken) and returns
the parameters that are pointers in the whole body but not in what is left, yet still read
there: for those values they are scalars. Only ``ast`` is read.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import operator
from typing import Any, Mapping

from ..discover.kernels import ParsedModule
from .argflow import PointerFlow, float_params, reachable, used_names

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


def static_test(node: ast.expr, values: Mapping[str, Any]) -> bool | None:
    """The truth of an ``if`` test made of constexpr names with known ``values`` (None: not static)."""
    if isinstance(node, ast.Name):
        return bool(values[node.id]) if node.id in values else None
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = static_test(node.operand, values)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        found = [static_test(v, values) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in found else (None if None in found else True)
        return True if True in found else (None if None in found else False)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        left, right = _operand(node.left, values), _operand(node.comparators[0], values)
        if left is _UNKNOWN or right is _UNKNOWN:
            return None
        try:
            return bool(_COMPARE[type(node.ops[0])](left, right))
        except TypeError:
            return None
    return None


_UNKNOWN = object()


def _operand(node: ast.expr, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return values.get(node.id, _UNKNOWN)
    if isinstance(node, ast.Constant):
        return node.value
    return _UNKNOWN


class _TakeBranches(ast.NodeTransformer):
    """Replace each ``if`` (statement or expression) whose test is static by the branch it takes."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        taken = static_test(node.test, self.values)
        if taken is None:
            return node
        return (node.body if taken else node.orelse) or ast.Pass()

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        self.generic_visit(node)
        taken = static_test(node.test, self.values)
        return node if taken is None else (node.body if taken else node.orelse)


def taken_branches(func: ast.FunctionDef, values: Mapping[str, Any]) -> ast.FunctionDef:
    """A copy of ``func`` with every ``if`` on the constexpr ``values`` replaced by the branch taken."""
    return _TakeBranches(values).visit(copy.deepcopy(func))


def dead_branch_pointers(module: ParsedModule, kernel: str, values: Mapping[str, Any],
                         pointers: set[str]) -> dict[str, str]:
    """Parameters of ``pointers`` that, with the constexpr ``values``, are read only as scalars: each with
    its scalar type (``fp32`` when compared or combined with a float literal there, else ``int``)."""
    func = module.jit_functions.get(kernel)
    if func is None or not pointers or not values:
        return {}
    taken = taken_branches(func, values)
    pruned = dataclasses.replace(module, jit_functions={**module.jit_functions, kernel: taken})
    live = PointerFlow(pruned, names=reachable(pruned, kernel)).pointers.get(kernel, set())
    scalars = (pointers - live) & used_names(taken)
    floats = float_params(taken, scalars)
    return {name: "fp32" if name in floats else "int" for name in scalars}


#: Signature sources a branch-taken reading may override (what kernelrules inferred, never what was given).
INFERRED = ("naming", "dataflow", "default")


def retype_dead_branch_pointers(kernel: Any, signature: Any, values: Mapping[str, Any]) -> list[str]:
    """Type as scalars the inferred pointers of ``signature`` that ``values`` leave read only as scalars
    (in place; provenance ``dataflow``). Returns the names retyped."""
    from ..discover.kernels import cached_module
    from .signatures import DEFAULT_INT

    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule):
        return []
    pointers = {k for k, v in signature.spec.items() if isinstance(v, str) and v.startswith("*")
                and signature.provenance.get(k) in INFERRED}
    defaults = {p.name: p.default for p in kernel.params if p.constexpr and p.has_default
                and isinstance(p.default, (bool, int, float, str))}
    scalars = dead_branch_pointers(module, kernel.name, {**defaults, **values}, pointers)
    for name, kind in scalars.items():
        signature.spec[name] = "fp32" if kind == "fp32" else DEFAULT_INT
        signature.provenance[name] = "dataflow"
    return sorted(scalars)
