"""What a kernel's source depends on, across the modules of its package, read with ``ast``.

Starting at a kernel, :func:`kernel_dependencies` follows every global name its body
reads: jit functions and literal constants of the same file (as before), and names
imported from other modules of the package (:mod:`kernelrules.discover.pkgsource`), into those
files and on, transitively. The result feeds the kernel's source hash (so a result
cache entry changes when a helper in another file does) and says, in one line per
name, what could not be resolved and how to fix it, and the choices made on the way
(branches taken, flags computed at import time that were decided or guessed:
:mod:`kernelrules.discover.pkgbranches`, :mod:`kernelrules.discover.pkgvalues`). No user code is imported or run.
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import KernelSourceError
from .kernelreduce import Reduced, read_kernel_source, reduce_module
from .pkgbranches import Choice
from .pkgcompute import cache_key, global_value
from .pkgfiles import FIX_HINT, Miss, Target, module_file, search_roots
from .standins import imported_module, standin_note, uses
from ..triton_installed import CHECKED_ROOTS
from .pkgsource import READER, attribute_chains, file_names, resolve, resolve_attribute
from .pyast import BUILTIN_NAMES, decorator_name, global_loads, source_segment
from .pysource import view_digest

@dataclass
class Dependencies:
    """A kernel's jit functions and constants, by file, and the names that could not be resolved."""

    path: Path
    functions: list[tuple[Path, str]] = field(default_factory=list)
    constants: set[tuple[Path, str]] = field(default_factory=set)
    misses: dict[str, Miss] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Globals computed at import time, bound to a decided or guessed value (by file and name): a flag's
    #: bool, else the value's stable text (:func:`kernelrules.discover.pkgcompute.global_value`).
    flags: dict[tuple[Path, str], bool | str] = field(default_factory=dict)

    @property
    def external(self) -> bool:
        """Whether anything comes from another file."""
        return any(p != self.path for p, _ in self.functions) or any(p != self.path for p, _ in self.constants)


_REDUCED: dict[tuple[str, int, int, str | None], Reduced] = {}


