"""Where a name a module imports comes from, found by reading the package's source with ``ast``.

A kernel may call a ``@triton.jit`` helper imported from another module of its package
(``from .utils import helper``, ``from pkg.ops import utils``, re-exports through
``__init__.py``). kernelrules never imports the user's package, so it follows those
imports itself: relative imports from the file's own package, absolute ones under the
*search roots*: the directory that holds the file's top-level package (found by walking
up the ``__init__.py`` chain) and the directories given with ``--src`` /
``[tool.kernelrules] src``, as ruff does.

Module-level ``if`` statements whose test reads the environment
(``if os.environ.get("X"):``, ``os.getenv``, ``"X" in os.environ``) are decided with the
variable unset, as a default launch sees them, and the choice is recorded as a note.
``if TYPE_CHECKING:`` is never taken. The bodies of module-level ``try`` statements are
read (the usual import fallbacks). Other ``if`` statements are decided on the installed
Triton or have a branch chosen per name by :mod:`kernelrules.discover.pkgbranches`, which imports
Triton's own modules to see what they provide; nothing here runs user code.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from .pysource import read_python

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


def module_statements(body: Sequence[ast.stmt], notes: list[str] | None = None,
                      path: Path | None = None) -> Iterator[ast.stmt]:
    """Module-level statements as a default launch runs them.

    An ``if`` on the environment contributes the branch taken with the variables unset
    (a note says so); a ``try`` contributes its body. Other ``if`` statements are, given
    the file's ``path``, decided or have their branches chosen per name
    (:func:`kernelrules.discover.pkgbranches.walk`); without it they are yielded whole.
    """
    from .pkgbranches import walk

    for statement, choices in walk(body, path):
        if notes is not None:
            notes.extend(n for n in choices if n not in notes)
        yield statement


# --------------------------------------------------------------------------- names


@dataclass
class _Names:
    """What one file binds at module level: definitions (with their branch notes) and imports."""

    defined: dict[str, ast.stmt] = field(default_factory=dict)
    imports: dict[str, ast.stmt] = field(default_factory=dict)
    #: The choices (branches taken) that bound each name.
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Names bound only under an ``if`` kernelrules does not decide, with that ``if``.
    conditional: dict[str, str] = field(default_factory=dict)
    #: Names an ``except`` handler of a module-level ``try`` binds: their value depends on what fails.
    uncertain: set[str] = field(default_factory=set)
    error: str | None = None


_NAMES: dict[tuple[str, int, int], _Names] = {}
_READING: set[str] = set()


def bound_by(node: ast.stmt) -> list[str]:
    """Names a definition binds (``def``, ``class``, ``NAME = ...``, ``A = B = ...``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def file_names(path: Path) -> _Names:
    """The module-level bindings of ``path``, parsed once per file version."""
    path = Path(path).resolve()
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
    except OSError as exc:
        return _Names(error=f"cannot read {path}: {exc.strerror or exc}")
    if key in _NAMES:
        return _NAMES[key]
    if str(path) in _READING:  # reached again while choosing its branches: an import cycle
        return _Names(error=f"{path.name} is reached again (an import cycle) while kernelrules reads its branches")
    names = _Names()
    try:
        tree = ast.parse(read_python(path), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError) as exc:
        names.error = f"cannot read {path.name}: {type(exc).__name__}: {exc}"
    else:
        _READING.add(str(path))
        try:
            _read_names(tree, path, names)
        except RecursionError:
            names.error = f"cannot read {path.name}: its imports nest too deeply"
        finally:
            _READING.discard(str(path))
    _NAMES[key] = names
    return names


def _read_names(tree: ast.Module, path: Path, names: _Names) -> None:
    """Fill ``names`` with the module-level bindings of ``tree`` (the file ``path``), each with the
    choices that bound it, and the names bound under ``if`` statements kernelrules does not evaluate."""
    from .pkgbranches import walk

    names.uncertain = handler_bindings(tree.body)
    for node in tree.body:
        if isinstance(node, ast.If) and not reads_environment(node.test):
            where = f"line {node.lineno}: `if {ast.unparse(node.test)}`"
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
                    for name in bound_by(inner):
                        names.conditional.setdefault(name, where)
                elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                    for alias in inner.names:
                        names.conditional.setdefault(alias.asname or alias.name.split(".", 1)[0], where)
    for statement, notes in walk(tree.body, path):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name != "*":
                    local = alias.asname or alias.name.split(".", 1)[0]
                    names.imports[local] = statement
                    names.defined.pop(local, None)
                    names.notes[local] = notes
            continue
        for name in bound_by(statement):
            names.defined[name] = statement
            names.imports.pop(name, None)
            names.notes[name] = notes


def handler_bindings(body: Sequence[ast.stmt]) -> set[str]:
    """Names bound in the ``except`` handlers of the ``try`` statements of ``body`` (at any depth)."""
    found: set[str] = set()
    for node in body:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Try):
                for handler in inner.handlers:
                    for bound in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
                        if isinstance(bound, ast.stmt):
                            found.update(bound_by(bound))
    return found


