"""Load a ``@triton.jit`` kernel from a Python file without running the user's module.

Importing a user's file would run whatever it does at import time (build tensors,
allocate GPU memory, parse command lines). kernelrules only needs the kernels, so it
parses the file with :mod:`ast` and keeps the parts a kernel can depend on:

* imports of ``triton``, ``triton.*`` and ``math``;
* module-level constants: literals, ``tl.constexpr(<literal>)``, arithmetic of
  those, and attribute references into the imported triton modules (``tl.float16``);
* every function decorated with ``@triton.jit`` / ``@jit`` (and
  ``@triton.constexpr_function``), with ``@triton.autotune`` / ``@triton.heuristics``
  and any other decorators stripped;
* jit functions made by calls (``NAME = triton.jit(f)``, see
  :mod:`kernelrules.discover.discover_calls`): the plain ``def`` and ``NAME = triton.jit(f, **options)``
  where the file makes it, wrappers (``triton.heuristics(...)(NAME)``) dropped as stripped
  decorators are, ``OTHER = NAME`` where the file wraps it under another name. The
  JITFunction is then the one an import makes: same ``def``, source, first line and globals.

That reduced module is compiled with the file's own name and line numbers and run in
a fresh module object registered in :data:`sys.modules` under a synthetic name, so
``inspect.getsource`` (which Triton's ``JITFunction`` calls) reads the real file and
compiler errors point at the real lines. A stripped first decorator leaves an identity
decorator in its place, so the function's first line (``co_firstlineno``, Triton's
``starting_line_number``) is the one an import gives: it is part of
``JITFunction.cache_key`` and so of Triton's compile cache key (docs/compilation.md,
"Sharing Triton's cache with the JIT").

The :attr:`KernelHandle.source_hash` covers the kernel's source, the source of every
jit function it calls (transitively) and the module-level constants it reads, with
their line numbers (compiled artifacts carry source locations). It is
computed from the syntax tree alone (:func:`kernel_source_hash`), so a cache lookup
does not have to import Triton.

Why over 400 lines: loading a jit function from source without running its module: the reduced
module, its globals and helpers and the source hash are one contract with Triton's JIT cache key.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import functools
import hashlib
import itertools
import os
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..bounds import UNKNOWN, TooLarge, bounded_value
from .consent import refusal, runs_user_code, user_code_allowed
from .discover_calls import Binding, classify_by_last_name, find_jit_calls
from ..errors import KernelSourceError, KernelSyntaxError
from .pkgsource import module_statements
from .pysource import read_python

#: Module names whose imports are kept (the name itself or any submodule).
KEPT_IMPORT_ROOTS = ("triton", "math")

#: Decorator names that make a function a Triton jit function (the last dotted part).
JIT_DECORATORS = ("jit",)

#: Decorator names of Triton helpers that are kept as well (they run at compile time).
HELPER_DECORATORS = ("constexpr_function",)

#: ``triton.jit`` keyword arguments that are kept when they are literals.
KEPT_JIT_KEYWORDS = ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")

_counter = itertools.count()


@dataclass(frozen=True)
class KernelHandle:
    """A jit kernel loaded from a file: the ``JITFunction`` and where it came from."""

    fn: Any
    path: Path
    name: str
    line: int
    source_hash: str
    module_name: str
    #: Global names the kernel reads that the reduced module does not define
    #: (helpers imported from other modules, non-literal globals). Compiling will
    #: fail on them; discovery reports them instead of guessing.
    unresolved_globals: tuple[str, ...] = field(default=())
    #: One line per unresolved name: why, and the fix (``--src``, ``--import``, a spec).
    unresolved_reasons: tuple[str, ...] = field(default=())
    #: Choices made while reading the package (an environment branch taken by default).
    notes: tuple[str, ...] = field(default=())


@dataclass
class _Reduced:
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


# --------------------------------------------------------------------------- parsing


def read_kernel_source(path: Path) -> str:
    """Read the file as text, turning I/O problems into a located error."""
    try:
        return read_python(path)
    except FileNotFoundError:
        raise KernelSourceError("file not found", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelSourceError(f"cannot read file: {exc}", path=str(path)) from None


#: The last parsed files, by (path, sha256 of the text): a run asks for one file's tree several times
#: (source hash, load, helpers), and a large file takes seconds to parse. The trees are never mutated.
_TREES: dict[tuple[str, str], ast.Module] = {}


def _parse(source: str, path: Path) -> ast.Module:
    """Parse the file (once per content), turning a syntax error into a located error."""
    key = (str(path), hashlib.sha256(source.encode()).hexdigest())
    if key in _TREES:
        return _TREES[key]
    try:
        tree = ast.parse(source, filename=str(path))
        if len(_TREES) >= 32:
            _TREES.clear()
        _TREES[key] = tree
        return tree
    except SyntaxError as exc:
        raise KernelSyntaxError(
            f"syntax error: {exc.msg}", path=str(path), line=exc.lineno, column=exc.offset
        ) from None


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


def _decorator_name(node: ast.expr) -> str | None:
    """The last dotted part of a decorator (``triton.jit(...)`` -> ``jit``)."""
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted_name(target)
    return name.rsplit(".", 1)[-1] if name else None


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


def _identity_decorator(at: ast.expr) -> ast.expr:
    """``(lambda f: f)`` placed where the decorator ``at`` was written."""
    arguments = ast.arguments(posonlyargs=[], args=[ast.arg(arg="f")], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.copy_location(ast.Lambda(args=arguments, body=ast.Name(id="f", ctx=ast.Load())), at)


def _kept_jit_keyword(kw: ast.keyword) -> bool:
    """Whether a ``triton.jit`` keyword argument is kept: a literal of :data:`KEPT_JIT_KEYWORDS`."""
    return kw.arg in KEPT_JIT_KEYWORDS and is_constant_expr(kw.value, set(), set())


def _strip_decorators(node: ast.FunctionDef) -> ast.FunctionDef:
    """A copy of ``node`` whose only decorator is its jit decorator, with literal options only.

    When the first decorator is stripped (``@triton.autotune`` above ``@triton.jit``),
    an identity decorator takes its place: Python starts a decorated function at its
    first decorator (``co_firstlineno``), Triton hashes that line into
    ``JITFunction.cache_key``, and the key must be the one an import of the file gives,
    or a launch never finds our compiles in a shared Triton cache.
    """
    kept: list[ast.expr] = []
    for index, dec in enumerate(node.decorator_list):
        name = _decorator_name(dec)
        if name in JIT_DECORATORS or name in HELPER_DECORATORS:
            if isinstance(dec, ast.Call):
                keywords = [kw for kw in dec.keywords if _kept_jit_keyword(kw)]
                dec = ast.copy_location(ast.Call(func=dec.func, args=[], keywords=keywords), dec)
            kept.append(dec)
        elif index == 0:
            kept.append(_identity_decorator(dec))
    new = ast.FunctionDef(
        name=node.name, args=node.args, body=node.body, decorator_list=kept,
        returns=node.returns, type_comment=node.type_comment,
    )
    if sys.version_info >= (3, 12):  # PEP 695 type parameters
        new.type_params = getattr(node, "type_params", [])
    return ast.copy_location(new, node)


def is_jit(node: ast.FunctionDef) -> bool:
    """Whether a function carries a jit (or constexpr_function) decorator."""
    return any(_decorator_name(d) in JIT_DECORATORS + HELPER_DECORATORS for d in node.decorator_list)


#: Reduced modules by (path, source digest): a file is parsed and reduced once per process and content,
#: however many kernels, hashes and dependency walks read it (a 1 MB module takes about a second).
_REDUCE_CACHE: "collections.OrderedDict[tuple[str, str], _Reduced]" = collections.OrderedDict()


def reduce_module(source: str, path: Path) -> _Reduced:
    """Split a parsed file into the imports, constants and jit functions kernels may use (cached per content;
    the result is shared, so callers must not change it)."""
    key = (str(path), hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
    found = _REDUCE_CACHE.get(key)
    if found is not None:
        _REDUCE_CACHE.move_to_end(key)
        return found
    reduced = _reduce_module(source, path)
    _REDUCE_CACHE[key] = reduced
    while len(_REDUCE_CACHE) > 64:
        _REDUCE_CACHE.popitem(last=False)
    return reduced


def _reduce_module(source: str, path: Path) -> _Reduced:
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
            (functions if is_jit(node) else plain)[node.name] = node
    reduced = _Reduced(source, tree, imports, constants, functions, plain, aliases, statements)
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


def _add_jit_calls(reduced: _Reduced) -> None:
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


# --------------------------------------------------------------------------- hashing


def global_loads(func: ast.FunctionDef) -> set[str]:
    """Names a function reads that it neither binds locally nor takes as parameters.

    A flow-insensitive approximation of Python's scoping, good enough for kernels.
    """
    local: set[str] = set()
    args = func.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            local.add(arg.arg)
    loads: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else local).add(node.id)
        elif isinstance(node, ast.FunctionDef) and node is not func:
            local.add(node.name)
    # Decorators are evaluated in the module scope; they are not dependencies of the body.
    for dec in func.decorator_list:
        for node in ast.walk(dec):
            if isinstance(node, ast.Name):
                loads.discard(node.id)
    return loads - local


def _dependencies(reduced: _Reduced, name: str) -> tuple[list[str], list[str], list[str]]:
    """Jit functions reachable from ``name`` (itself first), the constants they read, unresolved names."""
    seen: list[str] = []
    consts: set[str] = set()
    unresolved: set[str] = set()
    stack = [name]
    builtins = set(dir(__builtins__)) if not isinstance(__builtins__, dict) else set(__builtins__)
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.append(current)
        for ref in sorted(global_loads(reduced.functions[current])):
            if ref in reduced.functions:
                stack.append(ref)
            elif ref in reduced.constants:
                consts.add(ref)
            elif ref not in reduced.import_aliases and ref not in builtins:
                unresolved.add(ref)
    return seen, sorted(consts), sorted(unresolved)


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


def hash_reduced(reduced: _Reduced, name: str) -> tuple[str, tuple[str, ...]]:
    """sha256 over the kernel, its transitive jit callees and the constants they read (this file only)."""
    funcs, consts, unresolved = _dependencies(reduced, name)
    digest = hashlib.sha256()
    for label, items in (("fn", [funcs[0], *sorted(funcs[1:])]), ("const", consts)):
        for item in items:
            node = reduced.functions[item] if label == "fn" else reduced.constants[item]
            # Line numbers are part of the compiled artifacts (debug locations), so they count.
            digest.update(f"\0{label}:{item}@{node.lineno}\0".encode())
            digest.update(source_segment(reduced.source, node).encode())
    return digest.hexdigest(), tuple(unresolved)


def _package_hash(path: Path, reduced: _Reduced, name: str, src: tuple[str, ...]) -> tuple[str, Any]:
    """The source hash following helpers into other files of the package, and the dependencies found.

    A kernel with no name from another file hashes exactly as :func:`hash_reduced` does.
    """
    from .kerneldeps import kernel_dependencies, source_hash

    deps = kernel_dependencies(path, name, src)
    return source_hash(deps), deps


def _find_kernel(reduced: _Reduced, path: Path, name: str) -> ast.FunctionDef:
    """The jit function ``name``, or a located error saying why it is not usable."""
    if name in reduced.functions:
        return reduced.functions[name]
    if name in reduced.plain_functions:
        node = reduced.plain_functions[name]
        raise KernelSourceError(
            f"function {name!r} is not decorated with @triton.jit", path=str(path), line=node.lineno,
            hint="kernelrules reads kernels without running the file: write @triton.jit on the def, or bind "
                 "it at module level with `NAME = triton.jit(func)`",
        )
    available = ", ".join(sorted(n for n, f in reduced.functions.items() if _is_kernel_jit(f))) or "none"
    raise KernelSourceError(f"no @triton.jit function named {name!r} (jit functions: {available})", path=str(path))


def _is_kernel_jit(node: ast.FunctionDef) -> bool:
    """Whether a kept function is a jit function (not a constexpr_function helper)."""
    return any(_decorator_name(d) in JIT_DECORATORS for d in node.decorator_list)


def kernel_source_hash(path: str | os.PathLike[str], name: str, src: tuple[str, ...] = ()) -> str:
    """The :attr:`KernelHandle.source_hash` of kernel ``name`` in ``path``, without importing Triton.

    ``src`` adds search roots for absolute imports (``--src``).
    """
    path = Path(path).resolve()
    reduced = reduce_module(read_kernel_source(path), path)
    _find_kernel(reduced, path, name)
    return _package_hash(path, reduced, name, tuple(src))[0]


def list_kernels(path: str | os.PathLike[str]) -> list[str]:
    """Names of the ``@triton.jit`` functions defined at the top level of ``path``."""
    path = Path(path).resolve()
    reduced = reduce_module(read_kernel_source(path), path)
    return [n for n, f in reduced.functions.items() if _is_kernel_jit(f)]


# --------------------------------------------------------------------------- loading

@dataclass
class _Loaded:
    """One file's reduced module, run once, and the handles made from it."""

    module: types.ModuleType
    reduced: _Reduced
    handles: dict[str, KernelHandle] = field(default_factory=dict)
    #: (path, sha256) of every other file whose objects were bound into ``module``.
    deps: set[tuple[str, str]] = field(default_factory=set)


