"""Module-level values computed at import time that kernelrules can still decide, without running them.

:func:`kernelrules.discover.pkgvalues.evaluate` decides literals, environment reads and Triton
attributes; this module adds what real packages compute their kernels' globals with
(:func:`compute`, the evaluator's :attr:`~kernelrules.discover.pkgvalues.Reader.compute`):

* ``a if test else b``, ``bool``/``int``/``float``/``str`` of a known value, ``x.bit_length()``,
  ``tl.constexpr(x).value``, and attributes of Triton objects (``tl_extra_shim.tanh`` where
  ``tl_extra_shim`` is ``triton.language.extra.libdevice``);
* calls of the package's own functions, interpreted from their syntax tree: ``return``, ``if``,
  ``try`` (its body), local assignments, with the call's arguments bound (``exp = get_exp()``
  returning ``tl.exp`` or ``libdevice.fast_expf`` by an environment variable; ``is_hip()``);
  loops and string building go through the config interpreter
  (:class:`kernelrules.discover.autotune_eval.ConfigEvaluator`: ``s_softplus =
  tl.constexpr(_generate_softplus(1))``). A function with other decorators than ``lru_cache``, or
  one that reads a global some function rebinds with ``global``, is not interpreted;
* the target platform's facts (:mod:`kernelrules.discover.targetfacts`): ``torch.version.hip`` is
  None and Triton's active backend is ``"cuda"`` when the lint is for NVIDIA GPUs.

:func:`global_value` gives the value of one such global with a note for the kernel's report; a
name an ``except ImportError`` handler binds (``try: X = <vendor module> except ImportError: X =
triton.language.extra.libdevice``) whose ``try`` value kernelrules cannot compute gets the
handler's value, labelled a guess. Nothing of the package is imported or run.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from ..bounds import TooLarge, check_binop
from ..expr.pyops import BINARY, UNARY
from .pkgcalls import call_function
from .pkgfiles import Target, bound_by
from .pkgvalues import UNKNOWN, Context, Reader, evaluate, file_context, flag_value, is_flag_name, short
from .pysource import read_python
from .targetfacts import NO_FACT, fact, fact_note, target_backend
from ..triton_installed import MISSING, attribute, import_binding, module, triton_object, triton_version

#: Builtins applied to known values (when the module does not rebind the name).
_BUILTINS = {"bool": bool, "int": int, "float": float, "str": str, "abs": abs, "min": min, "max": max}
#: Methods without arguments applied to known ``int`` / ``str`` values.
_METHODS = {int: ("bit_length",), str: ("lower", "upper", "strip")}
#: Plain data arithmetic applies to.
_DATA = (bool, int, float, str, type(None), tuple, list)


# --------------------------------------------------------------------------- expressions


def compute(node: ast.expr, ctx: Context) -> Any:
    """The value of ``node`` beyond what :func:`~kernelrules.discover.pkgvalues.evaluate` decides itself,
    or :data:`~kernelrules.discover.pkgvalues.UNKNOWN` (module docstring)."""
    text = _canonical(node, ctx)
    if text is not None:
        value = fact(text)
        if value is not NO_FACT:
            note = fact_note(text, value)
            if note not in ctx.facts:
                ctx.facts.append(note)
            return value
    if isinstance(node, ast.Name):
        return _fallback_name(node.id, ctx)
    if isinstance(node, ast.IfExp):
        test = evaluate(node.test, ctx)
        return UNKNOWN if test is UNKNOWN else evaluate(node.body if test else node.orelse, ctx)
    if isinstance(node, ast.Attribute):
        found, obj = triton_object(node, ctx.lookup)
        if found is not None:
            return obj if found else UNKNOWN
        base = evaluate(node.value, ctx)
        if base is UNKNOWN:
            return UNKNOWN
        if node.attr == "value" and isinstance(base, (bool, int, float, str)):
            return base  # ``tl.constexpr(x).value``: evaluate reads ``tl.constexpr(x)`` as x
        if _is_triton(base):
            got = attribute(base, node.attr)
            return UNKNOWN if got is MISSING else got
        return UNKNOWN
    if isinstance(node, ast.Call):
        return _call(node, ctx)
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY and type(node.op) is not ast.MatMult:
        left, right = evaluate(node.left, ctx), evaluate(node.right, ctx)
        if left is UNKNOWN or right is UNKNOWN or not isinstance(left, _DATA) or not isinstance(right, _DATA):
            return UNKNOWN
        try:
            check_binop(node.op, left, right)
            return BINARY[type(node.op)](left, right)
        except (TooLarge, TypeError, ValueError, ArithmeticError):
            return UNKNOWN
    if isinstance(node, ast.UnaryOp) and type(node.op) in (ast.USub, ast.UAdd, ast.Invert):
        operand = evaluate(node.operand, ctx)
        try:
            return UNKNOWN if operand is UNKNOWN else UNARY[type(node.op)](operand)
        except TypeError:
            return UNKNOWN
    return UNKNOWN


def _fallback_name(name: str, ctx: Context) -> Any:
    """A global an ``except ImportError`` handler binds (in ``ctx``'s file or the one it is imported
    from), given the handler's value; the guess is noted in ``ctx.guesses``."""
    if name in ctx.locals:
        return UNKNOWN
    names = ctx.reader.names(ctx.path)
    where, there = ctx.path, name
    if name not in names.defined:
        target = ctx.reader.resolve(ctx.path, name, ctx.roots) if name in names.imports else None
        if not isinstance(target, Target) or target.name is None:
            return UNKNOWN
        where, there = target.path, target.name
    other = replace(file_context(Path(where), ctx.roots, ctx.depth + 1, ctx.reader), facts=ctx.facts,
                    guesses=ctx.guesses)
    found = _handler_value(Path(where), there, ctx.reader.names(Path(where)), other)
    if found is None:
        return UNKNOWN
    value, line, _ = found
    note = (f"guessed `{there}` ({Path(where).name}) = {_shown(value)}: the `except ImportError` fallback at "
            f"{Path(where).name}:{line}; the `try` body computes it with code kernelrules does not run")
    if note not in ctx.guesses:
        ctx.guesses.append(note)
    return value