def resolve(path: Path, name: str, roots: Sequence[Path], _depth: int = 0) -> Target | Miss:
    """Where module-level ``name`` of ``path`` is defined, following imports within the search roots;
    a target carries the notes of the choices (branches taken) on the way."""
    found = _resolve(path, name, roots, _depth)
    notes = file_names(path).notes.get(name, ())
    if isinstance(found, Target) and notes:
        return Target(found.path, found.name, tuple(dict.fromkeys((*notes, *found.notes))))
    return found


def _resolve(path: Path, name: str, roots: Sequence[Path], _depth: int) -> Target | Miss:
    if _depth > 32:
        return Miss(name, f"`{name}`: imports of {Path(path).name} form a cycle")
    names = file_names(path)
    if names.error:
        return Miss(name, f"`{name}`: {names.error}")
    if name in names.defined:
        return Target(Path(path).resolve(), name)
    statement = names.imports.get(name)
    if statement is None and name in names.conditional:
        return Miss(name, f"`{name}` is defined in {Path(path).name} under {names.conditional[name]}, which "
                          "kernelrules does not evaluate, and no branch defines it as an import the installed "
                          f"Triton or the package provides, a @triton.jit function or a literal constant; {FIX_HINT}")
    if statement is None:
        return Miss(name, f"`{name}` is neither defined nor imported at module level of {Path(path).name}",
                    undefined=True)
    if isinstance(statement, ast.Import):
        alias = next(a for a in statement.names if (a.asname or a.name.split(".", 1)[0]) == name)
        dotted = alias.name if alias.asname else alias.name.split(".", 1)[0]
        found = module_file(path, dotted, 0, roots)
        if found is None:
            return Miss(name, f"`{name}`: module {dotted} is not under {_shown(roots)}; {FIX_HINT}")
        return Target(found, None)
    alias = next(a for a in statement.names if (a.asname or a.name) == name)
    dots = "." * statement.level
    where = f"{dots}{statement.module or ''}"
    found = module_file(path, statement.module, statement.level, roots)
    if found is None:
        return Miss(name, f"`{name}` is imported from {where}, which kernelrules cannot find under "
                          f"{_shown(roots)}; {FIX_HINT}")
    inner = file_names(found)
    if inner.error:
        return Miss(name, f"`{name}` is imported from {where}: {inner.error}; {FIX_HINT}")
    if alias.name in inner.defined or alias.name in inner.imports:
        return resolve(found, alias.name, roots, _depth + 1)
    if found.name == "__init__.py":  # ``from pkg import submodule``
        sub = module_path(found.parent, [alias.name])
        if sub is not None:
            return Target(sub, None)
    return Miss(name, f"`{name}` (from {where} import {alias.name}) is not defined in {found.name} "
                      f"at module level as kernelrules reads it; {FIX_HINT}")


def resolve_attribute(module: Path, attr: str, roots: Sequence[Path]) -> Target | Miss:
    """``attr`` of the module in file ``module``: a name it binds, else a submodule of its package."""
    names = file_names(module)
    if attr in names.defined or attr in names.imports:
        return resolve(module, attr, roots)
    if Path(module).name == "__init__.py":
        sub = module_path(Path(module).parent, [attr])
        if sub is not None:
            return Target(sub, None)
    return Miss(attr, f"`{attr}` is not defined in {Path(module).name}; {FIX_HINT}", undefined=True)


def attribute_chains(func: ast.FunctionDef, name: str) -> list[list[str]]:
    """The attribute chains read from global ``name`` in ``func`` (``m.a.b`` gives ``[a, b]``)."""
    chains: list[list[str]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute):  # prefixes (``m.a`` of ``m.a.b``) come too; harmless
            parts: list[str] = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                parts.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == name:
                chains.append(list(reversed(parts)))
    return chains


def _shown(roots: Sequence[Path]) -> str:
    """The search roots for a message."""
    shown = []
    for root in roots:
        try:
            shown.append(str(root.relative_to(Path.cwd())) or ".")
        except ValueError:
            shown.append(str(root))
    return ", ".join(shown) or "no search root"
