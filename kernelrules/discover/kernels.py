"""Find Triton kernels in Python files by reading them, never by running them.

:func:`discover` walks files and directories, parses each ``*.py`` file with
:mod:`ast` and returns every top-level function decorated with ``@triton.jit``
(under any import alias: ``import triton as tt``, ``from triton import jit``), and every
module-level name bound to a jit function made by calls (``NAME = triton.jit(f)``,
``NAME = triton.heuristics(...)(NAME)``: :mod:`kernelrules.discover.discover_calls`), with:

* its parameters (``tl.constexpr`` annotations marked), ``do_not_specialize``;
* its ``@triton.autotune`` configs, evaluated by the safe interpreter of
  :mod:`kernelrules.discover.autotune_eval`, with the source position of each
  ``triton.Config(...)`` call, the ``key`` and the ``prune_configs_by`` text;
* its ``@triton.heuristics`` lambdas (as source text);
* the jit helpers it calls in the same file and the module-level constants it reads.

Files that cannot be read or parsed, and autotune arguments that cannot be evaluated
statically, become :class:`Problem` entries; discovery itself never raises for them.

Why over 400 lines: discovery of kernels, their decorators and autotune configs, and the module
cache they share; the call-made jit functions are already in discover_calls.py.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from .autotune_eval import ConfigEvaluator, ConfigSite, ModuleScope, Unsupported
from .discover_calls import find_jit_calls
from .pyast import dotted_name, function_names
from .pyparse import parse_source
from .pysource import read_python

#: Directory names never descended into.
SKIPPED_DIRS = frozenset({"__pycache__", ".venv", "venv", "site-packages", "node_modules"})

#: Hint appended when configs cannot be evaluated statically.
CONFIGS_HINT = "use --import or a spec file"

#: Literal types a module-level constant may have to be reported in ``constexpr_globals``.
_LITERAL_TYPES = (int, float, bool, str, type(None), tuple)


@dataclass(frozen=True)
class Problem:
    """Something discovery could not read: a file, or part of a kernel's decorators."""

    path: Path
    line: int | None
    column: int | None
    message: str
    kind: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}" if self.line is not None else str(self.path)
        return f"{where}: {self.kind}: {self.message}"


@dataclass(frozen=True)
class Param:
    """One kernel parameter as written in the ``def``."""

    name: str
    position: int
    constexpr: bool
    annotation: str | None = None
    default: Any = None
    has_default: bool = False


@dataclass
class AutotuneInfo:
    """What ``@triton.autotune(...)`` says, as far as it can be read statically."""

    line: int
    configs: list[ConfigSite] = field(default_factory=list)
    key: list[str] = field(default_factory=list)
    prune_configs_by: str | None = None
    configs_error: str | None = None
    #: Column (0-based) of the decorator's call (``triton.autotune(...)``, after the ``@``).
    column: int = 0
    #: Argument names of ``reset_to_zero=[...]`` and ``restore_value=[...]`` (empty when not given).
    reset_to_zero: list[str] = field(default_factory=list)
    restore_value: list[str] = field(default_factory=list)
    #: Source text of ``pre_hook=`` / ``post_hook=`` when given (not ``None``): the user's own code runs
    #: around every timing run.
    pre_hook: str | None = None
    post_hook: str | None = None
    #: Why ``reset_to_zero``/``restore_value`` could not be read statically (None when they were).
    side_effect_lists_error: str | None = None