def reduced_file(path: Path) -> Reduced:
    """The reduced module of ``path`` (see :func:`kernelrules.discover.kernelreduce.reduce_module`), once per version."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size, cache_key(), view_digest(path))  # a worker may read a view
    if key not in _REDUCED:
        if len(_REDUCED) > 1024:
            _REDUCED.clear()
        _REDUCED[key] = reduce_module(read_kernel_source(path), path)
    return _REDUCED[key]


def _targets(path: Path, func: ast.FunctionDef, ref: str, roots: Sequence[Path]) -> Iterator[Target | Miss]:
    """What global ``ref`` of ``func`` stands for: one named target, or the attributes read from a module."""
    target = resolve(path, ref, roots)
    if isinstance(target, Miss) or target.name is not None:
        yield target
        return
    for chain in attribute_chains(func, ref):
        module = target
        for attr in chain:
            found = resolve_attribute(module.path, attr, roots)
            if isinstance(found, Miss) or found.name is not None:
                yield found if isinstance(found, Miss) else Target(found.path, found.name, found.notes)
                break
            module = found


def kernel_dependencies(path: str | os.PathLike[str], name: str, src: Sequence[str] = ()) -> Dependencies:
    """Every jit function and constant kernel ``name`` of ``path`` reaches, in any file of its package."""
    path = Path(path).resolve()
    roots = search_roots(path, src)
    deps = Dependencies(path)
    stack = [(path, name)]
    while stack:
        where, fname = stack.pop()
        if (where, fname) in deps.functions:
            continue
        deps.functions.append((where, fname))
        reduced = reduced_file(where)
        func = reduced.functions[fname]
        for ref in sorted(global_loads(func)):
            if ref in reduced.functions or ref in reduced.constants or ref in reduced.import_aliases:
                _note(deps, file_names(where).notes.get(ref, ()))  # a branch taken to bind it
            if ref in reduced.functions:
                stack.append((where, ref))
            elif ref in reduced.constants:
                deps.constants.add((where, ref))
            elif ref not in reduced.import_aliases and (ref not in BUILTIN_NAMES or _shadows(where, ref)):
                standin = _standin(where, func, ref, roots)
                if standin is not None:
                    _note(deps, [standin])
                    continue
                for target in _targets(where, func, ref, roots):
                    _add(deps, stack, target, ref, roots)
    return deps


def _standin(path: Path, func: ast.FunctionDef, ref: str, roots: Sequence[Path]) -> Choice | None:
    """The note for global ``ref`` of ``func`` when it is a module outside the package that a stand-in
    covers (:mod:`kernelrules.discover.standins`), else None."""
    module = imported_module(file_names(path).imports.get(ref), ref)
    if module is None or module.split(".", 1)[0] in CHECKED_ROOTS or module_file(path, module, 0, roots) is not None:
        return None
    found = uses([func], ref, module)
    return None if found is None else Choice(standin_note(module, found[1]))


def _shadows(path: Path, name: str) -> bool:
    """Whether module ``path`` binds builtin ``name`` itself (``pow = tl_extra_shim.pow``)."""
    names = file_names(path)
    return name in names.defined or name in names.imports


def _note(deps: Dependencies, notes: Sequence[str]) -> None:
    deps.notes.extend(n for n in notes if n not in deps.notes)


def _add(deps: Dependencies, stack: list, target: Target | Miss, ref: str, roots: Sequence[Path]) -> None:
    """Record one resolved (or unresolved) name of a walk."""
    if isinstance(target, Miss):
        deps.misses.setdefault(ref, target)
        return
    _note(deps, target.notes)
    try:
        reduced = reduced_file(target.path)
    except (OSError, KernelSourceError) as exc:
        deps.misses.setdefault(ref, Miss(ref, f"`{ref}`: cannot read {target.path.name}: {exc}; {FIX_HINT}"))
        return
    if target.name in reduced.functions:
        stack.append((target.path, target.name))
    elif target.name in reduced.constants:
        deps.constants.add((target.path, target.name))
    elif target.name is not None and (flag := global_value(target.path, target.name, roots, READER)) is not None:
        deps.flags[(target.path, target.name)] = flag.value if isinstance(flag.value, bool) else flag.shown
        _note(deps, [flag.note])
        if flag.guessed:
            deps.misses.setdefault(ref, Miss(ref, flag.note, guessed=f"{target.name}={flag.shown}"))
    elif target.name is not None and _constexpr_wrapped(reduced, target.name):
        deps.misses.setdefault(ref, Miss(
            ref, f"`{ref}` ({target.path.name}) is a Python function wrapped in @tl.constexpr, which Triton runs "
                 "while compiling, and kernelrules runs none of the linted code unless asked: lint with --import"))
    else:
        deps.misses.setdefault(ref, Miss(
            ref, f"`{ref}` ({target.path.name}) is computed at import time, not a @triton.jit function or a "
                 f"literal constant, and kernelrules does not run module code; {FIX_HINT}"))


def _constexpr_wrapped(reduced: Reduced, name: str) -> bool:
    """Whether ``name`` is a plain ``def`` decorated ``@tl.constexpr`` (Python Triton calls at compile time)."""
    func = reduced.plain_functions.get(name)
    return func is not None and any(decorator_name(d) == "constexpr" for d in func.decorator_list)


def source_hash(deps: Dependencies) -> str:
    """sha256 over the kernel, its jit callees and their constants, each with its line.

    Items of the kernel's own file come first, hashed exactly as before helpers from
    other files were followed (so such kernels keep their cache keys); items of other
    files follow, labelled with their path.
    """
    digest = hashlib.sha256()
    local = [n for p, n in deps.functions if p == deps.path]
    items = [("fn", deps.path, n) for n in [local[0], *sorted(local[1:])]]
    items += [("const", deps.path, n) for n in sorted(n for p, n in deps.constants if p == deps.path)]
    items += [("xfn", p, n) for p, n in sorted((p, n) for p, n in deps.functions if p != deps.path)]
    items += [("xconst", p, n) for p, n in sorted((p, n) for p, n in deps.constants if p != deps.path)]
    choices = [n for n in deps.notes if isinstance(n, Choice)]  # none for kernels without such branches
    if choices:
        digest.update(("\0choices:" + "\n".join(choices)).encode())
    for (where, item), value in sorted(deps.flags.items()):  # none for kernels without such flags
        node = file_names(where).defined[item]
        digest.update(f"\0flag:{where}:{item}@{node.lineno}={value}\0".encode())
        digest.update(ast.unparse(node).encode())
    for label, where, item in items:
        reduced = reduced_file(where)
        node = reduced.functions[item] if label.endswith("fn") else reduced.constants[item]
        prefix = "" if where == deps.path else f"{where}:"
        digest.update(f"\0{label}:{prefix}{item}@{node.lineno}\0".encode())
        digest.update(source_segment(reduced.source, node).encode())
    return digest.hexdigest()
