"""Values of module-level expressions, decided from source and the installed Triton; flags.

kernelrules never runs a package's module code, but some module-level values can be known
without it: literals, environment reads with the variables unset (as a default launch sees
them), ``hasattr(tl, "gather")`` asked of the installed Triton, ``not`` / ``and`` / ``or`` of
those, and globals defined so (followed into other modules of the package). :func:`evaluate`
gives such a value or :data:`UNKNOWN`; :mod:`kernelrules.discover.pkgbranches` decides ``if`` tests
with it.

A global computed at import time whose name says it is a flag (``IS_*``, ``HAS_*``,
``USE_*``, ``ENABLE_*``, ``*_SUPPORTED``, ``*_AVAILABLE``, any case, leading underscores
ignored) that a kernel reads gets that value, else ``False`` by guess (:func:`flag_value`),
with a note saying which, so that the kernel can be built; other computed globals stay
unresolved (the kernel is ``needs-spec``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .pkgfiles import Target, env_value, module_file
from ..triton_installed import MISSING, Binding, attribute, import_binding, module, triton_object, triton_version

#: Names that say a global is a boolean flag (after leading underscores, any case).
_FLAG = re.compile(r"^(?:IS|HAS|USE|ENABLE)_|_(?:SUPPORTED|AVAILABLE)$", re.IGNORECASE)

#: What :func:`evaluate` returns for an expression whose value kernelrules cannot know.
UNKNOWN = object()


# --------------------------------------------------------------------------- deciding values


@dataclass(frozen=True)
class Reader:
    """How the module-level names of another file of the package are read: ``names(path)`` gives what
    the file binds (:func:`kernelrules.discover.pkgsource.file_names`), ``resolve(path, name, roots)``
    where a name of it comes from (:func:`kernelrules.discover.pkgsource.resolve`).

    Reading a file's names chooses its branches with this module's values
    (:mod:`kernelrules.discover.pkgbranches`), so pkgsource passes its functions in
    (:data:`kernelrules.discover.pkgsource.READER`) instead of this module importing it.
    """

    names: Callable[[Path], Any]
    resolve: Callable[[Path, str, Sequence[Path]], Any]
    #: What :func:`evaluate` asks about an expression it does not decide itself (calls of the package's
    #: functions, target platform facts: :func:`kernelrules.discover.pkgcompute.compute`), or None.
    compute: Callable[[ast.expr, "Context"], Any] | None = None


@dataclass
class Context:
    """Where an expression is read: its file, the search roots and what its names are bound to."""

    path: Path
    roots: tuple[Path, ...]
    lookup: Callable[[str], Binding | None]
    assigned: Callable[[str], ast.expr | None]
    imported: Callable[[str], ast.stmt | None]
    #: How other files of the package are read (globals imported from them are followed).
    reader: Reader
    depth: int = 0
    #: Values of local names (the parameters and locals of a package function being interpreted).
    locals: dict[str, Any] = field(default_factory=dict)
    #: Notes of the target platform facts the evaluation used (shared by the contexts it derives).
    facts: list[str] = field(default_factory=list)
    #: Notes of the guesses the value rests on (an ``except ImportError`` fallback), shared likewise.
    guesses: list[str] = field(default_factory=list)


def file_context(path: Path, roots: tuple[Path, ...], depth: int, reader: Reader) -> Context:
    """The context of a module-level expression of another (already read) file."""
    names = reader.names(path)

    def lookup(local: str) -> Binding | None:
        statement = names.imports.get(local)
        return import_binding(statement, local) if statement is not None else None

    def assigned(name: str) -> ast.expr | None:
        if name in names.uncertain:
            return None  # also bound by an ``except`` handler: its value depends on what fails
        statement = names.defined.get(name)
        return statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None  # type: ignore[return-value]

    return Context(path, roots, lookup, assigned, names.imports.get, reader, depth)


_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
            ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}


def evaluate(node: ast.expr, ctx: Context) -> Any:
    """The value of a module-level expression on the installed Triton with the environment unset,
    or :data:`UNKNOWN`. Other globals are followed into their definitions (also across files)."""
    is_env, env = env_value(node)
    if is_env:
        return env
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = evaluate(node.operand, ctx)
        return inner if inner is UNKNOWN else not inner
    if isinstance(node, ast.BoolOp):
        values = [evaluate(v, ctx) for v in node.values]
        decisive = (lambda v: not v) if isinstance(node.op, ast.And) else bool
        for value in values:
            if value is not UNKNOWN and decisive(value):
                return value  # one known falsy operand of ``and`` (truthy of ``or``) decides it
        return UNKNOWN if UNKNOWN in values else values[-1]
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        if isinstance(node.ops[0], (ast.In, ast.NotIn)) and ast.unparse(node.comparators[0]) in ("os.environ", "environ"):
            return isinstance(node.ops[0], ast.NotIn)
        left, right = evaluate(node.left, ctx), evaluate(node.comparators[0], ctx)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            return _COMPARE[type(node.ops[0])](left, right)
        except TypeError:
            return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr" \
            and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        found, obj = triton_object(node.args[0], ctx.lookup)
        return attribute(obj, node.args[1].value) is not MISSING if found else UNKNOWN
    if isinstance(node, ast.Name):
        value = _name_value(node.id, ctx)
        if value is UNKNOWN and ctx.reader.compute is not None and ctx.depth <= 8:
            return ctx.reader.compute(node, ctx)
        return value
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords \
            and triton_object(node.func, ctx.lookup)[1] is _constexpr():  # ``tl.constexpr(x)`` is x
        return evaluate(node.args[0], ctx)
    if ctx.reader.compute is not None:
        return ctx.reader.compute(node, ctx)
    return UNKNOWN


def _constexpr() -> Any:
    language = module("triton.language")
    return getattr(language, "constexpr", MISSING) if language is not None else MISSING


def _name_value(name: str, ctx: Context) -> Any:
    """The value of global ``name`` read in ``ctx`` (its definition in this file or the one it imports)."""
    if name in ctx.locals:
        return ctx.locals[name]
    if name == "__name__":
        return "<module>"  # a module being imported is never __main__
    if ctx.depth > 8:
        return UNKNOWN
    if ctx.lookup(name) is not None:  # a Triton (or math) import: the installed module's object
        found, obj = triton_object(ast.Name(id=name, ctx=ast.Load()), ctx.lookup)
        return obj if found else UNKNOWN
    defined = ctx.assigned(name)
    if defined is not None:
        return evaluate(defined, replace(ctx, depth=ctx.depth + 1, locals={}))  # a global: no function's locals
    statement = ctx.imported(name)
    if not isinstance(statement, ast.ImportFrom):
        return UNKNOWN
    alias = next(a for a in statement.names if (a.asname or a.name) == name)
    found = module_file(ctx.path, statement.module, statement.level, ctx.roots)
    target = None if found is None else ctx.reader.resolve(found, alias.name, ctx.roots)
    if not isinstance(target, Target) or target.name is None:
        return UNKNOWN
    other = replace(file_context(target.path, ctx.roots, ctx.depth + 1, ctx.reader), facts=ctx.facts,
                    guesses=ctx.guesses)
    defined = other.assigned(target.name)
    return UNKNOWN if defined is None else evaluate(defined, other)


# --------------------------------------------------------------------------- flags computed at import time


def is_flag_name(name: str) -> bool:
    """Whether a global's name says it is a boolean flag (``IS_X``, ``_HAS_Y``, ``Z_SUPPORTED``, ...)."""
    return bool(_FLAG.search(name.lstrip("_")))