@dataclass
class DiscoveredKernel:
    """One ``@triton.jit`` function found in a file."""

    path: Path
    name: str
    line: int
    column: int
    decorator_line: int
    params: list[Param]
    do_not_specialize: list[str] = field(default_factory=list)
    autotune: AutotuneInfo | None = None
    heuristics: dict[str, str] = field(default_factory=dict)
    helpers: list[str] = field(default_factory=list)
    constexpr_globals: dict[str, Any] = field(default_factory=dict)
    #: Jit functions that call or reference this one (``file:name``); a jit function with
    #: callers and no ``@triton.autotune`` is a helper, not a launchable kernel.
    called_by: list[str] = field(default_factory=list)
    #: The function returns a value (``return x``): a launched kernel cannot, so it is a helper.
    returns_value: bool = False
    #: The ``def``'s own name (the JITFunction's ``__name__``, what a trace records); it differs
    #: from ``name`` for ``kernel = triton.jit(_impl)`` and for a kernel wrapped under another name.
    def_name: str = ""

    @property
    def is_helper(self) -> bool:
        """Whether another jit function calls or references this one, or it returns a value
        (a kernel launched from the host returns nothing); never when it is autotuned."""
        return (bool(self.called_by) or self.returns_value) and self.autotune is None

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        return next((p for p in self.params if p.name == name), None)

    @property
    def runtime_params(self) -> list[Param]:
        """Parameters that are not constexprs (the ones a launch signature types)."""
        return [p for p in self.params if not p.constexpr]


@dataclass
class DiscoveryResult:
    """Every kernel found, and every problem met on the way, in path and line order."""

    kernels: list[DiscoveredKernel] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def by_name(self, name: str) -> list[DiscoveredKernel]:
        """Kernels called ``name`` (one per file that defines it)."""
        return [k for k in self.kernels if k.name == name]


# --------------------------------------------------------------------------- files


