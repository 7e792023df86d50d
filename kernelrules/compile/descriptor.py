"""Tensor-descriptor arguments in a signature: ``"tensordesc<fp16[BLOCK_M, BLOCK_K]>"``.

A kernel launched with a host ``triton.tools.tensor_descriptor.TensorDescriptor`` is
specialized by Triton's JIT on the descriptor's element type and block shape only: the
binder (``native_specialize_impl``) turns it into the type string
``"tensordesc<fp16[64, 32]>"`` with no attribute, whatever the tensor's shape, strides or
padding (the shape and strides become runtime arguments the compiler appends itself). A
signature gives a descriptor argument in that form; the block shape may name the kernel's
constexprs (``tensordesc<fp16[BLOCK_M, BLOCK_K]>``, with ``+ - * //`` and integers), since
the block shape usually follows the config, and is resolved per config here.

:func:`stand_in` builds the object the specializer reads: a real ``TensorDescriptor`` made
without its host-side checks, on an aligned stand-in tensor, so the type string and the
cache key are Triton's own.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Callable, Mapping

from ..errors import SignatureSpecError

#: ``tensordesc<DTYPE[DIM, DIM, ...]>``: one element type, one to five block dimensions.
_DESCRIPTOR = re.compile(r"\s*tensordesc\s*<\s*([A-Za-z0-9_]+)\s*\[([^\]]*)\]\s*>\s*\Z")

_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.FloorDiv: lambda a, b: a // b}


def is_descriptor(value: Any) -> bool:
    """Whether ``value`` is a tensor-descriptor type string."""
    return isinstance(value, str) and _DESCRIPTOR.match(value) is not None


def parse(text: str) -> tuple[str, list[str]]:
    """``("fp16", ["BLOCK_M", "BLOCK_K"])`` for ``"tensordesc<fp16[BLOCK_M, BLOCK_K]>"``."""
    match = _DESCRIPTOR.match(text)
    if match is None:
        raise SignatureSpecError(f"{text!r} is not a tensor-descriptor type",
                                 hint="write tensordesc<DTYPE[DIM, ...]>, e.g. tensordesc<fp16[BLOCK_M, 64]>")
    dims = [d.strip() for d in match.group(2).split(",")]
    return match.group(1), dims


def format_type(dtype: str, dims: list[Any]) -> str:
    """The type string Triton writes: ``tensordesc<fp16[64, 32]>``."""
    return f"tensordesc<{dtype}[{', '.join(str(d) for d in dims)}]>"


def _evaluate(node: ast.expr, constexprs: Mapping[str, Any], arg: str) -> int:
    """An integer block dimension from a literal, a constexpr name or ``+ - * //`` of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        value = constexprs.get(node.id)
        value = getattr(value, "value", value)  # a tl.constexpr
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise SignatureSpecError(f"argument {arg!r}: the descriptor's block shape names {node.id!r}, which is no "
                                 f"integer constexpr of this launch")
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left, constexprs, arg), _evaluate(node.right, constexprs, arg))
    raise SignatureSpecError(f"argument {arg!r}: cannot read the block dimension {ast.unparse(node)!r}",
                             hint="use integers, constexpr names and + - * //")


def resolve(text: str, constexprs: Mapping[str, Any], *, arg: str) -> tuple[str, list[int]]:
    """The element type (canonical) and the integer block shape of ``text`` at a launch with ``constexprs``."""
    from triton._utils import type_canonicalisation_dict

    dtype, dims = parse(text)
    canonical = type_canonicalisation_dict.get(dtype)
    if canonical in (None, "void"):
        raise SignatureSpecError(f"argument {arg!r}: unknown element type {dtype!r} in {text!r}",
                                 hint="a scalar type such as fp16, bf16, fp32, fp8e4nv, i8")
    shape = []
    for dim in dims:
        try:
            node = ast.parse(dim, mode="eval").body
        except SyntaxError:
            raise SignatureSpecError(f"argument {arg!r}: cannot read the block dimension {dim!r}") from None
        shape.append(_evaluate(node, constexprs, arg))
    if not 1 <= len(shape) <= 5 or any(d <= 0 or d & (d - 1) for d in shape):
        # TensorDescriptor itself rejects these on the host before any launch.
        raise SignatureSpecError(f"argument {arg!r}: block shape {shape} is not 1 to 5 powers of two, which a "
                                 f"TensorDescriptor requires")
    return canonical, shape


def stand_in(text: str, constexprs: Mapping[str, Any], *, arg: str, tensor: Callable[[str], Any]) -> Any:
    """A ``TensorDescriptor`` that Triton's specializer reads as ``text`` at this launch; ``tensor(dtype)``
    makes its base (the stand-in tensor pointers get)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    dtype, shape = resolve(text, constexprs, arg=arg)
    descriptor = object.__new__(TensorDescriptor)  # no host checks: the base is no tensor
    descriptor.base = tensor(dtype)
    descriptor.shape = [4096] * len(shape)
    descriptor.strides = [4096 ** (len(shape) - 1 - i) for i in range(len(shape))]
    descriptor.block_shape = shape
    descriptor.padding = "zero"
    return descriptor
