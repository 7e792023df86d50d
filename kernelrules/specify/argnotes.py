"""Argument types a kernel's source states outright: type comments and tensor-descriptor uses.

* :func:`comment_types`: a type written in a parameter's trailing comment
  (``k,  # *f32 [B, T, H, D]``), as several packages document their kernels;
* :func:`descriptor_params`: parameters the body uses as tensor descriptors (``desc.load([m, k])``).

Only ``ast`` is read; nothing of the user's module runs.
"""

from __future__ import annotations

import ast
import re


# --------------------------------------------------------------------------- type comments

_COMMENT_TYPES = {"f32": "fp32", "fp32": "fp32", "float32": "fp32", "float": "fp32", "f16": "fp16",
                  "fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "bfloat16": "bf16",
                  "f64": "fp64", "fp64": "fp64", "i32": "i32", "int32": "i32", "i64": "i64", "int64": "i64",
                  "i8": "i8", "int8": "i8", "u8": "u8", "uint8": "u8", "i16": "i16", "int16": "i16",
                  "fp8": "fp8e4nv", "f8": "fp8e4nv", "fp8e4nv": "fp8e4nv", "fp8e5": "fp8e5"}
#: ``# *f32 [B, T]``, ``# *i32``, ``# int64[N] sizes``: a dtype after a star, or before a shape.
_POINTER_COMMENT = re.compile(r"#\s*(?:\*\s*([A-Za-z0-9]+)\b|([A-Za-z0-9]+)\s*\[)")


def comment_types(source_lines: list[str], func: ast.FunctionDef) -> dict[str, str]:
    """Pointer types written after a parameter on its own line: ``k,  # *f32 [B, T, H, D]`` -> ``*fp32``,
    ``sizes_ptr,  # int64[N] sizes`` -> ``*i64``.

    Only a line that holds exactly one parameter counts, so the comment is that parameter's.
    """
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    per_line: dict[int, list[ast.arg]] = {}
    for arg in args:
        per_line.setdefault(arg.lineno, []).append(arg)
    found: dict[str, str] = {}
    for line, on_line in per_line.items():
        if len(on_line) != 1 or not 0 < line <= len(source_lines):
            continue
        match = _POINTER_COMMENT.search(source_lines[line - 1])
        word = (match.group(1) or match.group(2)).lower() if match else ""
        if word in _COMMENT_TYPES:
            found[on_line[0].arg] = "*" + _COMMENT_TYPES[word]
    return found


# --------------------------------------------------------------------------- tensor descriptors

#: Methods of a ``tl.tensor_descriptor`` argument (a host ``TensorDescriptor`` at launch).
_DESCRIPTOR_METHODS = ("load", "store", "gather", "scatter", "atomic_add", "atomic_min", "atomic_max",
                       "atomic_and", "atomic_or", "atomic_xor")


def descriptor_params(func: ast.FunctionDef) -> set[str]:
    """Parameters the body uses as tensor descriptors: ``desc.load([m, k])``, ``desc.store(...)``."""
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    return {node.func.value.id for node in ast.walk(func)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _DESCRIPTOR_METHODS and isinstance(node.func.value, ast.Name)
            and node.func.value.id in params}
