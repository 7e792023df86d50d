"""Labelled guesses for constexpr parameters nobody gave a value, by how the kernel uses them.

A constexpr the kernel tests as a condition (``if FLAG:``, ``x if FLAG else y``,
``not FLAG``, ``FLAG and ...``, ``tl.where(FLAG, ...)``) or whose name says it is a flag
(``IS_*``, ``HAS_*``, ``USE_*``, ...) is guessed ``False``; one passed where ``tl`` wants a
string (``input_precision=P``, ``eviction_policy=E``) that keyword's usual value; a block
size 128; any other integer 16. Defaults, configs, specs and launch literals always come first (the caller
asks only for what none of them gives). A guess that does not compile is retried with
the next plausible value of another type (:func:`alternatives`) before the kernel is
reported as needing a spec.
"""

from __future__ import annotations

import ast
from typing import Any

from ..config import is_block_size_name

#: Name prefixes of boolean flags.
FLAG_PREFIXES = ("IS_", "HAS_", "USE_", "ENABLE_", "EVEN_", "DO_", "APPLY_", "RETURN_", "SAVE_", "WITH_")


def _names_in_test(node: ast.expr) -> set[str]:
    """Names a test uses as truth values: ``A``, ``not A``, ``A and B`` (not ``A == 1``)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _names_in_test(node.operand)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_names_in_test(v) for v in node.values))
    return set()


def condition_names(func: ast.FunctionDef) -> set[str]:
    """Names ``func`` uses as conditions: ``if``/``while``/ternary tests, boolean operands, ``where``'s first argument."""
    found: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            found |= _names_in_test(node.test)
        elif isinstance(node, (ast.BoolOp, ast.UnaryOp)):
            found |= _names_in_test(node)
        elif isinstance(node, ast.Call) and node.args:
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee == "where":
                found |= _names_in_test(node.args[0])
    return found


def is_flag(name: str, annotation: str | None = None, conditions: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a constexpr is a boolean flag: used as a condition, named like one, or annotated ``bool``."""
    return (name in conditions or name.upper().startswith(FLAG_PREFIXES)
            or (annotation or "").replace(" ", "") in ("bool", "tl.constexpr[bool]"))


#: The guess for a constexpr named like a dtype (``input_dtype``, ``OUT_DTYPE``), then its alternatives.
DTYPE_GUESSES = ("tl.float32", "tl.bfloat16", "tl.float16")


def is_dtype_name(name: str) -> bool:
    """``input_dtype``, ``OUT_DTYPE``, ``dtype``: a constexpr that holds a ``tl.dtype``."""
    return "dtype" in name.lower()


#: Keyword arguments of ``tl`` calls that take a string, and the guess for a constexpr passed to one
#: (``sem``/``scope`` of the atomics: their defaults, ``acq_rel`` and ``gpu``).
STRING_KEYWORDS = {"input_precision": "tf32", "eviction_policy": "", "cache_modifier": "", "padding_option": "",
                   "sem": "acq_rel", "scope": "gpu"}
#: ``tl`` calls that take a message string at a position (``tl.device_assert(cond, MSG)``), and its guess.
STRING_POSITIONS = {"device_assert": 1}
MESSAGE_GUESS = "guessed message"
#: Other strings to try when a string guess does not compile.
STRING_ALTERNATIVES = {"tf32": ["ieee", "tf32x3"], "": ["evict_last", "evict_first"], "acq_rel": ["relaxed"]}


def string_names(func: ast.FunctionDef) -> dict[str, str]:
    """Names ``func`` passes where ``tl`` wants a string (``input_precision=DOT_PRECISION``,
    ``sem=SEM``, ``tl.device_assert(c, MESSAGE)``), with the guess."""
    found: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in STRING_KEYWORDS and isinstance(kw.value, ast.Name):
                    found.setdefault(kw.value.id, STRING_KEYWORDS[kw.arg])
                elif kw.arg == "msg" and isinstance(kw.value, ast.Name):
                    found.setdefault(kw.value.id, MESSAGE_GUESS)
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            position = STRING_POSITIONS.get(callee)
            if position is not None and len(node.args) > position and isinstance(node.args[position], ast.Name):
                found.setdefault(node.args[position].id, MESSAGE_GUESS)
    return found


def guess(name: str, *, flag: bool = False) -> Any:
    """The first guess: ``False`` for a flag, ``"tl.float32"`` for a dtype, 128 for a block size, 16 for
    any other integer (a dtype is written ``"tl.<name>"``; :func:`kernelrules.compile.specialize.dtype_constexpr`)."""
    if flag or name.upper().startswith(FLAG_PREFIXES):
        return False
    if is_dtype_name(name):
        return DTYPE_GUESSES[0]
    if is_block_size_name(name):
        return 128
    return 16


def alternatives(value: Any) -> list[Any]:
    """Values to try, in order, when ``value`` was guessed and does not compile: the other types first."""
    if value in DTYPE_GUESSES:
        return [v for v in DTYPE_GUESSES if v != value] + [16]
    if isinstance(value, bool):
        return [True, 16] if value is False else [False, 16]
    if isinstance(value, str) and value in STRING_ALTERNATIVES:
        return list(STRING_ALTERNATIVES[value])
    if value == 128:
        return [64, False, 4096]
    return [False, True, 1, 128, 4096]
