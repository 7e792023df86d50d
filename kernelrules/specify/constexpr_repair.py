"""Other constexpr guesses to try after a failed probe compile: from the kernel's body and the error.

The guess search (:mod:`kernelrules.specify.guess_search`) asks :func:`propose` for changes of
the guessed constexprs when the first config does not compile. Each proposal is read from
the kernel, never from its package's name:

- **uses** (:class:`~kernelrules.specify.constexpr_constraints.KernelFacts`): a name the body
  uses as a dtype (``x.to(OUT)``, ``dtype=ACC``, ``D.primitive_bitwidth``) gets a dtype by its
  name (``FP8_DTYPE`` → ``tl.float8e4nv``, ``INDEX_TY`` → ``tl.int32``, else ``tl.float32``); a
  name it indexes or takes ``len()`` of gets a tuple long enough (``T[5]``: six values);
- **constraints**: assignments :func:`~kernelrules.specify.constexpr_constraints.solve`
  finds for the kernel's static asserts, ``raise`` branches and ``tl.arange`` bounds, on every
  config at once;
- **the error**: ``Cannot make_shape_compatible ... 128 and 16`` (or ``Cannot broadcast``): the
  guesses equal to one size set to the other; ``numel (N) exceeds ...``: guesses above 16
  brought down to 16; ``Cannot bitcast data-type of size 32 to ... size 8``: a dtype guess of
  one size replaced by one of the other.

Pure: the caller probes. :data:`MAX_PROPOSALS` bounds one call.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from .constexpr_constraints import KernelFacts
from .constexpr_solve import solve

#: Proposals one :func:`propose` call returns, at most.
MAX_PROPOSALS = 4

#: Name fragments that say which dtype a dtype constexpr holds, checked in order.
DTYPE_BY_NAME = (
    (("E5M2",), "tl.float8e5"),
    (("FP8", "F8", "E4M3", "FLOAT8"), "tl.float8e4nv"),
    (("BF16", "BFLOAT"), "tl.bfloat16"),
    (("FP16", "HALF", "F16"), "tl.float16"),
    (("UINT8", "U8"), "tl.uint8"),
    (("INT8", "I8"), "tl.int8"),
    (("INT64", "I64"), "tl.int64"),
    (("INDEX", "IDX", "INT32", "I32", "INT"), "tl.int32"),
    (("FP64", "DOUBLE", "F64"), "tl.float64"),
)
#: Dtypes of each size in bits, in the order tried.
DTYPES_BY_SIZE = {
    8: ("tl.float8e4nv", "tl.int8", "tl.uint8", "tl.float8e5"),
    16: ("tl.bfloat16", "tl.float16", "tl.int16"),
    32: ("tl.float32", "tl.int32"),
    64: ("tl.float64", "tl.int64"),
}
#: The guessed value of one element of a tuple constexpr (its length comes from its uses).
TUPLE_ELEMENT = 16

_SHAPES = re.compile(r"incompatible dimensions at index \d+: (\d+) and (\d+)"
                     r"|expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\)")
_NUMEL = re.compile(r"numel \((\d+)\) exceeds triton maximum tensor numel")
_BITCAST = re.compile(r"Cannot bitcast data-type of size (\d+) to data-type of size (\d+)")


def dtype_for_name(name: str) -> str:
    """The dtype a dtype constexpr's name points at (``FP8_DTYPE``: ``tl.float8e4nv``), else ``tl.float32``."""
    upper = name.upper()
    for fragments, dtype in DTYPE_BY_NAME:
        if any(f in upper for f in fragments):
            return dtype
    return "tl.float32"


def dtype_size(value: Any) -> int | None:
    """The size in bits of a dtype guess written ``"tl.<name>"`` (None for anything else)."""
    for size, names in DTYPES_BY_SIZE.items():
        if value in names:
            return size
    return None


def use_fixes(facts: KernelFacts, values: Mapping[str, Any], guessed: Sequence[str]) -> dict[str, Any]:
    """Guesses the body's uses rule out, replaced: dtypes and tuples. Empty when every guess fits its use."""
    change: dict[str, Any] = {}
    for name in guessed:
        value = values.get(name)
        if name in facts.dtypes:
            wanted = dtype_for_name(name)
            is_dtype = isinstance(value, str) and value.startswith("tl.")
            if not is_dtype or (value == "tl.float32" and wanted != value):  # tl.float32 was the blind guess
                change[name] = wanted
        elif name in facts.tuples and not isinstance(value, tuple):
            change[name] = (TUPLE_ELEMENT,) * max(facts.tuples[name], 2)
    return change