#: Loaded files, by (resolved path, sha256 of the file's text, search roots): a file is
#: parsed and run once per content, so repeated loads (one per compile job) cost a file read.
_LOADED: dict[tuple[str, str, tuple[str, ...]], _Loaded] = {}


def _plain_assignment(node: ast.stmt, name: str, value: ast.expr) -> ast.stmt:
    """``NAME = value`` for a kept constant: an annotation could name something not kept."""
    if isinstance(node, ast.Assign):
        return node
    return ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value), node)


def _exec_reduced(reduced: _Reduced, path: Path, bind: Any = None,
                  names: frozenset[str] | None = None) -> types.ModuleType:
    """Compile the reduced module with the file's name and run it in a fresh module.

    ``bind(module)``, when given, binds names imported from other files of the package
    into the fresh module before its code runs (defaults may read them). ``names``: the jit
    functions to define (a kernel and what it calls; None: all). Defining a jit function
    costs Triton a read of its source, and Triton's cache key of a kernel covers only what
    it calls, so the others are left out.
    """
    body = [*reduced.imports]
    allowed = user_code_allowed()
    for node in reduced.statements:  # keep the file's order between constants and functions
        target = assignment_target(node)
        if target is not None and reduced.constants.get(target[0]) is node:
            body.append(_plain_assignment(node, *target))
        elif id(node) in reduced.bindings:
            body.extend(reduced.bindings[id(node)].rebuilt(_kept_jit_keyword))
        elif isinstance(node, ast.FunctionDef) and ((reduced.functions.get(node.name) is node
                                                     and (names is None or node.name in names))
                                                    or id(node) in reduced.call_defs):
            if allowed or runs_user_code(node) is None:  # else left out: defining it would run user code
                body.append(_strip_decorators(node))
    module_ast = ast.Module(body=body, type_ignores=[])
    ast.fix_missing_locations(module_ast)
    code = compile(module_ast, str(path), "exec")
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"_kernelrules_src_{stem}_{os.getpid()}_{next(_counter)}"
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    if bind is not None:
        bind(module)
    try:
        with _compiled_jit():
            exec(code, module.__dict__)  # noqa: S102 - only imports, literals and jit defs remain
    except Exception as exc:  # noqa: BLE001 - any failure here is the file's, reported with its line
        sys.modules.pop(module_name, None)
        line = _traceback_line(exc, str(path))
        if isinstance(exc, ImportError):  # a Triton import the installed Triton lacks: written for another build
            from ..triton_installed import other_triton

            reason = other_triton(reduced.imports, line, path)
            if reason is not None:
                raise KernelSourceError(reason, path=str(path), line=line) from exc
        raise KernelSourceError(f"cannot define the jit functions: {type(exc).__name__}: {exc}",
                                path=str(path), line=line) from exc
    return module


