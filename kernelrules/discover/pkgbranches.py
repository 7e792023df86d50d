"""Module-level ``if`` statements kernelrules does not evaluate: which branch binds each name.

kernelrules reads a package's source instead of importing it (:mod:`kernelrules.discover.pkgsource`),
so a name bound under ``if compare_version("triton", ...) and not is_npu_available():`` or
``if IS_TF32_SUPPORTED:`` has no value it could compute, and a kernel reading it could not
be built. Real packages put their Triton fallbacks (``tanh`` from ``libdevice`` or from
``tl.math``, a ``safe_dot`` per GPU) under such tests, so :func:`walk` chooses instead:

* A test whose value is known from source, the installed Triton and the environment unset
  (``hasattr(tl, "gather")``, a global defined that way: :mod:`kernelrules.discover.pkgvalues`) is
  decided, and the branch it picks is taken whole.
* Otherwise the branches are taken in source order and each name comes from the first
  branch whose definition of it resolves: an import the installed Triton provides or that
  resolves in the package, a ``@triton.jit`` function, a literal constant whose Triton
  attributes exist. A name no branch resolves stays unbound (the kernel is ``needs-spec``,
  as before), except a flag-named global, which is bound where first assigned so that
  :func:`kernelrules.discover.pkgvalues.flag_value` can guess it.

Every choice is a :class:`Choice` note, shown in the kernel's report and hashed into its
source hash. What the installed Triton provides is checked by
:mod:`kernelrules.triton_installed` (importing Triton's own modules); the user's code is
never run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from .pkgfiles import (Target, Undecided, bound_by, decide, handler_bindings, module_file, module_path, reads_environment,
                       search_roots)
from .pkgvalues import UNKNOWN, Context, Reader, evaluate, is_flag_name, short
from .pyast import assignment_target, is_constant_expr, is_jit
from ..triton_installed import CHECKED_ROOTS, Binding, import_binding, provides, triton_object, triton_version


class Choice(str):
    """A note saying which branch of an ``if`` kernelrules took without evaluating it as Python would;
    what the kernel's module binds depends on it, so it is part of the kernel's source hash."""


# --------------------------------------------------------------------------- walking a module


@dataclass
class _Scope:
    """What the statements walked so far bind: Triton aliases, literal constants, assigned values."""

    path: Path
    roots: tuple[Path, ...]
    reader: Reader
    aliases: dict[str, Binding] = field(default_factory=dict)
    constants: set[str] = field(default_factory=set)
    values: dict[str, ast.expr] = field(default_factory=dict)
    imports: dict[str, ast.stmt] = field(default_factory=dict)

    def copy(self) -> "_Scope":
        return _Scope(self.path, self.roots, self.reader, dict(self.aliases), set(self.constants), dict(self.values),
                      dict(self.imports))

    def context(self) -> Context:
        return Context(self.path, self.roots, self.aliases.get, self.values.get, self.imports.get, self.reader)

    def see(self, statement: ast.stmt) -> None:
        """Record what ``statement`` binds (as :func:`kernelrules.discover.kernelreduce.reduce_module` reads it)."""
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                self._forget(local)
                bound = import_binding(statement, local)
                if bound is not None:
                    self.aliases[local] = bound
                elif alias.name != "*":
                    self.imports[local] = statement
            return
        target = assignment_target(statement)
        if target is not None:
            name, value = target
            self._forget(name)
            self.values[name] = value
            if is_constant_expr(value, self.constants, set(self.aliases)):
                self.constants.add(name)
            return
        for name in bound_by(statement):
            self._forget(name)

    def _forget(self, name: str) -> None:
        self.aliases.pop(name, None)
        self.constants.discard(name)
        self.values.pop(name, None)
        self.imports.pop(name, None)


Walked = Iterator[tuple[ast.stmt, tuple[str, ...]]]


def walk(body: Sequence[ast.stmt], path: Path | None = None, reader: Reader | None = None) -> Walked:
    """Module-level statements as a default import runs them, each with the notes of the choices
    that led to it.

    An ``if`` on the environment contributes the branch taken with the variables unset. Other
    ``if`` statements are, with ``path``, decided on the installed Triton or their branches chosen
    per name (module docstring); without ``path`` they are yielded whole (not descended into).
    A ``try`` contributes its body. ``reader`` (needed with ``path``) reads the other files of the
    package that choosing a branch looks into (:data:`kernelrules.discover.pkgsource.READER`).
    """
    if path is not None and reader is None:
        raise TypeError("walk: a path needs a reader (kernelrules.discover.pkgsource.READER)")
    scope = None if path is None else _Scope(Path(path).resolve(), search_roots(Path(path)), reader)
    yield from _walk(body, scope, ())


def _walk(body: Sequence[ast.stmt], scope: _Scope | None, notes: tuple[str, ...]) -> Walked:
    prefix = "" if scope is None else f"{scope.path.name} "
    for node in body:
        if isinstance(node, ast.If) and reads_environment(node.test):
            try:
                taken = bool(decide(node.test))
            except Undecided:
                if scope is not None:
                    yield from _choose(node, scope, notes)
                continue
            branch = "its body" if taken else "the else branch"
            note = f"{prefix}line {node.lineno}: `if {ast.unparse(node.test)}`: took {branch}, as with the variables unset"
            yield from _walk(node.body if taken else node.orelse, scope, notes + (note,))
        elif isinstance(node, ast.Try):
            yield from _walk(node.body, scope, notes)
            for name in handler_bindings([node]) if scope is not None else ():
                scope.values.pop(name, None)  # the value depends on what fails: not decided from the body
        elif isinstance(node, ast.If) and scope is not None:
            yield from _choose(node, scope, notes)
        else:
            yield node, notes
            if scope is not None:
                scope.see(node)


@dataclass
class _Branch:
    line: int | None
    keyword: str  # "if", "elif" or "else"
    test: ast.expr | None
    body: list[ast.stmt]


def _branches(node: ast.If) -> list[_Branch]:
    """The branches of an ``if`` / ``elif`` / ``else`` chain, in source order."""
    branches, current, keyword = [], node, "if"
    while True:
        branches.append(_Branch(current.lineno, keyword, current.test, current.body))
        orelse = current.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If) and orelse[0].col_offset == current.col_offset:
            current, keyword = orelse[0], "elif"  # written ``elif`` (an ``else:`` block's ``if`` is indented)
            continue
        if orelse:
            branches.append(_Branch(None, "else", None, orelse))
        return branches


def _label(branches: list[_Branch], index: int, file: str) -> str:
    branch = branches[index]
    if branch.keyword == "else":
        return f"the else branch of {file}:{branches[0].line} (`if {short(branches[0].test)}`)"
    return f"the branch at {file}:{branch.line} (`{branch.keyword} {short(branch.test)}`)"


def _choose(node: ast.If, scope: _Scope, notes: tuple[str, ...]) -> Walked:
    """The statements an undecided ``if`` chain contributes (module docstring)."""
    branches = _branches(node)
    file = scope.path.name
    ctx = scope.context()
    start = None
    for index, branch in enumerate(branches):
        value = True if branch.test is None else evaluate(branch.test, ctx)
        if value is UNKNOWN:
            start = index
            break
        if value:
            why = "its test is" if branch.test is not None else "the tests before it are"
            why += " true" if branch.test is not None else " false"
            note = f"took {_label(branches, index, file)}: {why} with the installed Triton {triton_version()} " \
                   "and the variables unset"
            for statement, inner_notes in _walk(branch.body, scope, ()):
                yield statement, notes + _named(statement, note) + inner_notes
            return
    if start is None:
        return  # every test is false and there is no else
    candidates = branches[start:]
    probed: list[list[tuple[ast.stmt, tuple[str, ...], dict[str, bool]]]] = []
    for branch in candidates:
        inner = scope.copy()
        items = []
        for statement, inner_notes in _walk(branch.body, inner, ()):
            items.append((statement, inner_notes, _resolves(statement, inner)))  # before ``see`` runs
        probed.append(items)
    last: dict[tuple[int, str], int] = {}
    for b, items in enumerate(probed):
        for k, (_, _, resolved) in enumerate(items):
            for name in resolved:
                last[(b, name)] = k
    chosen: dict[str, int] = {}
    for (b, name), k in sorted(last.items()):
        if name not in chosen and probed[b][k][2][name]:
            chosen[name] = b
    for (b, name), k in sorted(last.items()):  # a flag no branch resolves: its first assignment, to guess
        if name not in chosen and is_flag_name(name) and isinstance(probed[b][k][0], (ast.Assign, ast.AnnAssign)):
            chosen[name] = b
    for b, items in enumerate(probed):
        for k, (statement, inner_notes, resolved) in enumerate(items):
            names = [n for n in resolved if chosen.get(n) == b and last[(b, n)] == k]
            if not names:
                continue
            statement = _only(statement, names)
            note = _named(statement, f"took {_label(branches, start + b, file)}, not evaluated")
            yield statement, notes + note + inner_notes
            scope.see(statement)


def _named(statement: ast.stmt, note: str) -> tuple[Choice, ...]:
    """``note`` preceded by the names ``statement`` binds; none for ``import triton...`` (the same
    module whichever branch imports it)."""
    if isinstance(statement, ast.Import) and all(a.name.split(".", 1)[0] in CHECKED_ROOTS for a in statement.names):
        return ()
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        names = [a.asname or a.name.split(".", 1)[0] for a in statement.names]
    else:
        names = bound_by(statement)
    return (Choice(", ".join(f"`{n}`" for n in names) + f": {note}" if names else note),)


def _only(statement: ast.stmt, names: list[str]) -> ast.stmt:
    """An import statement reduced to the aliases binding ``names``."""
    if not isinstance(statement, (ast.Import, ast.ImportFrom)):
        return statement
    kept = [a for a in statement.names if (a.asname or a.name.split(".", 1)[0]) in names]
    if len(kept) == len(statement.names):
        return statement
    if isinstance(statement, ast.Import):
        return ast.copy_location(ast.Import(names=kept), statement)
    return ast.copy_location(ast.ImportFrom(module=statement.module, names=kept, level=statement.level), statement)


def _resolves(statement: ast.stmt, scope: _Scope) -> dict[str, bool]:
    """For each name ``statement`` binds: whether kernelrules can give it its value."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {alias.asname or alias.name.split(".", 1)[0]: _import_resolves(statement, alias, scope)
                for alias in statement.names if alias.name != "*"}
    if isinstance(statement, ast.FunctionDef):
        return {statement.name: is_jit(statement)}
    target = assignment_target(statement)
    if target is not None:
        value = target[1]
        ok = is_constant_expr(value, scope.constants, set(scope.aliases)) and all(
            triton_object(n, scope.aliases.get)[0] is not False for n in ast.walk(value) if isinstance(n, ast.Attribute))
        return {target[0]: ok}
    return {name: False for name in bound_by(statement)}


def _import_resolves(statement: ast.stmt, alias: ast.alias, scope: _Scope) -> bool:
    """Whether one imported name exists: in the installed Triton, or in the package."""
    if isinstance(statement, ast.Import):
        if alias.name.split(".", 1)[0] in CHECKED_ROOTS:
            return provides(alias.name)
        return module_file(scope.path, alias.name, 0, scope.roots) is not None
    assert isinstance(statement, ast.ImportFrom)
    if statement.level == 0 and (statement.module or "").split(".", 1)[0] in CHECKED_ROOTS:
        return provides(statement.module, alias.name)
    found = module_file(scope.path, statement.module, statement.level, scope.roots)
    if found is None:
        return False
    inner = scope.reader.names(found)
    if alias.name in inner.defined or alias.name in inner.imports:
        return isinstance(scope.reader.resolve(found, alias.name, scope.roots), Target)
    return found.name == "__init__.py" and module_path(found.parent, [alias.name]) is not None