def _is_triton(obj: Any) -> bool:
    """Whether ``obj`` is a module or object of the installed Triton."""
    name = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None) or ""
    return isinstance(name, str) and name.split(".", 1)[0] == "triton"


def _canonical(node: ast.expr, ctx: Context) -> str | None:
    """``torch.version.hip`` for a read of ``th.version.hip`` after ``import torch as th`` (calls
    without arguments kept as ``()``), or None when ``node`` is no such chain from an imported module."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append("." + node.attr)
            node = node.value
        elif isinstance(node, ast.Call) and not node.args and not node.keywords:
            parts.append("()")
            node = node.func
        else:
            break
    if not parts or not isinstance(node, ast.Name) or node.id in ctx.locals:
        return None
    statement = ctx.imported(node.id)
    root = None
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname == node.id:
                root = alias.name
            elif alias.asname is None and alias.name.split(".", 1)[0] == node.id:
                root = node.id
    bound = ctx.lookup(node.id)
    if bound is not None:
        root = bound[0] + (f".{bound[1]}" if bound[1] else "")
    return None if root is None else root + "".join(reversed(parts))


def _call(node: ast.Call, ctx: Context) -> Any:
    """A call of a builtin, a method of a known value, or a function of the package."""
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return UNKNOWN
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in {m for ms in _METHODS.values() for m in ms} \
            and not node.args and not node.keywords:
        base = evaluate(func.value, ctx)
        methods = _METHODS.get(type(base), ())
        return getattr(base, func.attr)() if func.attr in methods else UNKNOWN
    if not isinstance(func, ast.Name):
        return UNKNOWN
    name = func.id
    if name in _BUILTINS and name not in ctx.locals and ctx.assigned(name) is None and ctx.imported(name) is None \
            and not _defines(ctx, name):
        args = [evaluate(a, ctx) for a in node.args]
        if UNKNOWN in args or node.keywords:
            return UNKNOWN
        try:
            return _BUILTINS[name](*args)
        except (TypeError, ValueError, OverflowError):
            return UNKNOWN
    found = _function(ctx, name)
    if found is None:
        return UNKNOWN
    where, definition = found
    args = [evaluate(a, ctx) for a in node.args]
    kwargs = {k.arg: evaluate(k.value, ctx) for k in node.keywords}
    if UNKNOWN in args or UNKNOWN in kwargs.values():
        return UNKNOWN
    return call_function(where, definition, args, kwargs, ctx)


def _defines(ctx: Context, name: str) -> bool:
    """Whether ``ctx``'s file binds ``name`` at module level (a ``def`` shadowing a builtin)."""
    return name in ctx.reader.names(ctx.path).defined


def _function(ctx: Context, name: str) -> tuple[Path, ast.FunctionDef] | None:
    """The ``def`` global ``name`` of ``ctx``'s file stands for: its own, or one it imports from the package."""
    if name in ctx.locals:
        return None
    names = ctx.reader.names(ctx.path)
    if isinstance(names.defined.get(name), ast.FunctionDef):
        return ctx.path, names.defined[name]
    if name not in names.imports:
        return None
    target = ctx.reader.resolve(ctx.path, name, ctx.roots)
    if not isinstance(target, Target) or target.name is None:
        return None
    statement = ctx.reader.names(target.path).defined.get(target.name)
    return (target.path, statement) if isinstance(statement, ast.FunctionDef) else None


# --------------------------------------------------------------------------- globals of a module


@dataclass(frozen=True)
class Computed:
    """The value kernelrules gives a global computed at import time, and the note that says how."""

    value: Any
    note: str
    #: True when nothing decided it (a flag guessed ``False``, an ``except ImportError`` fallback).
    guessed: bool
    #: True when the module wraps it (``X = tl.constexpr(...)``), as a kernel body needs to read it.
    constexpr: bool = False
    #: Stable text of the value, for the source hash and messages (``tl.exp``, ``True``).
    shown: str = ""

    def bound(self) -> Any:
        """The object to bind into the rebuilt module."""
        if self.constexpr:
            language = module("triton.language")
            if language is not None and not isinstance(self.value, language.constexpr):
                return language.constexpr(self.value)
        return self.value


