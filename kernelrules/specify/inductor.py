"""Launch signatures of torch.compile (Inductor) kernels, read from the generated code.

Inductor decorates each kernel it writes with its launch metadata::

    @triton_heuristics.pointwise(
        size_hints={'x': 1024}, filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'},
                     'device': DeviceProperties(type='cuda', index=0, cc=90, ...),
                     'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]]}]},
        inductor_meta={...})
    @triton.jit
    def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr): ...

This module reads that decorator with :mod:`ast`, never running the file, both where
the kernel is a top-level function (a kernel file of Inductor's cache) and where its
source is the string of ``async_compile.triton('name', '''...''')`` in an
``output_code.py``. Literals are evaluated with :func:`ast.literal_eval`; calls such as
``DeviceProperties(...)``, ``AttrsDescriptor(...)``, ``AttrsDescriptor.from_dict(...)``
and ``instance_descriptor(...)`` are kept as :class:`CallValue` and read by structure.

The spec-format signature keeps pointer and scalar types; ``*numel`` arguments get their
size hint as value, adjusted to keep the launch's specialisation: rounded up to a
multiple of 16 when the argument has ``tt.divisibility`` 16, moved off a multiple of 16
(``1024`` -> ``1023``) when it has not, and 1 when it is ``tt.equal_to`` 1.
"""

from __future__ import annotations

import ast
import re
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import KernelrulesError
from ..discover.pysource import read_python

#: Value given to a divisible integer without a size hint (as signatures.DEFAULT_INT).
DIVISIBLE_DEFAULT = 4096

#: ``triton_heuristics`` decorators Inductor writes; the name is the kernel type.
HEURISTICS = frozenset({"pointwise", "reduction", "persistent_reduction", "cooperative_reduction", "template",
                        "foreach", "split_scan", "user_autotune", "fixed_config", "tma_reduction"})

#: Decorator keywords that are not hints.
_NOT_HINTS = frozenset({"size_hints", "triton_meta", "inductor_meta", "filename"})


class InductorOutputError(KernelrulesError):
    """An Inductor output file cannot be read or its kernel metadata is malformed."""


@dataclass(frozen=True)
class CallValue:
    """A call in decorator metadata, kept by structure: ``DeviceProperties(type='cuda', cc=90)``."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class InductorKernelInfo:
    """What an Inductor kernel's decorator says about its launch.

    ``signature`` is spec-format (``docs/prune.md``); ``size_hints`` maps a prefix
    (``x``, ``y``, ``r0_``; older output: ``r``) to its hint; ``kernel_type`` is the
    heuristic (``pointwise``, ``reduction``, ``persistent_reduction``, ``template``, ...);
    ``constants`` the arguments Inductor made constant. ``hints`` holds the other
    decorator keywords (``reduction_hint``, ``tile_hint``, ``num_warps`` of a template,
    ``config`` of a fixed config), ``device`` the ``DeviceProperties`` keywords.
    """

    signature: dict[str, Any]
    size_hints: dict[str, int]
    kernel_type: str
    constants: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    line: int | None = None
    device: dict[str, Any] = field(default_factory=dict)
    divisible_by_16: tuple[str, ...] = ()
    equal_to_1: tuple[str, ...] = ()
    hints: dict[str, Any] = field(default_factory=dict)
    inductor_meta: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- structural literals


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def literal(node: ast.expr) -> Any:
    """Evaluate metadata: literals as values, calls as :class:`CallValue`, names as their dotted text.

    ``ReductionHint.INNER`` becomes ``"ReductionHint.INNER"``; ``__file__`` becomes
    ``"__file__"``. Raises ValueError on anything else (comprehensions, operators on names).
    """
    if isinstance(node, ast.Call):
        name = _dotted(node.func)
        if name is None:
            raise ValueError("call of a non-name")
        kwargs = {kw.arg: literal(kw.value) for kw in node.keywords if kw.arg is not None}
        return CallValue(name, tuple(literal(a) for a in node.args), kwargs)
    if isinstance(node, ast.Dict):
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [literal(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = _dotted(node)
        if dotted is None:
            raise ValueError("attribute of a non-name")
        return dotted
    return ast.literal_eval(node)


# --------------------------------------------------------------------------- finding kernels


def _parse(source: str, path: Path) -> ast.Module:
    """Parse ``source``; a syntax error names the file and line."""
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InductorOutputError(f"not valid Python: {exc.msg}", path=str(path), line=exc.lineno) from exc


def embedded_sources(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """``(source, first line)`` of each ``async_compile.triton('name', '''source''')`` in ``tree``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not (_dotted(node.func) or "").endswith("async_compile.triton"):
            continue
        texts = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(texts) >= 2:
            yield texts[1].value, texts[1].lineno


