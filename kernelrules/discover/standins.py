"""Stand-ins for modules outside the package that a kernel reads (``torch``), built without importing them.

A kernel file often does ``import torch`` and a jit function reads it in two ways: in a
parameter annotation (``kv_lens: torch.Tensor``), evaluated when the function is defined, and in
the body, as a platform test (``if tl.constexpr(torch.version.hip is not None):``). kernelrules
never imports such a module into the lint (torch takes seconds and may touch the GPU), so the
rebuilt module gets a stand-in with exactly the attributes those uses read:

* an annotation ``torch.Tensor`` is a class named ``Tensor``. Triton reads a parameter's
  annotation only through its name (``constexpr``, ``const``, its own type names such as
  ``i32`` or ``fp16``); a name that is none of those leaves the parameter as an unannotated
  one, for the real object and the stand-in alike. An annotation whose name means something to
  Triton (``torch.int32``) gets no stand-in.
* a body read is given its value on the target (:mod:`kernelrules.discover.targetfacts`:
  ``torch.version.hip`` is None on an NVIDIA GPU); Triton's JIT hashes neither modules nor None,
  so the cache key is the one an import gives.

Any other use (``torch.float16`` in the body, the bare module) gets no stand-in, and the kernel
keeps its one-line needs-spec reason.
"""

from __future__ import annotations

import ast
import types
from typing import Any, Iterable, Sequence

from pathlib import Path

from .pkgfiles import module_file
from .pkgsource import attribute_chains, file_names
from ..triton_installed import CHECKED_ROOTS
from .targetfacts import NO_FACT, fact, fact_note

#: Annotation words Triton gives a meaning to (after ``_normalize_ty``): no stand-in for those.
_MEANINGFUL = ("const",)


def _annotations(func: ast.FunctionDef) -> list[ast.expr]:
    args = func.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
    found = [p.annotation for p in params if p.annotation is not None]
    return found + ([func.returns] if func.returns is not None else [])


def _chain(node: ast.expr, name: str) -> list[str] | None:
    """``[a, b]`` for ``name.a.b``, None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return list(reversed(parts)) if isinstance(node, ast.Name) and node.id == name else None


def _inert(attr: str) -> bool:
    """Whether a class named ``attr`` as an annotation means nothing to Triton."""
    try:
        from triton.runtime.jit import _normalize_ty
        from triton.runtime.jit import type_canonicalisation_dict
    except ImportError:
        return False
    normalized = _normalize_ty(type(attr, (), {}))
    return not any(w in normalized for w in _MEANINGFUL) and normalized not in set(type_canonicalisation_dict.values())


def uses(funcs: Iterable[ast.FunctionDef], name: str, module: str) -> tuple[dict[tuple[str, ...], Any], list[str]] | None:
    """What the stand-in for module ``module`` (bound to global ``name``) must hold for ``funcs``:
    ``({chain: value}, notes)``, or None when some use gets no stand-in (module docstring)."""
    needed: dict[tuple[str, ...], Any] = {}
    notes: list[str] = []
    for func in funcs:
        in_annotations: set[int] = set()
        for annotation in _annotations(func):
            for node in ast.walk(annotation):
                if isinstance(node, ast.Name) and node.id == name:
                    chain = _chain(annotation, name)
                    if not chain or not _inert(chain[-1]):
                        return None
                    needed[tuple(chain)] = type(chain[-1], (), {"__module__": module})
                    in_annotations.update(id(n) for n in ast.walk(annotation))
        body_reads = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name and id(n) not in in_annotations]
        if not body_reads:
            continue
        reads = _body_attribute_reads(func, name, in_annotations)
        if len(body_reads) > len(reads):
            return None  # the bare module is used
        chains = {tuple(c) for c in attribute_chains(func, name)} - {tuple(_chain(a, name) or ()) for a in _annotations(func)}
        chains = {c for c in chains if c}
        full = {c for c in chains if not any(o != c and o[:len(c)] == c for o in chains)}  # longest chains only
        for chain in full:
            text = ".".join((module, *chain))
            value = fact(text)
            if value is NO_FACT:
                return None
            needed[chain] = value
            note = fact_note(text, value)
            if note not in notes:
                notes.append(note)
    return needed, notes


def _body_attribute_reads(func: ast.FunctionDef, name: str, skip: set[int]) -> list[ast.Attribute]:
    return [n for n in ast.walk(func) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == name and id(n.value) not in skip]


def build(module: str, needed: dict[tuple[str, ...], Any]) -> types.ModuleType:
    """A module object named ``module`` holding ``needed`` (submodule stand-ins on the way)."""
    root = types.ModuleType(module)
    for chain, value in needed.items():
        holder = root
        for i, part in enumerate(chain[:-1]):
            inner = getattr(holder, part, None)
            if not isinstance(inner, types.ModuleType):
                inner = types.ModuleType(".".join((module, *chain[:i + 1])))
                setattr(holder, part, inner)
            holder = inner
        setattr(holder, chain[-1], value)
    return root


def imported_module(statement: ast.stmt | None, name: str) -> str | None:
    """The dotted module ``import X`` / ``import X as name`` binds to ``name``, else None."""
    if not isinstance(statement, ast.Import):
        return None
    for alias in statement.names:
        if alias.asname == name:
            return alias.name
        if alias.asname is None and alias.name.split(".", 1)[0] == name:
            return name
    return None


def standin_note(module: str, notes: Sequence[str]) -> str:
    """The report's note for a stand-in."""
    what = "; ".join(notes) if notes else "read only in parameter annotations, which Triton reads by name"
    return f"`{module}` is not imported: a stand-in holds what the kernel reads of it ({what})"


def module_standin(path: Path, name: str, funcs: Sequence[ast.FunctionDef], roots: Sequence[Path]) -> types.ModuleType | None:
    """The stand-in to bind for global ``name`` of ``path`` that ``funcs`` read, when it is ``import X``
    of a module outside the package and Triton and every use is covered; else None."""
    module = imported_module(file_names(path).imports.get(name), name)
    if module is None or module.split(".", 1)[0] in CHECKED_ROOTS or module_file(path, module, 0, roots) is not None:
        return None
    found = uses(funcs, name, module)
    return None if found is None else build(module, found[0])
