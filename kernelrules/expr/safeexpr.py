"""A tiny, safe interpreter for the expressions of a space file's ``problem`` section.

Shapes (``[M, K]``), kernel arguments (``a.stride(0)``), the grid
(``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)``), FLOP counts and the reference
(``a @ b``, ``torch.softmax(x.float(), dim=-1)``) are written as Python
expressions, but they are never given to ``eval``: they are parsed with
:mod:`ast` and walked here, and anything outside a small whitelist is refused
with a message naming the construct:

* literals (numbers, booleans, strings as call arguments), names bound in the
  environment (the inputs, outputs, problem sizes and config values);
* arithmetic ``+ - * / // % ** @``, unary ``-``/``+``, comparisons and
  ``a if c else b`` (for sizes);
* attributes ``.T``, ``.mT``, ``.shape``, ``.ndim``, ``.dtype``, and the dtype
  constants ``torch.float16`` ...;
* calls of the size functions (``cdiv``, ``min``, ``max``, ``abs``, ``int``,
  ``next_power_of_2``), of a whitelist of ``torch.*`` and
  ``torch.nn.functional.*`` (``F.*``) functions, and of a whitelist of tensor
  methods (``.float()``, ``.double()``, ``.stride(0)``, ``.sum(dim=-1)`` ...);
* subscripts with integer indices or slices (``x.shape[0]``, ``a[:, :K]``).

Names with a leading underscore, lambdas, comprehensions, other attributes and
every other function are refused before anything is evaluated.

Why a space file keeps two syntaxes (``constraints`` in the rule language of
:mod:`kernelrules.expr`, ``problem`` here): neither interpreter can take the other's
expressions without changing what users see. The rule language has no tensors, ``@``,
methods, subscripts or bare names (the reference ``torch.softmax(x.float(), dim=-1)``,
the grid ``cdiv(M, BLOCK_M)``); evaluating ``constraints`` here would need namespace
attributes (``config.BLOCK_M``) and ``true``/``false``, and would replace the located
load-time errors and run-time messages of :mod:`kernelrules.space`. What the two Python
subsets walk alike (chained comparisons, conditionals, slices) lives once, in
:mod:`kernelrules.expr.pyops`, shared with :mod:`kernelrules.discover.autotune_eval`.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import KernelrulesError
from .pyops import BINARY, COMPARE, UNARY, cdiv, compare_chain, conditional, make_slice, next_power_of_2, subset

MAX_LENGTH = 2000

#: torch functions a reference may call (``torch.NAME``).
TORCH_FUNCTIONS = frozenset({
    "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "softmax", "log_softmax", "relu", "sigmoid", "tanh",
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "neg", "sum", "mean", "amax", "amin", "max", "min",
    "maximum", "minimum", "where", "cat", "stack", "transpose", "permute", "reshape", "clamp", "erf", "sin",
    "cos", "square", "pow", "mul", "add", "sub", "div", "cumsum", "var", "norm", "outer", "tril", "triu",
    "zeros_like", "ones_like", "full_like", "flip", "sign", "floor", "ceil", "round", "logsumexp", "argmax",
    "argmin",
})

#: torch.nn.functional functions a reference may call (``F.NAME`` or ``torch.nn.functional.NAME``).
FUNCTIONAL = frozenset({
    "softmax", "log_softmax", "relu", "gelu", "silu", "sigmoid", "layer_norm", "rms_norm", "linear",
    "scaled_dot_product_attention", "dropout", "leaky_relu", "tanh", "softplus", "normalize", "pad",
    "cross_entropy", "group_norm", "conv1d", "conv2d",
})

#: Tensor methods (``x.NAME(...)``).
METHODS = frozenset({
    "float", "double", "half", "bfloat16", "int", "long", "to", "t", "transpose", "permute", "reshape", "view",
    "contiguous", "sum", "mean", "amax", "amin", "max", "min", "softmax", "log_softmax", "exp", "log", "sqrt",
    "rsqrt", "abs", "clamp", "relu", "sigmoid", "tanh", "unsqueeze", "squeeze", "expand", "stride", "size",
    "numel", "dim", "cumsum", "square", "pow", "flatten", "repeat", "masked_fill", "var", "norm", "tril",
    "triu", "element_size", "flip", "neg",
})

#: Attributes that are plain values (``x.T``).
ATTRIBUTES = frozenset({"T", "mT", "shape", "ndim", "dtype"})

#: ``torch.<dtype>`` constants.
DTYPES = frozenset({
    "float16", "bfloat16", "float32", "float64", "half", "float", "double", "int8", "int16", "int32", "int64",
    "uint8", "bool", "float8_e4m3fn", "float8_e5m2",
})


#: Functions callable by bare name.
FUNCTIONS = {"cdiv": cdiv, "min": min, "max": max, "abs": abs, "int": int, "float": float,
             "next_power_of_2": next_power_of_2, "ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt,
             "log2": math.log2}

_BINARY = subset(BINARY, (ast.BitXor,))
_COMPARE = subset(COMPARE, (ast.In, ast.NotIn, ast.Is, ast.IsNot))
_UNARY = subset(UNARY, (ast.Invert,))


class ExpressionError(KernelrulesError):
    """An expression that is refused or fails to evaluate."""


@dataclass(frozen=True)
class _Torch:
    """Marks the names ``torch``, ``torch.nn``, ``torch.nn.functional`` and ``F`` while walking."""

    path: str


class SafeExpression:
    """A parsed, checked expression; :meth:`evaluate` walks it in an environment."""

    def __init__(self, source: str, *, torch_allowed: bool = True) -> None:
        if not isinstance(source, str):
            source = str(source)
        self.source = source.strip()
        if len(self.source) > MAX_LENGTH:
            raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
        try:
            self.tree = ast.parse(self.source, mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"cannot parse {self.source!r}: {exc.msg}") from None
        self.torch_allowed = torch_allowed
        self.names: set[str] = set()
        self._check(self.tree.body)

    # -- checking (before anything runs) -----------------------------------------------

    def _refuse(self, node: ast.AST, what: str) -> ExpressionError:
        return ExpressionError(f"{what} is not allowed in {self.source!r}",
                               hint="allowed: names of inputs and sizes, arithmetic, @, .T, .float(), "
                                    "whitelisted torch functions and tensor methods")

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, bool, str, type(None))):
                raise self._refuse(node, f"the constant {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise self._refuse(node, f"the name {node.id!r}")
            if node.id not in ("torch", "F"):
                self.names.add(node.id)
            elif not self.torch_allowed:
                raise self._refuse(node, f"{node.id!r}")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY:
                raise self._refuse(node, f"the operator {type(node.op).__name__}")
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise self._refuse(node, f"the operator {type(node.op).__name__}")
            self._check(node.operand)
        elif isinstance(node, ast.Compare):
            if any(type(op) not in _COMPARE for op in node.ops):
                raise self._refuse(node, "this comparison")
            for child in [node.left, *node.comparators]:
                self._check(child)
        elif isinstance(node, ast.IfExp):
            for child in (node.test, node.body, node.orelse):
                self._check(child)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for child in node.elts:
                self._check(child)
        elif isinstance(node, ast.Slice):
            for child in (node.lower, node.upper, node.step):
                if child is not None:
                    self._check(child)
        elif isinstance(node, ast.Subscript):
            self._check(node.value)
            self._check(node.slice)
        elif isinstance(node, ast.Attribute):
            self._check_attribute(node)
        elif isinstance(node, ast.Call):
            self._check_call(node)
        else:
            raise self._refuse(node, f"the construct {type(node).__name__}")

    def _torch_path(self, node: ast.AST) -> str | None:
        """``torch``, ``torch.nn``, ``torch.nn.functional`` or ``F`` as a dotted path, else None."""
        if isinstance(node, ast.Name) and node.id in ("torch", "F"):
            return "torch.nn.functional" if node.id == "F" else "torch"
        if isinstance(node, ast.Attribute):
            base = self._torch_path(node.value)
            if base == "torch" and node.attr == "nn":
                return "torch.nn"
            if base == "torch.nn" and node.attr == "functional":
                return "torch.nn.functional"
        return None

    def _check_attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("_"):
            raise self._refuse(node, f"the attribute {node.attr!r}")
        base = self._torch_path(node.value)
        if (base is not None or self._torch_path(node) is not None) and not self.torch_allowed:
            raise self._refuse(node, "torch")
        if base == "torch" and node.attr in DTYPES:
            return
        if self._torch_path(node) is not None:
            return
        if base is not None:
            raise self._refuse(node, f"torch attribute {node.attr!r}")
        if node.attr not in ATTRIBUTES:
            raise self._refuse(node, f"the attribute .{node.attr}")
        self._check(node.value)

    def _check_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in FUNCTIONS:
                raise self._refuse(node, f"the function {func.id}()")
        elif isinstance(func, ast.Attribute):
            base = self._torch_path(func.value)
            if base is not None and not self.torch_allowed:
                raise self._refuse(node, "torch")
            if base == "torch":
                if func.attr not in TORCH_FUNCTIONS:
                    raise self._refuse(node, f"torch.{func.attr}()")
            elif base == "torch.nn.functional":
                if func.attr not in FUNCTIONAL:
                    raise self._refuse(node, f"torch.nn.functional.{func.attr}()")
            elif base is not None:
                raise self._refuse(node, f"{base}.{func.attr}()")
            else:
                if func.attr not in METHODS:
                    raise self._refuse(node, f"the method .{func.attr}()")
                self._check(func.value)
        else:
            raise self._refuse(node, "this call")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self._refuse(arg, "*args")
            self._check(arg)
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg.startswith("_"):
                raise self._refuse(node, "**kwargs")
            self._check(keyword.value)

    # -- evaluating ---------------------------------------------------------------------

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The value of the expression with names bound by ``env``."""
        missing = sorted(self.names - set(env))
        if missing:
            raise ExpressionError(f"{', '.join(missing)} not defined in {self.source!r}",
                                  hint=f"known names: {', '.join(sorted(env)) or 'none'}")
        try:
            return self._eval(self.tree.body, env)
        except ExpressionError:
            raise
        except Exception as exc:  # noqa: BLE001 - report what failed, in one line
            raise ExpressionError(f"{self.source!r} failed: {type(exc).__name__}: {exc}") from None

    def _torch(self) -> Any:
        import torch

        return torch

    def _eval(self, node: ast.AST, env: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in ("torch", "F"):
                return _Torch("torch.nn.functional" if node.id == "F" else "torch")
            return env[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > 64:
                raise ExpressionError(f"exponent {right} too large in {self.source!r}")
            if isinstance(node.op, ast.LShift) and isinstance(right, int) and right > 64:
                raise ExpressionError(f"shift {right} too large in {self.source!r}")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self._eval(node.operand, env))
        if isinstance(node, ast.Compare):
            return compare_chain(node, lambda child: self._eval(child, env), _COMPARE)
        if isinstance(node, ast.IfExp):
            return conditional(node, lambda child: self._eval(child, env))
        if isinstance(node, ast.Tuple):
            return tuple(self._eval(e, env) for e in node.elts)
        if isinstance(node, ast.List):
            return [self._eval(e, env) for e in node.elts]
        if isinstance(node, ast.Slice):
            return make_slice(node, lambda child: self._eval(child, env))
        if isinstance(node, ast.Subscript):
            return self._eval(node.value, env)[self._eval(node.slice, env)]
        if isinstance(node, ast.Attribute):
            value = self._eval(node.value, env)
            if isinstance(value, _Torch):
                path = f"{value.path}.{node.attr}"
                if path in ("torch.nn", "torch.nn.functional"):
                    return _Torch(path)
                return getattr(self._torch(), node.attr)  # a dtype constant (checked)
            return getattr(value, node.attr)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        raise self._refuse(node, type(node).__name__)  # pragma: no cover - _check refused it already

    def _call(self, node: ast.Call, env: Mapping[str, Any]) -> Any:
        args = [self._eval(a, env) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, env) for k in node.keywords}
        func = node.func
        if isinstance(func, ast.Name):
            return FUNCTIONS[func.id](*args, **kwargs)
        owner = self._eval(func.value, env)  # type: ignore[attr-defined]
        if isinstance(owner, _Torch):
            torch = self._torch()
            module = torch.nn.functional if owner.path == "torch.nn.functional" else torch
            return getattr(module, func.attr)(*args, **kwargs)  # type: ignore[attr-defined]
        if func.attr not in METHODS:  # type: ignore[attr-defined]  # checked; kept as a second guard
            raise self._refuse(node, f"the method .{func.attr}()")  # type: ignore[attr-defined]
        return getattr(owner, func.attr)(*args, **kwargs)  # type: ignore[attr-defined]


def parse(source: Any, *, torch_allowed: bool = True) -> SafeExpression:
    """Parse and check one expression (a number is an expression too)."""
    return SafeExpression(str(source), torch_allowed=torch_allowed)


def evaluate(source: Any, env: Mapping[str, Any], *, torch_allowed: bool = True) -> Any:
    """Parse, check and evaluate one expression; plain numbers are returned as they are."""
    if isinstance(source, (int, float)) and not isinstance(source, bool):
        return source
    return parse(source, torch_allowed=torch_allowed).evaluate(env)
