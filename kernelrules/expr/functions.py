"""The pure functions expressions may call, in one registry.

To add a function, decorate its implementation with :func:`function`; the
checker reads arity from the registry and the compiler calls ``impl``.
Implementations raise :class:`ExprEvalError` for bad input (the compiler adds
the position); a stray ``TypeError``/``ValueError``/``ArithmeticError`` is
also turned into one by the compiler, but an explicit message is kinder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .errors import ExprEvalError
from .values import MAX_SEQUENCE, check_int, type_name, weight


@dataclass(frozen=True)
class Function:
    """A registered function: how many arguments it takes and what it does."""

    name: str
    impl: Callable[..., Any]
    min_args: int
    max_args: int | None  # None: any number
    signature: str
    doc: str
    pure: bool = True  # pure functions of constant arguments are folded at compile time

    def arity_error(self, count: int) -> str | None:
        """A message if ``count`` arguments are wrong for this function, else None."""
        if count < self.min_args or (self.max_args is not None and count > self.max_args):
            plural = "" if self.max_args == 1 else "s"
            return f"{self.signature} takes {self._arity_words()} argument{plural}, got {count}"
        return None

    def _arity_words(self) -> str:
        if self.max_args is None:
            return f"at least {self.min_args}"
        if self.min_args == self.max_args:
            return str(self.min_args)
        return f"{self.min_args} to {self.max_args}"


_MAX_ROUND_DIGITS = 1000
_MAX_SCAN = 10_000_000  # comparisons a quadratic list operation may make
_MAX_NESTED_TEXT = 10_000  # items of a list or mapping that join() will turn into text

#: name -> Function; extend with :func:`function`.
FUNCTIONS: dict[str, Function] = {}


def function(
    name: str, min_args: int, max_args: int | None = -1, *, signature: str, pure: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated implementation as ``name``; ``max_args=-1`` means exactly ``min_args``."""

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        upper = min_args if max_args == -1 else max_args
        doc = (impl.__doc__ or "").strip().splitlines()[0] if impl.__doc__ else ""
        FUNCTIONS[name] = Function(name, impl, min_args, upper, signature, doc, pure)
        return impl

    return register


# --------------------------------------------------------------------------- argument helpers