def iter_python_files(paths: Sequence[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named, and ``*.py`` files under directories named, sorted and without duplicates."""
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        candidates = _walk(path) if path.is_dir() else [path]
        for candidate in candidates:
            key = _identity(candidate)
            if key not in seen:  # `x.py` and `dir/../x.py` (or a directory and a file in it): once
                seen.add(key)
                yield candidate


def _identity(path: Path) -> Path:
    """The file a path names, for duplicate checks (the path itself when it cannot be resolved)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return path


def _walk(root: Path) -> list[Path]:
    """``*.py`` files under ``root``, skipping hidden and tool directories."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return sorted(found)


# --------------------------------------------------------------------------- imports


@dataclass
class ImportTable:
    """Names a module binds by import, mapped to the dotted names they stand for."""

    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_module(cls, tree: ast.Module) -> "ImportTable":
        """Collect absolute imports at module level (also inside ``if``/``try`` blocks)."""
        table = cls()
        for node in _module_statements(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        table.aliases[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".", 1)[0]
                        table.aliases[root] = root
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    table.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return table

    def resolve(self, dotted: str) -> str:
        """The canonical dotted name of ``dotted`` as written (``tt.Config`` -> ``triton.Config``)."""
        first, dot, rest = dotted.partition(".")
        if first in self.aliases:
            return self.aliases[first] + dot + rest
        return dotted

    def canonical(self, node: ast.expr) -> str | None:
        """The canonical name of a Name/Attribute chain, or of a call's callee."""
        target = node.func if isinstance(node, ast.Call) else node
        dotted = dotted_name(target)
        return self.resolve(dotted) if dotted else None


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements at module level, descending into ``if``/``try``/``with`` but not into defs."""
    for node in body:
        yield node
        for attr in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and hasattr(node, attr):
                yield from _module_statements(getattr(node, attr))
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                yield from _module_statements(handler.body)


#: ``kernelrules.autotune`` takes ``triton.autotune``'s arguments (its own are keyword-only).
KERNELRULES_AUTOTUNE = frozenset({"kernelrules.autotune", "kernelrules.adapters.triton_autotune.autotune"})


def _is_triton(canonical: str | None, last: str) -> bool:
    """Whether ``canonical`` is ``triton.<...>.<last>``."""
    return bool(canonical) and canonical.split(".", 1)[0] == "triton" and canonical.rsplit(".", 1)[-1] == last


def is_constexpr_annotation(node: ast.expr | None, imports: ImportTable) -> bool:
    """Whether an annotation is ``tl.constexpr`` under any alias, bare ``constexpr``, or such a string."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    dotted = dotted_name(node)
    if dotted is None:
        return False
    # ``tl.constexpr`` is accepted even where ``tl`` is not imported (string annotations).
    return dotted in ("constexpr", "tl.constexpr") or _is_triton(imports.resolve(dotted), "constexpr")


# --------------------------------------------------------------------------- module


@dataclass
class ParsedModule:
    """One parsed file and the module-level names kernels and configs may use."""

    path: Path
    source: str
    tree: ast.Module
    imports: ImportTable
    constants: dict[str, ast.expr]
    jit_functions: dict[str, ast.FunctionDef]
    plain_functions: dict[str, ast.FunctionDef]
    history: dict[str, list[ast.expr]] = field(default_factory=dict)
    #: local name -> (file of the same package it is imported from, name there)
    import_sources: dict[str, tuple[Path, str]] = field(default_factory=dict)
    #: bound name -> its ``def``'s name, for jit functions made by calls
    def_names: dict[str, str] = field(default_factory=dict)

    def scope(self) -> ModuleScope:
        """What the config evaluator may read from this module (and, lazily, from its package)."""
        return ModuleScope(self.constants, self.plain_functions, self.imports.resolve,
                           history=self.history, imported=self._imported)

    def _imported(self, name: str) -> tuple[ModuleScope, str] | None:
        """The scope of the same-package module ``name`` is imported from, and its name there."""
        source = self.import_sources.get(name)
        if source is None:
            return None
        other = _cached_module(source[0])
        return (other.scope(), source[1]) if other is not None else None

    def loads(self, name: str) -> dict[str, None]:
        """The names jit function ``name`` reads (``ast.Name`` loads), each once, in :func:`ast.walk` order;
        walked once per function (discovery asks for each function's helpers, globals and links)."""
        return self._names(name)[0]

    def global_loads(self, name: str) -> set[str]:
        """:func:`kernelrules.discover.pyast.global_loads` of jit function ``name``, from the same walk."""
        return self._names(name)[1]

    def _names(self, name: str) -> tuple[dict[str, None], set[str]]:
        memo = self.__dict__.setdefault("_function_names", {})
        found = memo.get(name)
        if found is None:
            found = memo[name] = function_names(self.jit_functions[name])
        return found

    def segment(self, node: ast.AST) -> str:
        """Source text of ``node`` (the file's lines are split once, not on every call)."""
        lines = self.__dict__.get("_lines")
        if lines is None:
            lines = self.__dict__["_lines"] = self.source.splitlines(keepends=True)
        try:
            first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
            start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except AttributeError:
            return ast.unparse(node)
        if end is None or last is None or not (0 <= first <= last < len(lines)):
            return ast.unparse(node)
        if first == last:
            text = lines[first].encode()[start:end].decode(errors="replace")
        else:
            text = (lines[first].encode()[start:].decode(errors="replace") + "".join(lines[first + 1:last])
                    + lines[last].encode()[:end].decode(errors="replace"))
        return text or ast.unparse(node)


def parse_module(path: Path, source: str) -> ParsedModule:
    """Parse ``source`` (raises :class:`SyntaxError`) and index its module-level names."""
    tree = parse_source(source, str(path))
    imports = ImportTable.from_module(tree)
    constants: dict[str, ast.expr] = {}
    history: dict[str, list[ast.expr]] = {}
    jit: dict[str, ast.FunctionDef] = {}
    plain: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = node.value
            history.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            constants[node.target.id] = node.value
            history.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.FunctionDef):
            (jit if _is_jit_def(node, imports) else plain)[node.name] = node
    def_names = _add_jit_calls(tree, imports, jit, plain, constants)
    return ParsedModule(path, source, tree, imports, constants, jit, plain, history, _import_sources(path, tree),
                        def_names)


def _is_jit_def(node: ast.FunctionDef, imports: ImportTable) -> bool:
    """Whether a ``def`` carries ``@triton.jit`` (under any alias)."""
    return any(_is_triton(imports.canonical(d), "jit") for d in node.decorator_list)


def _add_jit_calls(tree: ast.Module, imports: ImportTable, jit: dict[str, ast.FunctionDef],
                   plain: dict[str, ast.FunctionDef], constants: dict[str, ast.expr]) -> dict[str, str]:
    """Index jit functions made by calls (``NAME = triton.jit(f)``, :mod:`kernelrules.discover.discover_calls`)
    under the name the module binds, as if their decorators were written on the ``def``; their ``def`` names."""
    def classify(node: ast.expr) -> str | None:
        canonical = imports.canonical(node)
        if canonical in KERNELRULES_AUTOTUNE:
            return "autotune"
        return next((kind for kind in ("jit", "autotune", "heuristics") if _is_triton(canonical, kind)), None)

    calls, _ = find_jit_calls(tree.body, classify, lambda node: _is_jit_def(node, imports))
    for name, call in calls.items():
        jit[name] = call.as_function()
        plain.pop(name, None)
        constants.pop(name, None)
    return {name: call.func.name for name, call in calls.items()}


def _module_file(path: Path, module: str, level: int) -> Path | None:
    """The file of ``module`` imported from ``path``: relative (``level`` > 0) or absolute within an ancestor.

    Only files next to ``path`` or under one of its ancestor directories are considered
    (the package being linted); nothing is imported or installed.
    """
    parts = [p for p in module.split(".") if p]
    if level > 0:
        bases = [path.parent.parents[level - 2] if level >= 2 else path.parent] if level - 2 < len(path.parent.parents) else []
    else:
        bases = [path.parent, *path.parent.parents]
        if not parts:
            return None
    own: str | None = None  # the importing file, resolved once it matters
    for base in bases:  # (os.path on strings: a large package makes thousands of these probes)
        target = os.path.join(base, *parts)
        for candidate in ([target + ".py"] if parts else []) + [os.path.join(target, "__init__.py")]:
            if os.path.isfile(candidate):
                own = own or os.path.realpath(path)
                if os.path.realpath(candidate) != own:
                    return Path(candidate)
        if level == 0 and parts and os.path.isdir(os.path.join(base, parts[0])):
            return None  # the package root: no other ancestor can hold it
    return None


def _import_sources(path: Path, tree: ast.Module) -> dict[str, tuple[Path, str]]:
    """``from [.]pkg.mod import name [as alias]`` at module level, for files of the same package."""
    sources: dict[str, tuple[Path, str]] = {}
    for node in _module_statements(tree.body):
        if not isinstance(node, ast.ImportFrom) or (node.level == 0 and not node.module):
            continue
        if node.level == 0 and node.module.split(".", 1)[0] in ("triton", "torch", "os", "itertools", "typing"):
            continue
        pending = [(alias.asname or alias.name, alias.name) for alias in node.names if alias.name != "*"]
        if not pending:
            continue
        try:
            found = _module_file(path, node.module or "", node.level)
        except (OSError, ValueError, IndexError):
            found = None
        if found is not None:
            for local, there in pending:
                sources[local] = (found, there)
    return sources


_MODULE_CACHE: dict[tuple, "ParsedModule | Problem | _Resolvable"] = {}
_MODULE_CACHE_SIZE = 2048


def cached_module(path: str | Path, *, needs: str | None = None) -> "ParsedModule | Problem | None":
    """:func:`read_module`, parsed once per file version (path, mtime and size).

    Discovery, signature inference and lint all read the kernel's file; with many
    kernels per file that was a parse per kernel and per step. ``needs``: as for
    :func:`read_module` (None, unparsed and not cached, when the text lacks it).
    """
    try:
        path = Path(path).resolve()
        stat = path.stat()
        key = (path, stat.st_mtime_ns, stat.st_size)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11's resolve)
        return read_module(Path(path), needs=needs)
    if key not in _MODULE_CACHE:
        parsed = read_module(path, needs=needs)
        if parsed is None:
            return None
        if len(_MODULE_CACHE) >= _MODULE_CACHE_SIZE:
            _MODULE_CACHE.clear()
        _MODULE_CACHE[key] = parsed
    found = _MODULE_CACHE[key]
    if isinstance(found, _Resolvable):
        found = _MODULE_CACHE[key] = found.resolved()
    if needs is not None and isinstance(found, ParsedModule) and needs not in found.source:
        return None
    return found


@dataclass(frozen=True)
class _Resolvable:
    """A module discovery parsed under the path as given, filed under its resolved path: its imports are
    looked up again from the resolved path only when a reader asks for it (on a warm lint, none does, and
    the lookups were a fifth of discovering a large package)."""

    module: "ParsedModule"
    path: Path

    def resolved(self) -> "ParsedModule":
        return dataclasses.replace(self.module, path=self.path,
                                   import_sources=_import_sources(self.path, self.module.tree))


def _remember(module: ParsedModule) -> None:
    """Let :func:`cached_module` answer with a module discovery parsed (named by the path as given), instead of
    indexing the file again: the same module under the resolved path."""
    try:
        path = module.path.resolve()
        stat = path.stat()
    except (OSError, RuntimeError):
        return
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key in _MODULE_CACHE or stat.st_size != len(module.source.encode("utf-8", "surrogatepass")):
        return  # known already, or not the text read (a file changed since, or decoded from another encoding)
    if len(_MODULE_CACHE) >= _MODULE_CACHE_SIZE:
        _MODULE_CACHE.clear()
    _MODULE_CACHE[key] = module if path == module.path else _Resolvable(module, path)


def _cached_module(path: Path) -> "ParsedModule | None":
    """A parsed module of the same package (None when unreadable)."""
    parsed = cached_module(path)
    return parsed if isinstance(parsed, ParsedModule) else None


def read_module(path: Path, *, needs: str | None = None) -> ParsedModule | Problem | None:
    """Read and parse one file, or the :class:`Problem` that prevented it; None, without parsing,
    when ``needs`` is given and the text does not contain it."""
    try:
        source = read_python(path)
    except (OSError, UnicodeDecodeError) as exc:
        return Problem(path, None, None, f"cannot read file: {exc}", "unreadable-file")
    if needs is not None and needs not in source:
        return None
    try:
        return parse_module(path, source)
    except SyntaxError as exc:
        return Problem(path, exc.lineno, exc.offset, f"syntax error: {exc.msg}", "syntax-error")
    except (ValueError, RecursionError) as exc:  # null bytes, absurd nesting
        return Problem(path, None, None, f"cannot parse file: {exc}", "syntax-error")
    except MemoryError:  # CPython's parser reports a stack overflow (200,000 nested unary minus) so
        return Problem(path, None, None, "cannot parse file: nested too deeply for Python's parser", "syntax-error")


# --------------------------------------------------------------------------- kernels


def _params(func: ast.FunctionDef, imports: ImportTable, module: ParsedModule) -> list[Param]:
    """The function's parameters in order, with constexpr flags and literal defaults."""
    spec = func.args
    positional = [*spec.posonlyargs, *spec.args]
    defaults: dict[str, ast.expr] = dict(zip([a.arg for a in positional[len(positional) - len(spec.defaults):]], spec.defaults))
    defaults.update({a.arg: d for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is not None})
    params = []
    for position, arg in enumerate([*positional, *spec.kwonlyargs]):
        default_node = defaults.get(arg.arg)
        default: Any = None
        if default_node is not None:
            try:
                default = ast.literal_eval(default_node)
            except (ValueError, SyntaxError, TypeError):
                default = None
        params.append(Param(
            name=arg.arg, position=position,
            constexpr=is_constexpr_annotation(arg.annotation, imports),
            annotation=module.segment(arg.annotation) if arg.annotation is not None else None,
            default=default, has_default=default_node is not None,
        ))
    return params


def _do_not_specialize(decorator: ast.expr, params: list[Param], module: ParsedModule, problems: list[Problem]) -> list[str]:
    """Names from ``@triton.jit(do_not_specialize=[...])``; indices become names."""
    if not isinstance(decorator, ast.Call):
        return []
    names: list[str] = []
    for kw in decorator.keywords:
        if kw.arg != "do_not_specialize":
            continue
        try:
            items = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError):
            problems.append(Problem(module.path, kw.value.lineno, kw.value.col_offset,
                                    "do_not_specialize is not a literal list", "unparseable-jit-options"))
            continue
        for item in items if isinstance(items, (list, tuple)) else [items]:
            if isinstance(item, int) and 0 <= item < len(params):
                names.append(params[item].name)
            elif isinstance(item, str) and any(p.name == item for p in params):
                names.append(item)
            else:
                problems.append(Problem(module.path, kw.value.lineno, kw.value.col_offset,
                                        f"do_not_specialize names no parameter: {item!r}", "unparseable-jit-options"))
    return names


