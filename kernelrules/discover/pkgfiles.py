"""A package's module files, and what one module-level statement binds or tests: read from the syntax tree alone.

The parts of reading a package's source (:mod:`kernelrules.discover.pkgsource`) that need no other
file read: the search roots and where a module's file is, the located results of a name
(:class:`Target`, :class:`Miss`), the names a statement binds, and the value of an ``if`` test on
the environment with every variable unset (:func:`decide`).

Why a module of its own: reading a file's names chooses its branches
(:mod:`kernelrules.discover.pkgbranches`, :mod:`kernelrules.discover.pkgvalues`), and those need these
helpers; with them here, below all three, the modules import one another in one direction only.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

#: Hint given with every name kernelrules cannot find.
FIX_HINT = "pass --src DIR (the directory holding the package), use --import, or give the kernel a spec file"


@dataclass(frozen=True)
class Target:
    """A resolved name: ``name`` defined in ``path``, or the module ``path`` itself when ``name`` is None."""

    path: Path
    name: str | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Miss:
    """A name that could not be resolved, and why, in one line."""

    name: str
    reason: str
    #: True when the name is simply not defined anywhere: Triton's JIT fails on it too.
    undefined: bool = False
    #: ``NAME=value`` when kernelrules bound the name to a guessed value instead (a flag computed at
    #: import time, :func:`kernelrules.discover.pkgvalues.flag_value`): listed so that a kernel that compiles
    #: with no config is reported as kernelrules' limit, not the user's error.
    guessed: str | None = None


# --------------------------------------------------------------------------- roots


def package_root(path: Path) -> Path:
    """The directory above the outermost package holding ``path`` (its own directory if none)."""
    directory = Path(path).resolve().parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


def search_roots(path: Path, src: Sequence[str | os.PathLike[str]] = ()) -> tuple[Path, ...]:
    """Where absolute imports of ``path`` are looked up: its package root, then ``src``, without repeats."""
    roots: list[Path] = []
    for root in (package_root(path), *(Path(s).resolve() for s in src)):
        if root not in roots:
            roots.append(root)
    return tuple(roots)


def module_path(base: Path, parts: Sequence[str]) -> Path | None:
    """``base/a/b.py`` or ``base/a/b/__init__.py`` for ``parts`` ``[a, b]`` (``base/__init__.py`` for none)."""
    target = base.joinpath(*parts)
    if parts and target.with_suffix(".py").is_file():
        return target.with_suffix(".py")
    if (target / "__init__.py").is_file():
        return target / "__init__.py"
    return None


def module_file(path: Path, module: str | None, level: int, roots: Sequence[Path]) -> Path | None:
    """The file of ``module`` as imported from ``path`` (``level`` dots for a relative import)."""
    parts = [p for p in (module or "").split(".") if p]
    if level > 0:
        base = Path(path).resolve().parent
        for _ in range(level - 1):
            base = base.parent
        return module_path(base, parts)
    if not parts:
        return None
    for root in roots:
        found = module_path(root, parts)
        if found is not None:
            return found
    return namespace_module(path, parts)


def namespace_module(path: Path, parts: Sequence[str]) -> Path | None:
    """The file of absolute module ``parts`` under a directory above ``path`` named ``parts[0]``.

    A directory without ``__init__.py`` is a namespace package (PEP 420): the walk up the
    ``__init__.py`` chain (:func:`package_root`) stops below it, so ``from pkg.ops.fla.op import
    exp`` in ``pkg/ops/fla/chunk.py`` (``fla`` without ``__init__.py``) is not under the search
    roots. Python finds it because the directory holding ``pkg`` is on the path, as it must be for
    the importing file's own absolute import to work; so each directory above ``path`` named like
    the import's first part (nearest first) stands for ``pkg``.
    """
    for directory in Path(path).resolve().parents:
        if directory.name == parts[0] and directory.parent != directory:
            found = module_path(directory.parent, parts)
            if found is not None:
                return found
    return None


# --------------------------------------------------------------------------- statements


def env_value(node: ast.expr) -> tuple[bool, Any]:
    """``(True, value)`` for an environment read with the variable unset, else ``(False, None)``."""
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if name in ("os.environ.get", "environ.get", "os.getenv", "getenv"):
            return True, (node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None)
    return False, None


class Undecided(Exception):
    """A test that cannot be decided statically."""


def decide(node: ast.expr) -> Any:
    """The value of a module-level ``if`` test with every environment variable unset."""
    is_env, value = env_value(node)
    if is_env:
        return value
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id == "TYPE_CHECKING":
        return False
    if isinstance(node, ast.Attribute) and ast.unparse(node) == "typing.TYPE_CHECKING":
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not decide(node.operand)
    if isinstance(node, ast.BoolOp):
        values = [decide(v) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        right = node.comparators[0]
        if isinstance(node.ops[0], (ast.In, ast.NotIn)) and ast.unparse(right) in ("os.environ", "environ"):
            return isinstance(node.ops[0], ast.NotIn)
        left, other = decide(node.left), decide(right)
        op = node.ops[0]
        table = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                 ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
        if type(op) in table:
            try:
                return table[type(op)](left, other)
            except TypeError:
                raise Undecided from None
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(decide(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "bool", "str") \
            and len(node.args) == 1:
        try:
            return {"int": int, "bool": bool, "str": str}[node.func.id](decide(node.args[0]))
        except (TypeError, ValueError):
            raise Undecided from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("lower", "upper", "strip"):
        inner = decide(node.func.value)
        if isinstance(inner, str):
            return getattr(inner, node.func.attr)()
    raise Undecided


def reads_environment(node: ast.expr) -> bool:
    """Whether an ``if`` test mentions ``os.environ`` / ``getenv`` / ``TYPE_CHECKING``."""
    text = ast.unparse(node)
    return "environ" in text or "getenv" in text or "TYPE_CHECKING" in text


def bound_by(node: ast.stmt) -> list[str]:
    """Names a definition binds (``def``, ``class``, ``NAME = ...``, ``A = B = ...``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def handler_bindings(body: Sequence[ast.stmt]) -> set[str]:
    """Names bound in the ``except`` handlers of the ``try`` statements of ``body`` (at any depth)."""
    found: set[str] = set()
    for node in all_statements(body):
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                for bound in all_statements(handler.body):
                    found.update(bound_by(bound))
    return found


def all_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body`` at any depth (in ``if``, ``try``, loop, ``with``, ``match``, ``def`` and
    ``class`` bodies), without visiting expressions: statements hold statements only in these blocks, so this
    finds what :func:`ast.walk` finds among statements at a fraction of the cost on a large module."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for name in ("finalbody", "orelse", "body"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                stack.extend(reversed(inner))
        for block in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            stack.extend(reversed(block.body))