def _is_number(value: Any) -> bool:
    """int or float, but not bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any, fn: str) -> int | float:
    """Return ``value`` if it is a number (bools count, as in Python arithmetic)."""
    if isinstance(value, (int, float)):
        return value
    raise ExprEvalError(f"{fn}() needs a number, got {type_name(value)}")


def _positive(value: Any, fn: str) -> int | float:
    """Return ``value`` if it is a positive, finite, non-bool number."""
    if not _is_number(value) or not value > 0 or (isinstance(value, float) and math.isinf(value)):
        raise ExprEvalError(f"{fn}() needs a positive number, got {_show(value)}")
    return value


def _sequence(value: Any, fn: str) -> Sequence[Any]:
    """Return ``value`` if it is a list (or tuple)."""
    if isinstance(value, (list, tuple)):
        return value
    raise ExprEvalError(f"{fn}() needs a list, got {type_name(value)}")


def _mapping(value: Any, fn: str) -> Mapping[Any, Any]:
    if type(value) is dict or isinstance(value, Mapping):  # a plain dict skips the ABC check
        return value
    raise ExprEvalError(f"{fn}() needs a mapping, got {type_name(value)}")


def _show(value: Any) -> str:
    """A short rendering of a value for messages."""
    text = repr(value) if not isinstance(value, bool) else str(value).lower()
    return text if len(text) <= 40 else text[:37] + "..."


def _sorted_keys(keys: Any) -> list[Any]:
    """Keys in natural order, or by their text when they do not compare."""
    keys = list(keys)
    if len(keys) < 2:  # nothing to order (the common case: no offending key)
        return keys
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=repr)


# --------------------------------------------------------------------------- numbers


@function("min", 1, None, signature="min(a, b, ...)")
def _min(*args: Any) -> Any:
    """Smallest argument, or smallest item of one list argument."""
    return _extreme(min, "min", args)


@function("max", 1, None, signature="max(a, b, ...)")
def _max(*args: Any) -> Any:
    """Largest argument, or largest item of one list argument."""
    return _extreme(max, "max", args)


def _extreme(pick: Callable[..., Any], fn: str, args: tuple[Any, ...]) -> Any:
    items = _sequence(args[0], fn) if len(args) == 1 else args
    if not items:
        raise ExprEvalError(f"{fn}() of an empty list")
    try:
        return pick(items)
    except TypeError:
        raise ExprEvalError(f"{fn}() cannot compare {', '.join(sorted({type_name(v) for v in items}))}") from None


@function("abs", 1, signature="abs(x)")
def _abs(x: Any) -> int | float:
    """Absolute value."""
    return abs(_number(x, "abs"))


@function("ceil", 1, signature="ceil(x)")
def _ceil(x: Any) -> int:
    """Smallest integer >= x (an int)."""
    return check_int(math.ceil(_number(x, "ceil")))


@function("floor", 1, signature="floor(x)")
def _floor(x: Any) -> int:
    """Largest integer <= x (an int)."""
    return check_int(math.floor(_number(x, "floor")))


@function("round", 1, 2, signature="round(x, ndigits)")
def _round(x: Any, ndigits: Any = None) -> int | float:
    """Round half to even (Python's rule): to an int, or to ndigits decimals."""
    x = _number(x, "round")
    if ndigits is None:
        return check_int(round(x))
    if not isinstance(ndigits, int) or isinstance(ndigits, bool):
        raise ExprEvalError(f"round() needs an int number of digits, got {type_name(ndigits)}")
    if abs(ndigits) > _MAX_ROUND_DIGITS:  # int rounding computes 10**-ndigits
        raise ExprEvalError(f"round() takes at most {_MAX_ROUND_DIGITS} digits either way, got {ndigits}")
    return round(x, ndigits)


@function("log2", 1, signature="log2(x)")
def _log2(x: Any) -> float:
    """Base-2 logarithm (a float); x must be positive."""
    x = _number(x, "log2")
    if not x > 0:
        raise ExprEvalError(f"log2() needs a positive number, got {_show(x)}")
    return math.log2(x)


@function("is_pow2", 1, signature="is_pow2(x)")
def _is_pow2(x: Any) -> bool:
    """True for a positive power of two (int, or float with an integral value); never fails."""
    if isinstance(x, float) and math.isfinite(x) and x.is_integer():
        x = int(x)
    return type(x) is int and x > 0 and x & (x - 1) == 0


@function("floor_pow2", 1, signature="floor_pow2(x)")
def _floor_pow2(x: Any) -> int | float:
    """Largest power of two <= x (an int when x >= 1); x must be positive."""
    x = _positive(x, "floor_pow2")
    if isinstance(x, int):
        return 1 << (x.bit_length() - 1)
    _, exponent = math.frexp(x)  # x = m * 2**exponent, 0.5 <= m < 1
    return _power_of_two(exponent - 1)


@function("ceil_pow2", 1, signature="ceil_pow2(x)")
def _ceil_pow2(x: Any) -> int | float:
    """Smallest power of two >= x (an int when x > 0.5); x must be positive."""
    x = _positive(x, "ceil_pow2")
    if isinstance(x, int):
        return check_int(1 << (x - 1).bit_length())
    mantissa, exponent = math.frexp(x)
    return _power_of_two(exponent - 1 if mantissa == 0.5 else exponent)


def _power_of_two(exponent: int) -> int | float:
    """2**exponent: an int for exponent >= 0, else a float."""
    return check_int(1 << exponent) if exponent >= 0 else math.ldexp(1.0, exponent)


@function("cdiv", 2, signature="cdiv(a, b)")
def _cdiv(a: Any, b: Any) -> int:
    """Ceiling division of ints: the number of b-sized blocks that cover a."""
    for arg in (a, b):
        if not isinstance(arg, int) or isinstance(arg, bool):
            raise ExprEvalError(f"cdiv() needs ints, got {type_name(arg)}")
    if b == 0:
        raise ExprEvalError("cdiv() by zero")
    return -(-a // b)


@function("clamp", 3, signature="clamp(x, lo, hi)")
def _clamp(x: Any, lo: Any, hi: Any) -> int | float:
    """x limited to the range [lo, hi]."""
    x, lo, hi = (_number(v, "clamp") for v in (x, lo, hi))
    if lo > hi:
        raise ExprEvalError(f"clamp() needs lo <= hi, got {_show(lo)} > {_show(hi)}")
    return min(max(x, lo), hi)


# --------------------------------------------------------------------------- collections


@function("len", 1, signature="len(x)")
def _len(x: Any) -> int:
    """Number of items of a list or mapping, or characters of a string."""
    if isinstance(x, (str, list, tuple, dict, Mapping)):
        return len(x)
    raise ExprEvalError(f"len() needs a list, mapping or string, got {type_name(x)}")


@function("sum", 1, signature="sum(list)")
def _sum(items: Any) -> int | float:
    """Sum of a list of numbers (booleans count as 0/1)."""
    items = _sequence(items, "sum")
    total: int | float = 0
    for item in items:
        total = check_int(total + _number(item, "sum"))
    return total


@function("any", 1, signature="any(list)")
def _any(items: Any) -> bool:
    """Whether some item of the list is true."""
    return any(_sequence(items, "any"))


@function("all", 1, signature="all(list)")
def _all(items: Any) -> bool:
    """Whether every item of the list is true (true for an empty list)."""
    return all(_sequence(items, "all"))


@function("keys", 1, signature="keys(mapping)")
def _keys(mapping: Any) -> list[Any]:
    """Sorted list of a mapping's keys."""
    keys = list(mapping if type(mapping) is dict else _mapping(mapping, "keys"))
    return keys if len(keys) < 2 else _sorted_keys(keys)


@function("non_pow2", 1, signature="non_pow2(mapping)")
def _non_pow2(mapping: Any) -> list[Any]:
    """Sorted keys of a mapping whose values are not powers of two."""
    if type(mapping) is not dict:
        mapping = _mapping(mapping, "non_pow2")
    found = []
    for key, value in mapping.items():  # an int is checked here, anything else by is_pow2()
        if not (type(value) is int and value > 0 and value & (value - 1) == 0) and not _is_pow2(value):
            found.append(key)
    return found if len(found) < 2 else _sorted_keys(found)


@function("without", 2, signature="without(list, other)")
def _without(items: Any, other: Any) -> list[Any]:
    """Items of the list that are not in other, in order."""
    items, other = _sequence(items, "without"), _sequence(other, "without")
    member = _membership(items, other, "without")
    return [item for item in items if not member(item)]


@function("intersect", 2, signature="intersect(list, other)")
def _intersect(items: Any, other: Any) -> list[Any]:
    """Items of the list that are also in other, in order."""
    items, other = _sequence(items, "intersect"), _sequence(other, "intersect")
    member = _membership(items, other, "intersect")
    return [item for item in items if member(item)]


def _membership(items: Sequence[Any], other: Sequence[Any], fn: str) -> Callable[[Any], bool]:
    """A fast ``item in other`` test: a set lookup, or a bounded scan for unhashable items."""
    try:
        members = frozenset(other)
    except TypeError:
        if len(items) * len(other) > _MAX_SCAN:
            raise ExprEvalError(f"{fn}() would compare {len(items)} x {len(other)} items") from None
        return other.__contains__

    def member(item: Any) -> bool:
        try:
            return item in members
        except TypeError:  # an unhashable item: compare by ==, as a list would
            return item in other

    return member


@function("join", 1, 2, signature='join(list, sep=", ")')
def _join(items: Any, sep: Any = ", ") -> str:
    """The items' str() joined with sep (default ", ")."""
    items = _sequence(items, "join")
    if not isinstance(sep, str):
        raise ExprEvalError(f"join() needs a string separator, got {type_name(sep)}")
    pieces, length = [], 0
    for item in items:  # convert one at a time: the text of an item can dwarf its item count
        contents = list(item.items()) if isinstance(item, Mapping) else item
        if isinstance(contents, (list, tuple)) and weight(contents) > _MAX_NESTED_TEXT:
            raise ExprEvalError(f"join() of a list holding more than {_MAX_NESTED_TEXT} items")
        pieces.append(str(item))
        length += len(pieces[-1]) + len(sep)
        if length > MAX_SEQUENCE + len(sep):
            raise ExprEvalError(f"join() result is longer than {MAX_SEQUENCE} characters")
    return sep.join(pieces)
