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

The search roots, module files and statement helpers are :mod:`kernelrules.discover.pkgfiles`.
Reading a file's names chooses its branches (:func:`kernelrules.discover.pkgbranches.walk`), and
choosing a branch may read other files' names: the walk gets :data:`READER` (this module's
:func:`file_names` and :func:`resolve`) as an argument, so that pkgbranches and pkgvalues need not
import this module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from .pkgbranches import walk
from .pkgcompute import cache_key, compute
from .pkgfiles import FIX_HINT, Miss, Target, bound_by, handler_bindings, module_file, module_path, reads_environment
from .pkgvalues import Reader
from .pyparse import parse_source
from .pysource import read_python, view_digest


# --------------------------------------------------------------------------- statements


def module_statements(body: Sequence[ast.stmt], notes: list[str] | None = None,
                      path: Path | None = None) -> Iterator[ast.stmt]:
    """Module-level statements as a default launch runs them.

    An ``if`` on the environment contributes the branch taken with the variables unset
    (a note says so); a ``try`` contributes its body. Other ``if`` statements are, given
    the file's ``path``, decided or have their branches chosen per name
    (:func:`kernelrules.discover.pkgbranches.walk`); without it they are yielded whole.
    """
    for statement, choices in walk(body, path, READER):
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


_NAMES: dict[tuple[str, int, int, str | None], _Names] = {}
_READING: set[str] = set()


def file_names(path: Path) -> _Names:
    """The module-level bindings of ``path``, parsed once per file version."""
    path = Path(path).resolve()
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size, cache_key(), view_digest(path))  # branches read target facts
    except OSError as exc:
        return _Names(error=f"cannot read {path}: {exc.strerror or exc}")
    if key in _NAMES:
        return _NAMES[key]
    if str(path) in _READING:  # reached again while choosing its branches: an import cycle
        return _Names(error=f"{path.name} is reached again (an import cycle) while kernelrules reads its branches")
    names = _Names()
    try:
        tree = parse_source(read_python(path), str(path))
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
    for statement, notes in walk(tree.body, path, READER):
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


#: How pkgbranches and pkgvalues read other files of the package while choosing a file's branches.
READER = Reader(file_names, resolve, compute)