def kernel_functions(path: Path, source: str) -> Iterator[tuple[ast.FunctionDef, int]]:
    """Top-level functions of ``source`` and of its embedded kernel sources, with line offsets."""
    tree = _parse(source, path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node, 0
    for text, first_line in embedded_sources(tree):
        try:
            inner = ast.parse(text)
        except SyntaxError:
            continue
        for node in inner.body:
            if isinstance(node, ast.FunctionDef):
                yield node, first_line - 1


def heuristics_decorator(func: ast.FunctionDef) -> ast.Call | None:
    """The ``@triton_heuristics.<kind>(...)`` decorator of ``func``, if it has one."""
    for decorator in func.decorator_list:
        if isinstance(decorator, ast.Call):
            name = _dotted(decorator.func) or ""
            if name.split(".")[-1] in HEURISTICS and (name.startswith("triton_heuristics.") or "." not in name):
                return decorator
    return None


# --------------------------------------------------------------------------- reading metadata


def _keywords(path: Path, decorator: ast.Call) -> dict[str, Any]:
    """The decorator's keyword arguments, evaluated; a non-literal names the file and line."""
    values: dict[str, Any] = {}
    for kw in decorator.keywords:
        if kw.arg is None:
            continue
        try:
            values[kw.arg] = literal(kw.value)
        except (ValueError, SyntaxError, TypeError) as exc:
            raise InductorOutputError(f"'{kw.arg}' of the Inductor decorator is not literal metadata: {exc}",
                                      path=str(path), line=kw.value.lineno) from exc
    return values


def _indices(value: Any) -> list[int]:
    """Argument indices from ``(0, 1)``, ``[(0,), (1,)]`` or None."""
    out: list[int] = []
    for item in value or ():
        if isinstance(item, int):
            out.append(item)
        elif isinstance(item, (tuple, list)) and item and isinstance(item[0], int):
            out.append(item[0])
    return out


def attribute_indices(configs: Any) -> tuple[set[int], set[int]]:
    """(divisible by 16, equal to 1) argument indices from ``triton_meta['configs']``.

    Understands ``{(0,): [['tt.divisibility', 16]]}``, ``AttrsDescriptor(divisible_by_16=...,
    equal_to_1=...)`` (and ``instance_descriptor``), and ``AttrsDescriptor.from_dict({'arg_properties':
    {'tt.divisibility': (...), 'tt.equal_to': (...)}})``.
    """
    divisible: set[int] = set()
    equal_one: set[int] = set()
    for config in configs if isinstance(configs, (list, tuple)) else [configs]:
        if isinstance(config, dict):
            for key, attrs in config.items():
                index = _indices([key])
                for attr in attrs if isinstance(attrs, (list, tuple)) else ():
                    if index and isinstance(attr, (list, tuple)) and len(attr) == 2:
                        if attr[0] == "tt.divisibility" and attr[1] == 16:
                            divisible.add(index[0])
                        elif attr[0] == "tt.equal_to" and attr[1] == 1:
                            equal_one.add(index[0])
        elif isinstance(config, CallValue) and config.name.endswith("from_dict") and config.args:
            properties = config.args[0].get("arg_properties", {}) if isinstance(config.args[0], dict) else {}
            divisible |= set(_indices(properties.get("tt.divisibility")))
            equal_one |= set(_indices(properties.get("tt.equal_to")))
        elif isinstance(config, CallValue):
            divisible |= set(_indices(config.kwargs.get("divisible_by_16")))
            equal_one |= set(_indices(config.kwargs.get("equal_to_1")))
    return divisible, equal_one


def numel_prefix(name: str) -> str | None:
    """``x`` for ``xnumel``, ``r0_`` for ``r0_numel``; None for other names."""
    return name[: -len("numel")] if name.endswith("numel") and len(name) > len("numel") else None


def size_hints_of(value: Any, arg_types: Mapping[str, str]) -> dict[str, int]:
    """Size hints as ``{prefix: hint}``; an older list is matched to the numel arguments in order."""
    if isinstance(value, dict):
        return {str(k): int(v) for k, v in value.items() if isinstance(v, int)}
    if isinstance(value, (list, tuple)):
        prefixes = [p for p in (numel_prefix(name) for name in arg_types) if p is not None]
        return {prefix: int(hint) for prefix, hint in zip(prefixes, value) if isinstance(hint, int)}
    return {}


def numel_value(hint: int, divisible: bool) -> int:
    """A numel for lint: the size hint, kept on the same side of divisibility by 16."""
    if divisible:
        return max(16, -(-hint // 16) * 16)
    if hint > 1 and hint % 16 == 0:
        return hint - 1
    return hint


def spec_value(name: str, arg_type: str, hints: Mapping[str, int], divisible: bool, equal_one: bool) -> Any:
    """The spec value of one argument from its Inductor type and attributes."""
    if equal_one:
        return 1
    if arg_type.startswith("*") or arg_type[:1] not in ("i", "u"):
        return arg_type
    prefix = numel_prefix(name)
    if prefix is not None and prefix in hints:
        return numel_value(hints[prefix], divisible)
    return DIVISIBLE_DEFAULT if divisible else arg_type


def _named_types(func: ast.FunctionDef, signature: Mapping[Any, Any]) -> dict[str, str]:
    """``{name: type}``; older output keys the signature by argument index, named here from the ``def``."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    named: dict[str, str] = {}
    for key, value in signature.items():
        if isinstance(key, int) and 0 <= key < len(params):
            named[params[key]] = str(value)
        else:
            named[str(key)] = str(value)
    return named


def read_kernel_info(path: Path, func: ast.FunctionDef, offset: int, decorator: ast.Call) -> InductorKernelInfo:
    """Read one decorated kernel into :class:`InductorKernelInfo`."""
    keywords = _keywords(path, decorator)
    meta = keywords.get("triton_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("signature"), dict):
        raise InductorOutputError(f"kernel {func.name} has no triton_meta['signature'] mapping", path=str(path),
                                  line=decorator.lineno + offset)
    arg_types = _named_types(func, meta["signature"])
    constants = meta.get("constants") if isinstance(meta.get("constants"), dict) else {}
    hints = size_hints_of(keywords.get("size_hints"), arg_types)
    divisible, equal_one = attribute_indices(meta.get("configs", []))
    names = list(arg_types)
    signature: dict[str, Any] = {}
    for index, (name, arg_type) in enumerate(arg_types.items()):
        if name in constants:
            if isinstance(constants[name], (bool, int, float)):
                signature[name] = constants[name]
        elif arg_type != "constexpr":
            signature[name] = spec_value(name, arg_type, hints, index in divisible, index in equal_one)
    device = meta.get("device")
    return InductorKernelInfo(
        signature=signature, size_hints=hints, kernel_type=(_dotted(decorator.func) or "").split(".")[-1],
        constants=dict(constants), name=func.name, line=func.lineno + offset,
        device=dict(device.kwargs) if isinstance(device, CallValue) else {},
        divisible_by_16=tuple(names[i] for i in sorted(divisible) if i < len(names)),
        equal_to_1=tuple(names[i] for i in sorted(equal_one) if i < len(names)),
        hints={k: v for k, v in keywords.items() if k not in _NOT_HINTS},
        inductor_meta=keywords.get("inductor_meta") if isinstance(keywords.get("inductor_meta"), dict) else {},
    )


# --------------------------------------------------------------------------- public API


def read_inductor_file(path: Path) -> str:
    """The file's text; an unreadable file is an :class:`InductorOutputError`."""
    try:
        return read_python(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InductorOutputError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", path=str(path)) from exc


#: A necessary condition for an Inductor kernel in a file: a heuristics decorator's call, as text (also inside
#: the sources ``output_code.py`` embeds), so other files are not parsed again just to find none.
_MAY_HAVE_HEURISTICS = re.compile(r"@\s*(?:triton_heuristics\s*\.\s*)?(?:" + "|".join(map(re.escape, HEURISTICS))
                                  + r")\s*\(")


def inductor_kernels(path: str | os.PathLike[str]) -> dict[str, InductorKernelInfo]:
    """Every Inductor kernel of a file (kernel file or ``output_code.py``), by name."""
    path = Path(path)
    found: dict[str, InductorKernelInfo] = {}
    for func, offset in kernel_functions(path, read_inductor_file(path)):
        decorator = heuristics_decorator(func)
        if decorator is not None and func.name not in found:
            found[func.name] = read_kernel_info(path, func, offset, decorator)
    return found


def inductor_kernel_info(path: str | os.PathLike[str], kernel_name: str) -> InductorKernelInfo | None:
    """The metadata of ``kernel_name`` in ``path``; None when no Inductor kernel has that name."""
    try:
        if not _MAY_HAVE_HEURISTICS.search(read_inductor_file(Path(path))):  # no `@pointwise(` etc., embedded sources included
            return None
    except InductorOutputError:
        pass  # inductor_kernels says what is wrong with the file
    return inductor_kernels(path).get(kernel_name)


def inductor_signature(path: str | os.PathLike[str], kernel_name: str) -> dict[str, Any] | None:
    """The spec-format launch signature of an Inductor kernel; None when it is not one."""
    info = inductor_kernel_info(path, kernel_name)
    return dict(info.signature) if info is not None else None
