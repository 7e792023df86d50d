"""Syntax-tree helpers the discovery modules share: names, constants, jit decorators, global reads, source text.

Pure functions of :mod:`ast` nodes (and a file's text), importing nothing of kernelrules: the
kernel loader (:mod:`kernelrules.discover.kernelsource`), the reduced-module reader
(:mod:`kernelrules.discover.kernelreduce`), the dependency walk (:mod:`kernelrules.discover.kerneldeps`)
and the branch chooser (:mod:`kernelrules.discover.pkgbranches`) all read a module the same way, and
keeping the helpers here, below all of them, is what lets those modules import one another in one
direction only (tests/test_layering.py allows no import cycle).
"""

from __future__ import annotations

import ast
import builtins
import collections
import functools
import re
from typing import Iterator

#: Names every module reads without binding or importing them: Python's builtins.
BUILTIN_NAMES = frozenset(dir(builtins))

#: Decorator names that make a function a Triton jit function (the last dotted part).
JIT_DECORATORS = ("jit",)

#: Decorator names of Triton helpers that are kept as well (they run at compile time).
HELPER_DECORATORS = ("constexpr_function",)


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def decorator_name(node: ast.expr) -> str | None:
    """The last dotted part of a decorator (``triton.jit(...)`` -> ``jit``)."""
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted_name(target)
    return name.rsplit(".", 1)[-1] if name else None


def is_constant_expr(node: ast.expr, known: set[str], aliases: set[str]) -> bool:
    """Whether ``node`` is a literal, ``constexpr(<literal>)`` or arithmetic of those.

    Names are allowed when they refer to constants kept earlier, and dotted names
    when they start at an imported triton/math module (``tl.float16``, ``math.pi``).
    """
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_constant_expr(e, known, aliases) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return is_constant_expr(node.operand, known, aliases)
    if isinstance(node, ast.BinOp):
        return is_constant_expr(node.left, known, aliases) and is_constant_expr(node.right, known, aliases)
    if isinstance(node, ast.Name):
        return node.id in known
    if isinstance(node, ast.Attribute):
        dotted = dotted_name(node)
        return dotted is not None and dotted.split(".", 1)[0] in aliases
    if isinstance(node, ast.Call):
        name = dotted_name(node.func)
        return (
            name is not None
            and name.rsplit(".", 1)[-1] == "constexpr"
            and not node.keywords
            and len(node.args) == 1
            and is_constant_expr(node.args[0], known, aliases)
        )
    return False


