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

That reduced module (read by :mod:`kernelrules.discover.kernelreduce`) is compiled with the
file's own name and line numbers and run in a fresh module object registered in
:data:`sys.modules` under a synthetic name, so
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
import contextlib
import hashlib
import itertools
import os
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .consent import refusal, runs_user_code, user_code_allowed
from ..errors import KernelSourceError
from .kerneldeps import kernel_dependencies, source_hash
from .kernelreduce import Reduced, read_kernel_source, reduce_module
from .pkgfiles import Target, search_roots
from .pkgsource import READER, attribute_chains, file_names, resolve, resolve_attribute
from .pkgcompute import cache_key as facts_key, global_value
from .standins import module_standin
from .pyast import (BUILTIN_NAMES, HELPER_DECORATORS, JIT_DECORATORS, assignment_target, decorator_name, global_loads,
                    is_constant_expr, iter_nodes, source_segment)

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


# --------------------------------------------------------------------------- decorators


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
        name = decorator_name(dec)
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


# --------------------------------------------------------------------------- hashing


def _dependencies(reduced: Reduced, name: str) -> tuple[list[str], list[str], list[str]]:
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


def hash_reduced(reduced: Reduced, name: str) -> tuple[str, tuple[str, ...]]:
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


def _package_hash(path: Path, reduced: Reduced, name: str, src: tuple[str, ...]) -> tuple[str, Any]:
    """The source hash following helpers into other files of the package, and the dependencies found.

    A kernel with no name from another file hashes exactly as :func:`hash_reduced` does.
    """
    deps = kernel_dependencies(path, name, src)
    return source_hash(deps), deps


def _find_kernel(reduced: Reduced, path: Path, name: str) -> ast.FunctionDef:
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
    return any(decorator_name(d) in JIT_DECORATORS for d in node.decorator_list)


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
    reduced: Reduced
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


def _exec_reduced(reduced: Reduced, path: Path, bind: Any = None,
                  names: frozenset[str] | None = None) -> types.ModuleType:
    """Compile the reduced module with the file's name and run it in a fresh module.

    ``bind(module)``, when given, binds names imported from other files of the package
    into the fresh module before its code runs (defaults may read them). ``names``: the jit
    functions to define (a kernel and what it calls; None: all), with the constants they read.
    Defining a jit function costs Triton a read of its source, and Triton's cache key of a
    kernel covers only what it calls and reads, so the others are left out.
    """
    body = [*reduced.imports]
    allowed = user_code_allowed()
    constants = None if names is None else _constants_read(reduced, names)
    for node in reduced.statements:  # keep the file's order between constants and functions
        target = assignment_target(node)
        if target is not None and reduced.constants.get(target[0]) is node:
            if constants is None or target[0] in constants:
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
    cache_key = (str(path), hashlib.sha256(source.encode()).hexdigest(), src, names, facts_key())
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


#: Files with more jit functions than this, or more constants, define per kernel only what the kernel calls and
#: reads: defining each jit function costs Triton a read of its source (a 1 MB file of 16,000 helpers took 10 s),
#: compiling 50,000 constants takes seconds, and a kernel's cache key covers only what it calls and reads. Smaller
#: files (every real package file seen) load whole, once for all their kernels.
WHOLE_MODULE_JIT_FUNCTIONS = 256
WHOLE_MODULE_CONSTANTS = 256


def _needed(reduced: Reduced, name: str | None) -> frozenset[str] | None:
    """The jit functions a use of ``name`` needs defined: it and what it calls (None: the whole module)."""
    if name is None or name not in reduced.functions or (len(reduced.functions) <= WHOLE_MODULE_JIT_FUNCTIONS
                                                         and len(reduced.constants) <= WHOLE_MODULE_CONSTANTS):
        return None
    return frozenset(_dependencies(reduced, name)[0])


def _constants_read(reduced: Reduced, names: frozenset[str]) -> set[str]:
    """The module constants the jit functions ``names`` mention (body, defaults, annotations), and the constants
    those are computed from: what a module defining only ``names`` needs of the file's constants."""
    wanted = [node.id for name in names if name in reduced.functions
              for node in iter_nodes(reduced.functions[name]) if isinstance(node, ast.Name)]
    found: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name not in found and name in reduced.constants:
            found.add(name)
            wanted.extend(node.id for node in iter_nodes(reduced.constants[name]) if isinstance(node, ast.Name))
    return found


def _bind_imports(module: types.ModuleType, reduced: Reduced, path: Path, src: tuple[str, ...],
                  loading: set[str], deps: set[tuple[str, str]], names: frozenset[str] | None = None) -> None:
    """Bind into ``module`` what its jit functions import from other files of the package.

    Each name is the object the other file's own reduced module defines (its JITFunction,
    with that file's source, lines and globals, as at launch); a module name is that
    file's reduced module, with the submodules and re-exports its attribute reads need.
    Names that cannot be resolved stay unbound: compiling a kernel that reads one fails
    with Triton's "not defined" error, which lint turns into a needs-spec status.
    """
    roots = search_roots(path, src)
    wanted: dict[str, list[ast.FunctionDef]] = {}
    for func_name, func in reduced.functions.items():
        if names is not None and func_name not in names:
            continue
        for ref in global_loads(func):
            if ref not in reduced.functions and ref not in reduced.constants and ref not in reduced.import_aliases \
                    and (ref not in BUILTIN_NAMES or ref in file_names(path).defined or ref in file_names(path).imports):
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
        if found is None and target.name is not None:  # a global computed at import time: decided or guessed
            flag = global_value(target.path, target.name, roots, READER)
            found = None if flag is None else flag.bound()
        return found

    for ref, funcs in sorted(wanted.items()):
        target = resolve(path, ref, roots)
        if not isinstance(target, Target):
            standin = module_standin(path, ref, funcs, roots)  # ``import torch``: what the kernels read of it
            if standin is not None:
                module.__dict__[ref] = standin
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