def _call_argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """A call's argument given by keyword ``name`` or at ``position``."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _autotune(decorator: ast.Call, module: ParsedModule, problems: list[Problem]) -> AutotuneInfo:
    """Read ``@triton.autotune(configs, key, prune_configs_by=..., reset_to_zero=..., restore_value=...,
    pre_hook=..., post_hook=...)``."""
    info = AutotuneInfo(line=decorator.lineno, column=decorator.col_offset)
    _side_effect_arguments(decorator, module, info)
    configs_node = _call_argument(decorator, "configs", 0)
    key_node = _call_argument(decorator, "key", 1)
    prune_node = _call_argument(decorator, "prune_configs_by", 2)
    if prune_node is not None and not (isinstance(prune_node, ast.Constant) and prune_node.value is None):
        info.prune_configs_by = module.segment(prune_node)
    if configs_node is None:
        info.configs_error = "@triton.autotune has no configs argument"
    else:
        try:
            info.configs = ConfigEvaluator(module.scope()).configs(configs_node)
        except Unsupported as exc:
            info.configs_error = f"{exc}; {CONFIGS_HINT}"
        except RecursionError:
            info.configs_error = f"configs nest too deeply to evaluate; {CONFIGS_HINT}"
    if info.configs_error:
        node = configs_node or decorator
        problems.append(Problem(module.path, node.lineno, node.col_offset, info.configs_error, "unparseable-autotune"))
    if key_node is not None:
        try:
            key = ConfigEvaluator(module.scope()).eval(key_node, {})
            info.key = [str(k) for k in key]
        except (Unsupported, TypeError) as exc:
            problems.append(Problem(module.path, key_node.lineno, key_node.col_offset,
                                    f"autotune key cannot be read: {exc}", "unparseable-autotune"))
    return info


def _side_effect_arguments(decorator: ast.Call, module: ParsedModule, info: AutotuneInfo) -> None:
    """Fill ``reset_to_zero``, ``restore_value``, ``pre_hook`` and ``post_hook`` (positions 3 to 6 of
    ``triton.autotune``); an unreadable name list sets ``side_effect_lists_error``."""
    for name, position in (("reset_to_zero", 3), ("restore_value", 4)):
        node = _call_argument(decorator, name, position)
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            continue
        try:
            value = ConfigEvaluator(module.scope(), step_limit=1000).eval(node, {})
        except (Unsupported, RecursionError, TypeError, KeyError, ValueError) as exc:
            info.side_effect_lists_error = f"{name} cannot be read: {exc}"
            continue
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            info.side_effect_lists_error = f"{name} is not a list of argument names"
            continue
        setattr(info, name, list(names))
    for name, position in (("pre_hook", 5), ("post_hook", 6)):
        node = _call_argument(decorator, name, position)
        if node is not None and not (isinstance(node, ast.Constant) and node.value is None):
            setattr(info, name, module.segment(node))
    for kw in decorator.keywords:  # **options: they must be seen not to hold any of these
        keys = _dict_keys(kw.value, module) if kw.arg is None else set()
        if keys is None or keys & {"reset_to_zero", "restore_value", "pre_hook", "post_hook"}:
            info.side_effect_lists_error = f"**{module.segment(kw.value)} may hold reset_to_zero or restore_value"


def _dict_keys(node: ast.expr, module: ParsedModule, depth: int = 0) -> set[str] | None:
    """The string keys a ``**`` mapping can have, read from its definition (through module constants and
    same-package imports); None when they cannot be read."""
    if depth > 8:
        return None
    if isinstance(node, ast.Dict):
        found: set[str] = set()
        for key, value in zip(node.keys, node.values):
            inner = _dict_keys(value, module, depth + 1) if key is None else (
                {key.value} if isinstance(key, ast.Constant) and isinstance(key.value, str) else None)
            if inner is None:
                return None
            found |= inner
        return found
    if isinstance(node, ast.IfExp):
        body, orelse = _dict_keys(node.body, module, depth + 1), _dict_keys(node.orelse, module, depth + 1)
        return None if body is None or orelse is None else body | orelse
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return None if any(kw.arg is None for kw in node.keywords) else {kw.arg for kw in node.keywords}
    if isinstance(node, ast.Name):
        if node.id in module.constants:
            return _dict_keys(module.constants[node.id], module, depth + 1)
        source = module.import_sources.get(node.id)
        other = _cached_module(source[0]) if source is not None else None
        if other is not None:
            return _dict_keys(ast.Name(source[1]), other, depth + 1)
    return None


def _heuristics(decorator: ast.Call, module: ParsedModule, problems: list[Problem]) -> dict[str, str]:
    """``constexpr name -> lambda source`` from ``@triton.heuristics({...})``."""
    node = _call_argument(decorator, "values", 0)
    if isinstance(node, ast.Name) and isinstance(module.constants.get(node.id), ast.Dict):
        node = module.constants[node.id]
    if not isinstance(node, ast.Dict) or any(not (isinstance(k, ast.Constant) and isinstance(k.value, str)) for k in node.keys):
        where = node or decorator
        problems.append(Problem(module.path, where.lineno, where.col_offset,
                                "@triton.heuristics argument is not a literal dict with string keys", "unparseable-heuristics"))
        return {}
    return {k.value: module.segment(v) for k, v in zip(node.keys, node.values)}  # type: ignore[union-attr]


def _helpers(module: ParsedModule, name: str) -> list[str]:
    """Jit functions of the same file reachable by calls from ``name`` (transitively), in discovery order."""
    found: dict[str, None] = {}  # ordered, and a kernel calling thousands of helpers is not quadratic
    stack = collections.deque([name])
    while stack:
        current = stack.popleft()
        # A call, or a reference (``tl.reduce(x, 0, combine)``, ``tl.associative_scan``).
        for callee in module.loads(current):
            if callee in module.jit_functions and callee != name and callee not in found:
                found[callee] = None
                stack.append(callee)
    return list(found)


def _constexpr_globals(module: ParsedModule, functions: list[str]) -> dict[str, Any]:
    """Module-level literal constants (``tl.constexpr(<literal>)`` unwrapped) that ``functions`` read."""
    names: set[str] = set()
    for fname in functions:
        names |= module.global_loads(fname)
    values: dict[str, Any] = {}
    for name in sorted(n for n in names if n in module.constants):
        try:
            value = ConfigEvaluator(module.scope(), step_limit=1000).eval(module.constants[name], {})
        except (Unsupported, RecursionError, TypeError):
            continue
        if isinstance(value, _LITERAL_TYPES):
            values[name] = value
    return values


def _returns_value(func: ast.FunctionDef) -> bool:
    """Whether ``func`` itself (not a nested function) has a ``return`` with a value other than None."""
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _kernel(func: ast.FunctionDef, module: ParsedModule, problems: list[Problem]) -> DiscoveredKernel:
    """Build the :class:`DiscoveredKernel` of one jit function."""
    params = _params(func, module.imports, module)
    kernel = DiscoveredKernel(
        path=module.path, name=func.name, line=func.lineno, column=func.col_offset,
        decorator_line=func.decorator_list[0].lineno, params=params,
        def_name=module.def_names.get(func.name, func.name),
    )
    for decorator in func.decorator_list:
        canonical = module.imports.canonical(decorator)
        if _is_triton(canonical, "jit"):
            kernel.do_not_specialize = _do_not_specialize(decorator, params, module, problems)
        elif (_is_triton(canonical, "autotune") or canonical in KERNELRULES_AUTOTUNE) and isinstance(decorator, ast.Call):
            kernel.autotune = _autotune(decorator, module, problems)
        elif _is_triton(canonical, "heuristics") and isinstance(decorator, ast.Call):
            kernel.heuristics.update(_heuristics(decorator, module, problems))
    kernel.helpers = _helpers(module, func.name)
    kernel.returns_value = _returns_value(func)
    kernel.constexpr_globals = _constexpr_globals(module, [func.name, *kernel.helpers])
    return kernel


def discover_module(module: ParsedModule) -> tuple[list[DiscoveredKernel], list[Problem]]:
    """Kernels and problems of one parsed module, in line order."""
    problems: list[Problem] = []
    kernels = [_kernel(func, module, problems) for func in module.jit_functions.values()]
    kernels.sort(key=lambda k: k.line)
    return kernels, problems


def discover(paths: Sequence[str | os.PathLike[str]]) -> DiscoveryResult:
    """Discover the jit kernels in ``paths`` (files or directories), never running them."""
    result = DiscoveryResult()
    modules: list[ParsedModule] = []
    for path in iter_python_files(paths):
        # A file that never says "triton" imports no triton and defines no jit function: not parsed
        # (often most files of a package), so its syntax errors are not reported either.
        # Parsed here with the path as given (what its messages name); lint's reads go through cached_module.
        parsed = read_module(path, needs="triton")
        if parsed is None:
            continue
        if isinstance(parsed, Problem):
            result.problems.append(parsed)
            continue
        modules.append(parsed)
        _remember(parsed)
        kernels, problems = discover_module(parsed)
        result.kernels.extend(kernels)
        result.problems.extend(problems)
    _link_helpers(result.kernels, modules)
    return result


def _link_helpers(kernels: list[DiscoveredKernel], modules: list[ParsedModule]) -> None:
    """Fill ``called_by``; add jit functions imported from other discovered files to their callers' ``helpers``.

    ``from .utils import element_mul`` then ``element_mul(...)`` inside a jit function makes
    ``utils.element_mul`` a helper of that kernel (by name, as ``helpers`` holds names).
    """
    resolved: dict[Path, Path] = {}

    def resolve(path: Path) -> Path:  # once per file, not once per function (16,000 in a 1 MB file)
        if path not in resolved:
            resolved[path] = path.resolve()
        return resolved[path]

    callers: dict[int, set[str]] = {}  # called_by as sets: a helper of thousands of kernels is not quadratic

    def called_by(callee: DiscoveredKernel, caller: str) -> None:
        seen = callers.setdefault(id(callee), set(callee.called_by))
        if caller not in seen:
            seen.add(caller)
            callee.called_by.append(caller)

    by_file = {(resolve(k.path), k.name): k for k in kernels}
    for kernel in kernels:
        for helper in kernel.helpers:
            callee = by_file.get((resolve(kernel.path), helper))
            if callee is not None:
                called_by(callee, f"{kernel.path.name}:{kernel.name}")
    for module in modules:
        for name in module.jit_functions:
            caller = by_file.get((resolve(module.path), name))
            if caller is None:
                continue
            for ref in module.loads(name):
                if ref in module.jit_functions:
                    continue
                source = module.import_sources.get(ref)
                callee = by_file.get((resolve(source[0]), source[1])) if source is not None else None
                if callee is None or callee is caller:
                    continue
                if callee.name not in caller.helpers:
                    caller.helpers.append(callee.name)
                called_by(callee, f"{module.path.name}:{name}")