def assignment_target(node: ast.stmt) -> tuple[str, ast.expr] | None:
    """``(name, value)`` for ``NAME = value`` or ``NAME: ann = value``, else None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value
    return None


def is_jit(node: ast.FunctionDef) -> bool:
    """Whether a function carries a jit (or constexpr_function) decorator."""
    return any(decorator_name(d) in JIT_DECORATORS + HELPER_DECORATORS for d in node.decorator_list)


def is_triton_jit(node: ast.FunctionDef, aliases: set[str] | frozenset[str]) -> bool:
    """Whether a function carries a jit decorator that starts at a name bound by a kept import
    (``aliases``: ``triton``, ``tl``, ``jit`` from ``from triton import jit``).

    ``@tilelang.jit`` or ``@numba.jit`` ends in ``jit`` too, but is another library's: the
    rebuilt module has no ``tilelang`` to call, so such a function is a plain one there.
    """
    for dec in node.decorator_list:
        dotted = dotted_name(dec.func if isinstance(dec, ast.Call) else dec)
        if dotted is not None and dotted.rsplit(".", 1)[-1] in JIT_DECORATORS + HELPER_DECORATORS \
                and dotted.split(".", 1)[0] in aliases:
            return True
    return False


def global_loads(func: ast.FunctionDef) -> set[str]:
    """Names a function reads that it neither binds locally nor takes as parameters.

    A flow-insensitive approximation of Python's scoping, good enough for kernels.
    """
    return function_names(func)[1]


def function_names(func: ast.FunctionDef) -> tuple[dict[str, None], set[str]]:
    """``(every name the function reads, in ast.walk order; its global_loads)``, from one walk of it."""
    local: set[str] = set()
    args = func.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            local.add(arg.arg)
    loads: dict[str, None] = {}
    for node in iter_nodes(func):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads[node.id] = None
            else:
                local.add(node.id)
        elif isinstance(node, ast.FunctionDef) and node is not func:
            local.add(node.name)
    found = set(loads)
    # Decorators are evaluated in the module scope; they are not dependencies of the body.
    for dec in func.decorator_list:
        for node in iter_nodes(dec):
            if isinstance(node, ast.Name):
                found.discard(node.id)
    return loads, found - local


#: Node types that never hold other nodes worth visiting: contexts (``Load``) and operators.
_LEAF_TYPES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def iter_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """What :func:`ast.walk` yields, in the same (breadth-first) order, less contexts (``Load``, ``Store``)
    and operators, and about twice as fast: a 1 MB module has 400,000 nodes."""
    todo = collections.deque([root])
    push, pop = todo.append, todo.popleft
    while todo:
        node = pop()
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST) and not isinstance(item, _LEAF_TYPES):
                        push(item)
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAF_TYPES):
                push(value)
        yield node


def first_line(node: ast.stmt) -> int:
    """The first line of a statement, its decorators included."""
    line = node.lineno
    for decorator in getattr(node, "decorator_list", ()):
        if decorator.lineno < line:
            line = decorator.lineno
    return line


class MarkedLines:
    """Which lines of a source match a pattern, to skip the statements that cannot hold what is sought
    (a launch ``kernel[grid](...)`` is written with ``[`` and ``](``: most of a large module of plain helpers
    needs no walk). Lines are counted as :mod:`ast` counts them."""

    def __init__(self, source: str, pattern: str | re.Pattern[str]) -> None:
        search = re.compile(pattern).search
        self._before = [0]  # _before[i]: how many of the first i lines match
        for line in re.split(r"\r\n|\r|\n", source):
            self._before.append(self._before[-1] + bool(search(line)))

    def holds(self, node: ast.AST) -> bool:
        """Whether a line of ``node`` (a statement's decorators included) matches."""
        last = len(self._before) - 1
        end = min(getattr(node, "end_lineno", None) or last, last)
        start = first_line(node) if isinstance(node, ast.stmt) else getattr(node, "lineno", 1)
        return self._before[end] - self._before[max(start, 1) - 1] > 0


def source_segment(source: str, node: ast.AST) -> str:
    """The exact source text of ``node`` (decorators of a function included)."""
    text = _source_segment(source, node) or ast.unparse(node)
    if isinstance(node, ast.FunctionDef):
        decorators = [_source_segment(source, d) or ast.unparse(d) for d in node.decorator_list]
        text = "\n".join(f"@{d}" for d in decorators) + "\n" + text
    return text


#: A line as ``ast.get_source_segment`` splits them: ends kept, only ``\r\n``, ``\r`` and ``\n`` end one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@functools.lru_cache(maxsize=8)
def _source_lines(source: str) -> list[str]:
    """The lines of ``source`` as ``ast`` splits them, once per text (a file's segments are read many times).

    ``ast._splitlines_no_ff`` (what ``get_source_segment`` uses) goes character by character in
    Python: 12 s for a file with one 900 kB line. The regular expression splits the same way."""
    return _LINE.findall(source)


def _source_segment(source: str, node: ast.AST) -> str | None:
    """``ast.get_source_segment(source, node)`` without splitting the whole text at every call."""
    lineno, end_lineno = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if lineno is None or end_lineno is None or col is None or end_col is None:
        return None
    lines = _source_lines(source)
    if end_lineno == lineno:
        return lines[lineno - 1].encode()[col:end_col].decode()
    first = lines[lineno - 1].encode()[col:].decode()
    last = lines[end_lineno - 1].encode()[:end_col].decode()
    return "".join([first, *lines[lineno:end_lineno - 1], last])