def from_error(message: str, values: Mapping[str, Any], guessed: Sequence[str]) -> list[dict[str, Any]]:
    """Changes of the guessed ints or dtypes that the compile error ``message`` points at."""
    ints = {n: values[n] for n in guessed if type(values.get(n)) is int}
    found: list[dict[str, Any]] = []
    shapes = _SHAPES.search(message or "")
    if shapes:
        a, b = (int(g) for g in shapes.groups() if g is not None)
        found += [{n: b for n, v in ints.items() if v == a}, {n: a for n, v in ints.items() if v == b}]
    if _NUMEL.search(message or ""):
        found += [{n: 16 for n, v in ints.items() if v > 16}, {n: 4 for n, v in ints.items() if v > 4}]
    bitcast = _BITCAST.search(message or "")
    if bitcast:
        sizes = {int(bitcast.group(1)), int(bitcast.group(2))}
        for name in guessed:
            size = dtype_size(values.get(name))
            for other in sizes - {size} if size in sizes else ():
                found += [{name: dtype} for dtype in DTYPES_BY_SIZE.get(other, ())[:2]]
    return [change for change in found if change]


def propose(facts: KernelFacts, message: str, configs: Sequence[Mapping[str, Any]],
            guessed: Sequence[str]) -> list[dict[str, Any]]:
    """Changes of the ``guessed`` constexprs to probe, most principled first, at most :data:`MAX_PROPOSALS`.

    ``configs``: each config's constexpr values (the first is the one probed) with the current
    guesses; ``message``: the compile error of the last probe.
    """
    if not configs:
        return []
    first = configs[0]
    base = use_fixes(facts, first, guessed)
    proposals: list[dict[str, Any]] = [base] if base else []
    fixed_configs = [{**c, **base} for c in configs]
    solved = _solve_all(facts, fixed_configs, guessed)
    proposals += [{**base, **s} for s in solved]
    proposals += [{**base, **c} for c in from_error(message, {**first, **base}, guessed)]
    unique: list[dict[str, Any]] = []
    for change in proposals:
        if change and change not in unique and any(first.get(k) != v for k, v in change.items()):
            unique.append(change)
    return unique[:MAX_PROPOSALS]


def _solve_all(facts: KernelFacts, configs: Sequence[Mapping[str, Any]], guessed: Sequence[str]) -> list[dict]:
    """Solutions of the constraints that hold in every config, else those of the first config alone."""
    return (len(configs) > 1 and solve(facts, configs[0], guessed, others=configs[1:])) \
        or solve(facts, configs[0], guessed)


def proposer(kernel: Any, configs: Sequence[Mapping[str, Any]], guessed: Sequence[str]) -> Any:
    """``propose(message, change)`` for the guess search: :func:`propose` on ``kernel``'s facts (read
    once, on the first call) with ``change`` applied to every config's values."""
    cache: dict[str, KernelFacts] = {}

    def run(message: str, change: Mapping[str, Any]) -> list[dict[str, Any]]:
        if "facts" not in cache:
            cache["facts"] = kernel_facts(kernel)
        return propose(cache["facts"], message, [{**c, **change} for c in configs], guessed)
    return run


def kernel_facts(kernel: Any) -> KernelFacts:
    """The constraints and uses of ``kernel`` and the jit helpers it calls, in its module or imported
    from another module of its package (empty when the source cannot be read)."""
    from ..discover.kernels import ParsedModule, cached_module
    from .constexpr_constraints import read_constraints
    from .kernelspec import kernel_function

    func = kernel_function(kernel)
    module = cached_module(kernel.path)
    if func is None or not isinstance(module, ParsedModule):
        return KernelFacts()

    def find(name: str, where: Any) -> tuple | None:
        here = where if isinstance(where, ParsedModule) else module
        if name in here.jit_functions:
            return here.jit_functions[name], here.constants, here
        source = here.import_sources.get(name)
        other = cached_module(source[0]) if source else None
        if isinstance(other, ParsedModule) and source[1] in other.jit_functions:
            return other.jit_functions[source[1]], other.constants, other
        return None
    return read_constraints(func, find, module.constants)