@contextlib.contextmanager
def _compiled_jit() -> Iterator[None]:
    """``@triton.jit`` makes JITFunctions here even under ``TRITON_INTERPRET=1``: kernelrules
    loads kernels to cross-compile them, never to interpret them."""
    try:
        from triton import knobs

        scope = knobs.runtime.scope
    except (ImportError, AttributeError):  # a Triton without knobs reads TRITON_INTERPRET itself
        yield
        return
    with scope():
        knobs.runtime.interpret = False
        yield


def _traceback_line(exc: BaseException, filename: str) -> int | None:
    """The last line of ``filename`` in the exception's traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _file_sha(path: str | Path) -> str | None:
    """sha256 of a file's bytes, None when unreadable."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _load_file(path: Path, src: tuple[str, ...], loading: set[str], names: frozenset[str] | None = None) -> _Loaded:
    """The loaded reduced module of ``path``, names from other package files bound in (cached per content).

    ``names``: the jit functions to define (:func:`_needed`; None: all of them)."""
    source = read_kernel_source(path)
    cache_key = (str(path), hashlib.sha256(source.encode()).hexdigest(), src, names)
    loaded = _LOADED.get(cache_key)
    if loaded is not None and all(_file_sha(p) == sha for p, sha in loaded.deps):
        return loaded
    reduced = reduce_module(source, path)
    deps: set[tuple[str, str]] = set()
    loading = loading | {str(path)}
    module = _exec_reduced(reduced, path, bind=lambda m: _bind_imports(m, reduced, path, src, loading, deps, names),
                           names=names)
    loaded = _LOADED[cache_key] = _Loaded(module, reduced, deps=deps)
    return loaded


