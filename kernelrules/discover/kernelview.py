"""What a compile worker reads of a large kernel file: the file with the statements the kernel cannot need blanked out.

A compile worker rebuilds the kernel's module from its file (:mod:`kernelrules.discover.kernelsource`),
and every worker parses the whole file for it: seconds for a 1 MB module of 50,000
constants, for a kernel that reads none of them (issue 18: a file judged in 10 s). For a
file over :data:`MIN_VIEW_BYTES` the pool sends, with each job, a :class:`FileView` of the
kernel's file: the same text, each line at its place, with the lines of the top-level
statements the kernel cannot need left empty. The worker reads the view instead of that
version of the file (:func:`kernelrules.discover.pysource.use_views`); line and column
numbers, and so every source segment, hash, message and Triton cache key, are the
file's. Triton itself reads the kernel's source from the file (``inspect.getsource``).

Kept whole: every top-level statement that is not simple (imports, ``if``, ``try``,
``with``, loops: they decide what the module binds), and every simple one (``def``,
``class``, assignments, expression statements) that binds a name a kept statement reads,
transitively from the kernel's name: its jit helpers, the constants they and their
defaults read, the functions a flag is computed with. Statements sharing a line are kept
or left out together. Anything more the kernel could need is found by the same reading
of the kept text as of the whole file, since nothing it reads is left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .kernelreduce import read_kernel_source, reduce_module
from .pyast import first_line, iter_nodes

#: Files smaller than this are read whole by workers (parsing them takes well under a tenth of a second;
#: every module of the six corpus packages is): the view is for the files that take seconds.
MIN_VIEW_BYTES = 128 * 1024

#: Statements left out when the kernel reads no name they bind.
_SIMPLE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr,
           ast.Pass)


@dataclass(frozen=True)
class FileView:
    """A file's text with some lines emptied, for one version of the file (its modification time and size)."""

    path: str
    mtime_ns: int
    size: int
    #: ``(first line, text of the kept lines from there)``, in line order.
    blocks: tuple[tuple[int, str], ...]
    #: How many lines the file has (the view has as many).
    lines: int

    def text(self) -> str:
        """The view's text: the kept lines at their places, every other line empty."""
        lines = [""] * self.lines
        for first, text in self.blocks:
            block = text.split("\n")
            lines[first - 1:first - 1 + len(block)] = block
        return "\n".join(lines)


def kernel_view(path: str | Path, name: str) -> FileView | None:
    """The view of ``path`` a worker compiling kernel ``name`` needs; None when the whole file is read instead
    (a small file, a kernel not found, a view that would keep most of the file, a file that cannot be read)."""
    path = Path(path).resolve()
    stat = path.stat()
    if stat.st_size < MIN_VIEW_BYTES:
        return None
    reduced = reduce_module(read_kernel_source(path), path)
    if name not in reduced.functions:
        return None  # the worker reports it, from the whole file
    groups = _line_groups(reduced.tree.body)
    kept = _kept_groups(groups, name)
    lines = reduced.source.split("\n")
    kept_lines = sum(groups[g][1] - groups[g][0] + 1 for g in kept)
    if kept_lines * 2 > len(lines):
        return None
    blocks = tuple((groups[g][0], "\n".join(lines[groups[g][0] - 1:groups[g][1]])) for g in sorted(kept))
    return FileView(str(path), stat.st_mtime_ns, stat.st_size, blocks, len(lines))


def _line_groups(body: list[ast.stmt]) -> list[tuple[int, int, list[ast.stmt]]]:
    """Top-level statements in groups that share no line with another group: ``(first line, last line, statements)``."""
    groups: list[tuple[int, int, list[ast.stmt]]] = []
    for statement in body:
        start, end = first_line(statement), statement.end_lineno or statement.lineno
        if groups and start <= groups[-1][1]:  # ``a = 1; b = 2``
            first, last, members = groups[-1]
            groups[-1] = (first, max(last, end), [*members, statement])
        else:
            groups.append((start, end, [statement]))
    return groups


def _kept_groups(groups: list[tuple[int, int, list[ast.stmt]]], kernel: str) -> set[int]:
    """The groups to keep: the non-simple statements' groups, and the groups binding a name a kept group reads,
    transitively from ``kernel``."""
    binders: dict[str, list[int]] = {}
    kept: set[int] = set()
    wanted = [kernel]
    for index, (_, _, members) in enumerate(groups):
        for statement in members:
            if not isinstance(statement, _SIMPLE):
                kept.add(index)
            for bound in _bound_names(statement):
                binders.setdefault(bound, []).append(index)
    for index in kept:
        wanted.extend(_read_names(groups[index][2]))
    seen: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        for index in binders.get(name, ()):
            if index not in kept:
                kept.add(index)
                wanted.extend(_read_names(groups[index][2]))
    return kept


def _bound_names(statement: ast.stmt) -> list[str]:
    """Names a simple statement binds or changes (``X = ...``, ``X.a = ...``, ``X[i] += ...``, ``def X``)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
    return [node.id for target in targets for node in iter_nodes(target) if isinstance(node, ast.Name)]


def _read_names(statements: list[ast.stmt]) -> list[str]:
    """Every name the statements mention (reads, and more: a superset is safe)."""
    return [node.id for statement in statements for node in iter_nodes(statement) if isinstance(node, ast.Name)]
