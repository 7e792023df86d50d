"""The reduced module of a kernel's file: the parts a ``@triton.jit`` kernel may depend on, read with ``ast``.

:func:`reduce_module` splits a parsed file into what :mod:`kernelrules.discover.kernelsource` keeps
when it rebuilds the file without running it (module docstring there): the imports of ``triton``,
``triton.*`` and ``math``, the module-level literal constants, the jit functions (decorated, or made
by calling ``triton.jit``: :mod:`kernelrules.discover.discover_calls`) and the plain functions, in the
order a default import runs the module-level statements (:func:`kernelrules.discover.pkgsource.module_statements`).
Files are read and reduced once per content.

Why a module of its own: both the kernel loader and the dependency walk across a package
(:mod:`kernelrules.discover.kerneldeps`) read reduced modules, and the loader hashes a kernel with
that walk; with the reader below both, they import each other in one direction only.
"""

from __future__ import annotations

import ast
import collections
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bounds import UNKNOWN, TooLarge, bounded_value
from .discover_calls import Binding, classify_by_last_name, find_jit_calls
from ..errors import KernelSourceError, KernelSyntaxError
from .pkgcompute import cache_key as facts_key
from .pkgsource import module_statements
from .pyast import JIT_DECORATORS, assignment_target, is_constant_expr, is_jit, is_triton_jit
from .pyparse import parse_source, text_digest
from .pysource import read_python

#: Module names whose imports are kept (the name itself or any submodule).
KEPT_IMPORT_ROOTS = ("triton", "math")


@dataclass
class Reduced:
    """The parts of one parsed file that a kernel may depend on."""

    source: str
    tree: ast.Module
    imports: list[ast.stmt]
    constants: dict[str, ast.stmt]
    functions: dict[str, ast.FunctionDef]
    plain_functions: dict[str, ast.FunctionDef]
    import_aliases: set[str]
    #: Module-level statements as a default import runs them (environment branches decided).
    statements: list[ast.stmt] = field(default_factory=list)
    #: Statements of jit functions made by calls (``NAME = triton.jit(f)``), by ``id``.
    bindings: dict[int, Binding] = field(default_factory=dict)
    #: ``id`` of every ``def`` such calls make or wrap a jit function from (kept in the rebuilt module).
    call_defs: set[int] = field(default_factory=set)


