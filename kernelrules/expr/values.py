"""Runtime values: their names in messages, size limits, and the safe operators.

Expressions compute with Python's own int, float, bool, str and list, and read
mappings from the environment. The operators here are Python's, guarded so
that no expression can build an integer of more than :data:`MAX_INT_BITS`
bits, a string or list of more than :data:`MAX_SEQUENCE` items, or a complex
number, and so that ``%`` is never string formatting.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, Callable

from .ast import MAX_INT_BITS
from .errors import ExprEvalError

#: Longest string or list an expression may build.
MAX_SEQUENCE = 1_000_000

_SEQUENCES = (str, list, tuple)
_INT_BOUND = 1 << MAX_INT_BITS  # ints must satisfy -_INT_BOUND < x < _INT_BOUND
_SMALL = 1 << (MAX_INT_BITS // 2)  # a product of two such ints stays within the limit


def type_name(value: Any) -> str:
    """The language's name for a value's type, for messages."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "mapping"
    if value is None:
        return "null"
    return type(value).__name__


def check_int(value: Any) -> Any:
    """Return ``value``, or raise if it is an int beyond the size limit."""
    if type(value) is int and value.bit_length() > MAX_INT_BITS:
        raise ExprEvalError(f"integer result is too large (more than {MAX_INT_BITS} bits)")
    return value


def _check_length(length: int) -> None:
    if length > MAX_SEQUENCE:
        raise ExprEvalError(f"result would have {length} items; the limit is {MAX_SEQUENCE}")


def weight(value: Any, limit: int = MAX_SEQUENCE) -> int:
    """Characters of a string, or items of a list counting nested lists and strings.

    Repetition shares references, so ``[[1] * 10**6] * 10**6`` is small in
    memory yet would take 10**12 steps to print or sum; limits on ``*`` and
    ``+`` therefore count nested contents. Stops counting once past ``limit``,
    so the walk itself stays cheap.
    """
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, (list, tuple)):
            total += len(item)
            if total <= limit:
                stack.extend(child for child in item if isinstance(child, (str, list, tuple)))
    return total


# --------------------------------------------------------------------------- arithmetic


def add(a: Any, b: Any) -> Any:
    """``a + b``: numbers, or two strings, or two lists."""
    if type(a) is int and type(b) is int:  # the common case, kept short
        result = a + b
        if -_INT_BOUND < result < _INT_BOUND:
            return result
    if isinstance(a, _SEQUENCES) and isinstance(b, _SEQUENCES):
        _check_length(weight(a) + weight(b))
    return check_int(a + b)


def sub(a: Any, b: Any) -> Any:
    """``a - b`` on numbers."""
    result = a - b
    if type(result) is int and not -_INT_BOUND < result < _INT_BOUND:
        raise ExprEvalError(f"integer result is too large (more than {MAX_INT_BITS} bits)")
    return result


def mul(a: Any, b: Any) -> Any:
    """``a * b``: numbers, or a string/list repeated an int number of times."""
    if type(a) is int and type(b) is int and -_SMALL < a < _SMALL and -_SMALL < b < _SMALL:
        return a * b  # the common case: the product cannot exceed the limit
    if isinstance(a, int) and isinstance(b, int):
        if a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
            raise ExprEvalError(f"integer result is too large (more than {MAX_INT_BITS} bits)")
    elif isinstance(a, _SEQUENCES) and isinstance(b, int):
        _check_length(weight(a) * max(b, 0))
    elif isinstance(b, _SEQUENCES) and isinstance(a, int):
        _check_length(weight(b) * max(a, 0))
    return check_int(a * b)


def truediv(a: Any, b: Any) -> Any:
    """``a / b``: always a float for numbers."""
    return a / b


def floordiv(a: Any, b: Any) -> Any:
    """``a // b``: floor division."""
    return check_int(a // b)


def mod(a: Any, b: Any) -> Any:
    """``a % b`` on numbers only (never string formatting)."""
    if isinstance(a, str):
        raise TypeError("no string formatting")
    return check_int(a % b)


def power(a: Any, b: Any) -> Any:
    """``a ** b`` without huge integers or complex results."""
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        if (abs(a).bit_length() - 1) * b + 1 > MAX_INT_BITS:
            raise ExprEvalError(f"power is too large (more than {MAX_INT_BITS} bits)")
    result = a**b
    if isinstance(result, complex):
        raise ExprEvalError("a negative number raised to a fractional power has no real value")
    return check_int(result)


def contains(a: Any, b: Any) -> bool:
    """``a in b``."""
    return a in b


def not_contains(a: Any, b: Any) -> bool:
    """``a not in b``."""
    return a not in b


def neg(a: Any) -> Any:
    """``-a`` on numbers."""
    if not isinstance(a, (int, float)):
        raise TypeError("bad operand")
    return -a


def pos(a: Any) -> Any:
    """``+a`` on numbers."""
    if not isinstance(a, (int, float)):
        raise TypeError("bad operand")
    return +a


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": add,
    "-": sub,
    "*": mul,
    "/": truediv,
    "//": floordiv,
    "%": mod,
    "**": power,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": contains,
    "not in": not_contains,
}
UNARY: dict[str, Callable[[Any], Any]] = {"-": neg, "+": pos, "not": operator.not_}

#: Python exceptions an operator may raise on bad operands; they become ExprEvalError.
OPERAND_ERRORS = (TypeError, ValueError, ArithmeticError)


def operand_error(op: str, operands: tuple[Any, ...], exc: BaseException) -> ExprEvalError:
    """An ExprEvalError describing why ``op`` failed on ``operands``."""
    if isinstance(exc, ZeroDivisionError):
        words = {"%": "modulo by zero", "**": "zero cannot be raised to a negative power"}
        return ExprEvalError(words.get(op, "division by zero"))
    if isinstance(exc, OverflowError):
        return ExprEvalError(f"result of '{op}' is too large")
    if isinstance(exc, TypeError):
        types = " and ".join(type_name(value) for value in operands)
        return ExprEvalError(f"'{op}' cannot be applied to {types}")
    return ExprEvalError(f"'{op}' failed: {exc}")