def global_value(path: Path, name: str, roots: Sequence[Path], reader: Reader) -> Computed | None:
    """The :class:`Computed` value of global ``name`` of ``path``, when kernelrules can decide it (or, for
    a flag-named global or an ``except ImportError`` fallback, guess it); None otherwise."""
    path = Path(path).resolve()
    names = reader.names(path)
    statement = names.defined.get(name)
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        return None
    ctx = file_context(path, tuple(roots), 0, reader)
    shown_name = f"`{name}` ({path.name})"
    wrapped = _wrapped(statement.value, ctx)
    if name not in names.uncertain:
        value = evaluate(statement.value, ctx)
        if value is not UNKNOWN and is_flag_name(name):
            value = value if isinstance(value, bool) else bool(value)
        if value is not UNKNOWN and _bindable(value):
            how = f"`{short(statement.value)}` on the installed Triton {triton_version()} with the variables unset"
            if ctx.facts:
                how += " (" + "; ".join(ctx.facts) + ")"
            if ctx.guesses:
                return Computed(value, f"guessed {shown_name} = {_brief(value)}: {how}, where "
                                       + "; ".join(ctx.guesses), True, wrapped, _shown(value))
            return Computed(value, f"{shown_name} = {_brief(value)}: {how}", False, wrapped, _shown(value))
    fallback = _handler_value(path, name, names, replace(ctx, guesses=[]))
    if fallback is not None:
        value, line, node = fallback
        return Computed(value, f"guessed {shown_name} = {_shown(value)}: the `except ImportError` fallback at "
                               f"{path.name}:{line}; the `try` body computes it with code kernelrules does not run",
                        True, _wrapped(node, ctx), _shown(value))
    flag = flag_value(path, name, roots, reader)
    if flag is not None:
        return Computed(flag.value, flag.note, flag.guessed, flag.constexpr, str(flag.value))
    return None


def _wrapped(node: ast.expr, ctx: Context) -> bool:
    """Whether ``node`` is ``tl.constexpr(...)``."""
    if not isinstance(node, ast.Call):
        return False
    language = module("triton.language")
    return language is not None and triton_object(node.func, ctx.lookup)[1] is getattr(language, "constexpr", None)


def _bindable(value: Any) -> bool:
    """Plain data, or an object of the installed Triton (module, function, dtype)."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return True
    return _is_triton(value) and not isinstance(value, type)


def _shown(value: Any) -> str:
    """Stable text for ``value`` (no memory addresses)."""
    if isinstance(value, types.ModuleType):
        return value.__name__
    language = module("triton.language")
    if language is not None and isinstance(value, language.dtype):
        named = [n for n in sorted(vars(language)) if not n.startswith("_") and vars(language)[n] is value]
        return f"tl.{named[0]}" if named else f"tl.dtype({str(value)!r})"
    if callable(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', getattr(value, '__name__', '?'))}"
    return repr(value)


def _brief(value: Any, limit: int = 60) -> str:
    """:func:`_shown` cut to ``limit`` characters, for a note (an inline-asm string is long)."""
    text = _shown(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _handler_value(path: Path, name: str, names: Any, ctx: Context) -> tuple[Any, int, ast.expr] | None:
    """The value an ``except ImportError`` handler of a module-level ``try`` binds ``name`` to, where the
    ``try`` body's own value is unknown: ``(value, line, expression)``, or None."""
    if name not in names.uncertain:
        return None
    try:
        tree = ast.parse(read_python(path))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if not isinstance(node, ast.Try):
            continue
        body_binds = [s for s in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                      if isinstance(s, (ast.Assign, ast.AnnAssign)) and name in bound_by(s)]
        if not body_binds:
            continue
        for handler in node.handlers:
            if not _catches_import_error(handler):
                continue
            inner = _with_imports(ctx, _first_tries(handler.body))
            for statement in _first_tries(handler.body):
                if isinstance(statement, (ast.Assign, ast.AnnAssign)) and name in bound_by(statement) \
                        and statement.value is not None:
                    value = evaluate(statement.value, inner)
                    if value is not UNKNOWN and _bindable(value):
                        return value, statement.lineno, statement.value
                    break
    return None


def _with_imports(ctx: Context, body: Sequence[ast.stmt]) -> Context:
    """``ctx`` where the Triton imports of ``body`` (a handler's ``import triton``) are bound too."""
    statements = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]

    def lookup(local: str) -> Any:
        for statement in statements:
            bound = import_binding(statement, local)
            if bound is not None:
                return bound
        return ctx.lookup(local)

    return replace(ctx, lookup=lookup)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in ("ImportError", "ModuleNotFoundError") for k in kinds)


def _first_tries(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    """``body`` with each ``try`` read as its body (the first thing a fallback tries)."""
    out: list[ast.stmt] = []
    for statement in body:
        out.extend(_first_tries(statement.body) if isinstance(statement, ast.Try) else [statement])
    return out


def cache_key() -> str | None:
    """What the values decided here depend on besides the files: the target backend."""
    return target_backend()