@dataclass(frozen=True)
class Flag:
    """The value kernelrules gives a flag computed at import time, and the note that says how."""

    value: bool
    note: str
    #: True when nothing decided it (it is ``False`` by guess).
    guessed: bool
    #: True when the module wraps it (``IS_X = tl.constexpr(...)``), as a kernel body needs to read it.
    constexpr: bool = False


def flag_value(path: Path, name: str, roots: Sequence[Path], reader: Reader) -> Flag | None:
    """The :class:`Flag` for global ``name`` of ``path`` computed at import time, when its name says it is
    a flag: its value on the installed Triton with the environment unset where that decides it
    (``hasattr(triton.language, "gather")``), else ``False``, guessed. None for other globals.
    ``reader``: how files of the package are read (:data:`kernelrules.discover.pkgsource.READER`)."""
    if not is_flag_name(name):
        return None
    path = Path(path).resolve()
    ctx = file_context(path, tuple(roots), 0, reader)
    names = reader.names(path)
    statement = names.defined.get(name)
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        return None
    node = statement.value
    # A flag an ``except`` handler also binds depends on what fails to import: guessed, not decided.
    value = UNKNOWN if name in names.uncertain else evaluate(node, ctx)
    wrapped = isinstance(node, ast.Call) and triton_object(node.func, ctx.lookup)[1] is _constexpr()
    shown = f"`{name}` ({path.name})"
    if value is not UNKNOWN:
        value = value if isinstance(value, bool) else bool(value)
        return Flag(value, f"{shown} = {value}: `{short(node)}` on the installed Triton {triton_version()} "
                           "with the variables unset", False, wrapped)
    return Flag(False, f"guessed {shown} = False: it is computed at import time (`{short(node)}`), "
                       "which kernelrules does not run", True, wrapped)


def short(node: ast.AST | None, limit: int = 90) -> str:
    """``ast.unparse`` cut to ``limit`` characters for a note."""
    text = "" if node is None else ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."