#: Files with more jit functions than this define, per kernel, only what the kernel calls: defining each costs
#: Triton a read of its source (a 1 MB file of 16,000 helpers took 10 s), and a kernel's cache key covers only
#: what it calls. Smaller files (every real package file seen) load whole, once for all their kernels.
WHOLE_MODULE_JIT_FUNCTIONS = 256


def _needed(reduced: _Reduced, name: str | None) -> frozenset[str] | None:
    """The jit functions a use of ``name`` needs defined: it and what it calls (None: the whole module)."""
    if name is None or name not in reduced.functions or len(reduced.functions) <= WHOLE_MODULE_JIT_FUNCTIONS:
        return None
    return frozenset(_dependencies(reduced, name)[0])


def _bind_imports(module: types.ModuleType, reduced: _Reduced, path: Path, src: tuple[str, ...],
                  loading: set[str], deps: set[tuple[str, str]], names: frozenset[str] | None = None) -> None:
    """Bind into ``module`` what its jit functions import from other files of the package.

    Each name is the object the other file's own reduced module defines (its JITFunction,
    with that file's source, lines and globals, as at launch); a module name is that
    file's reduced module, with the submodules and re-exports its attribute reads need.
    Names that cannot be resolved stay unbound: compiling a kernel that reads one fails
    with Triton's "not defined" error, which lint turns into a needs-spec status.
    """
    from .kerneldeps import BUILTIN_NAMES
    from .pkgvalues import flag_value
    from .pkgsource import Target, attribute_chains, resolve, resolve_attribute, search_roots

    roots = search_roots(path, src)
    wanted: dict[str, list[ast.FunctionDef]] = {}
    for func_name, func in reduced.functions.items():
        if names is not None and func_name not in names:
            continue
        for ref in global_loads(func):
            if ref not in reduced.functions and ref not in reduced.constants \
                    and ref not in reduced.import_aliases and ref not in BUILTIN_NAMES:
                wanted.setdefault(ref, []).append(func)

    def load(target: Target) -> _Loaded | None:
        if str(target.path) in loading:
            return None  # an import cycle: the module is still being defined
        try:
            other_reduced = reduce_module(read_kernel_source(target.path), target.path)
            other = _load_file(target.path, src, loading, _needed(other_reduced, target.name))
        except KernelSourceError:
            return None
        deps.add((str(target.path), _file_sha(target.path) or ""))
        deps.update(other.deps)
        return other

    def value(target: Target) -> Any:
        other = load(target)
        found = None if other is None else other.module if target.name is None else \
            getattr(other.module, target.name, None)
        if found is None and target.name is not None:  # a flag computed at import time: decided or guessed
            flag = flag_value(target.path, target.name, roots)
            found = None if flag is None else flag.bound()
        return found

    for ref, funcs in sorted(wanted.items()):
        target = resolve(path, ref, roots)
        if not isinstance(target, Target):
            continue
        obj = value(target)
        if obj is None:
            continue
        module.__dict__[ref] = obj
        if target.name is not None:
            continue
        for chain in {tuple(c) for f in funcs for c in attribute_chains(f, ref)}:
            holder, where = obj, target
            for attr in chain:
                if not isinstance(holder, types.ModuleType):
                    break
                found = resolve_attribute(where.path, attr, roots)
                if not isinstance(found, Target):
                    break
                inner = getattr(holder, attr, None) if hasattr(holder, attr) else value(found)
                if inner is None:
                    break
                setattr(holder, attr, inner)
                holder, where = inner, found