def read_kernel_source(path: Path) -> str:
    """Read the file as text, turning I/O problems into a located error."""
    try:
        return read_python(path)
    except FileNotFoundError:
        raise KernelSourceError("file not found", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelSourceError(f"cannot read file: {exc}", path=str(path)) from None


def _parse(source: str, path: Path) -> ast.Module:
    """Parse the file (once per content: :mod:`kernelrules.discover.pyparse`), turning a syntax error into a
    located error."""
    try:
        return parse_source(source, str(path))
    except SyntaxError as exc:
        raise KernelSyntaxError(
            f"syntax error: {exc.msg}", path=str(path), line=exc.lineno, column=exc.offset
        ) from None


def _is_kept_module(module: str | None) -> bool:
    """Whether an import of ``module`` is one kernels may rely on (``__future__`` too)."""
    if not module:
        return False
    return module == "__future__" or module.split(".", 1)[0] in KEPT_IMPORT_ROOTS


def _filter_import(node: ast.stmt) -> ast.stmt | None:
    """The import with only triton/math names left, or None when nothing remains."""
    if isinstance(node, ast.Import):
        names = [alias for alias in node.names if _is_kept_module(alias.name)]
        return ast.copy_location(ast.Import(names=names), node) if names else None
    if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_kept_module(node.module):
        return node
    return None


def _bound_names(node: ast.stmt) -> list[str]:
    """Names an import statement binds at module level."""
    names = []
    for alias in node.names:  # type: ignore[attr-defined]
        if alias.asname:
            names.append(alias.asname)
        elif isinstance(node, ast.Import):
            names.append(alias.name.split(".", 1)[0])
        else:
            names.append(alias.name)
    return names


#: Reduced modules by (path, source digest): a file is parsed and reduced once per process and content,
#: however many kernels, hashes and dependency walks read it (a 1 MB module takes about a second).
_REDUCE_CACHE: "collections.OrderedDict[tuple[str, str, str | None], Reduced]" = collections.OrderedDict()


def reduce_module(source: str, path: Path) -> Reduced:
    """Split a parsed file into the imports, constants and jit functions kernels may use (cached per content;
    the result is shared, so callers must not change it)."""
    key = (str(path), text_digest(source), facts_key())
    found = _REDUCE_CACHE.get(key)
    if found is not None:
        _REDUCE_CACHE.move_to_end(key)
        return found
    reduced = _reduce_module(source, path)
    _REDUCE_CACHE[key] = reduced
    while len(_REDUCE_CACHE) > 64:
        _REDUCE_CACHE.popitem(last=False)
    return reduced


def _reduce_module(source: str, path: Path) -> Reduced:
    tree = _parse(source, path)
    imports: list[ast.stmt] = []
    aliases: set[str] = set()
    constants: dict[str, ast.stmt] = {}
    functions: dict[str, ast.FunctionDef] = {}
    plain: dict[str, ast.FunctionDef] = {}
    top = {id(node) for node in tree.body}
    values: dict[str, Any] = {}  # the kept constants' values, where literal (for the size bounds)
    statements = list(module_statements(tree.body, path=path))
    for node in statements:
        kept_import = _filter_import(node)
        if kept_import is not None:
            imports.append(kept_import if id(node) in top else _tolerant(kept_import))
            aliases.update(_bound_names(kept_import))
            continue
        target = assignment_target(node)
        if target is not None:
            name, value = target
            if is_constant_expr(value, constants.keys(), aliases) and _small(name, value, values):
                constants[name] = node
            else:
                constants.pop(name, None)  # a later non-literal rebinding wins at run time
                values.pop(name, None)
            continue
        if isinstance(node, ast.FunctionDef):
            (functions if is_triton_jit(node, aliases) else plain)[node.name] = node
    reduced = Reduced(source, tree, imports, constants, functions, plain, aliases, statements)
    _add_jit_calls(reduced)
    return reduced


def _small(name: str, value: ast.expr, values: dict[str, Any]) -> bool:
    """Whether a constant can be kept without computing a huge value (:mod:`kernelrules.bounds`);
    its value, when literal, is recorded in ``values`` for the constants after it."""
    try:
        found = bounded_value(value, values)
    except TooLarge:
        return False  # left out: a kernel reading it is told the name is not defined as kernelrules reads it
    if found is not UNKNOWN:
        values[name] = found
    return True


def _add_jit_calls(reduced: Reduced) -> None:
    """Index jit functions made by calls under the names the file binds (:mod:`kernelrules.discover.discover_calls`)."""
    classify = classify_by_last_name(JIT_DECORATORS, reduced.import_aliases)
    calls, bindings = find_jit_calls(reduced.statements, classify, is_jit)
    for name, call in calls.items():
        reduced.functions[name] = call.as_function()
        reduced.plain_functions.pop(name, None)
    reduced.bindings = {id(b.statement): b for b in bindings}
    reduced.call_defs = {id(b.func) for b in bindings if b.func is not None} | {id(c.func) for c in calls.values()}


def _tolerant(node: ast.stmt) -> ast.stmt:
    """``try: <import> except ImportError: pass`` for an import read from a ``try`` or an ``if`` body."""
    handler = ast.ExceptHandler(type=ast.Name(id="ImportError", ctx=ast.Load()), name=None, body=[ast.Pass()])
    return ast.copy_location(ast.Try(body=[node], handlers=[handler], orelse=[], finalbody=[]), node)