def load_kernel(path: str | os.PathLike[str], name: str, src: tuple[str, ...] = ()) -> KernelHandle:
    """Load jit kernel ``name`` from ``path`` without running the rest of the file.

    The reduced module is loaded once per file content and reused, so a worker that
    compiles many configs of one kernel pays for it once. Helpers and constexpr globals
    imported from other modules of the package are read from their files the same way
    (:mod:`kernelrules.discover.pkgsource`); ``src`` adds search roots for absolute imports.
    """
    path = Path(path).resolve()
    src = tuple(str(s) for s in src)
    source = read_kernel_source(path)
    cached = _LOADED.get((str(path), hashlib.sha256(source.encode()).hexdigest(), src))
    reduced = cached.reduced if cached is not None else reduce_module(source, path)
    node = _find_kernel(reduced, path, name)  # before running anything: a missing kernel is the first error
    if not _is_kernel_jit(node):
        raise KernelSourceError(f"{name!r} is a constexpr_function, not a kernel", path=str(path), line=node.lineno)
    if not user_code_allowed():  # refuse before anything of the file runs
        for dep in _dependencies(reduced, name)[0]:
            if runs_user_code(reduced.functions[dep]) is not None:
                func = reduced.functions[dep]
                raise KernelSourceError(refusal(func), path=str(path), line=func.lineno)
    loaded = _load_file(path, src, set(), _needed(reduced, name))
    if name in loaded.handles:
        return loaded.handles[name]
    reduced = loaded.reduced
    source_hash, deps = _package_hash(path, reduced, name, src)
    handle = KernelHandle(
        fn=getattr(loaded.module, name), path=path, name=name, line=node.lineno,
        source_hash=source_hash, module_name=loaded.module.__name__,
        unresolved_globals=tuple(sorted(n for n, m in deps.misses.items() if m.guessed is None)),
        unresolved_reasons=tuple(m.reason for _, m in sorted(deps.misses.items()) if m.guessed is None),
        notes=tuple(deps.notes),
    )
    loaded.handles[name] = handle
    return handle
