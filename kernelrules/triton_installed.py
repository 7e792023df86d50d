"""What the installed Triton provides, checked by importing Triton's own modules.

kernelrules reads a kernel's package from source (:mod:`kernelrules.discover.pkgsource`), but which
branch of ``if hasattr(tl, "gather"):`` a launch takes, whether
``from triton.language.extra.libdevice import tanh`` succeeds, and whether
``tl.extra.intel.libdevice.tanh`` exists depend on the Triton that will compile the
kernel: the installed one. Only ``triton.*`` and ``math`` modules are ever imported here.

A module that imports something the installed Triton lacks was written for another
Triton build (e.g. Huawei Ascend's fork): :func:`other_triton` gives its kernels one line
that starts with :data:`NEEDS_OTHER_TRITON`, so corpus scripts can count them apart.
"""

from __future__ import annotations

import ast
import importlib
import types
from pathlib import Path
from typing import Any, Callable, Sequence

#: The stable start of the reason given to kernels of modules written for another Triton build.
NEEDS_OTHER_TRITON = "needs another Triton: "

#: Modules whose contents are checked by importing them.
CHECKED_ROOTS = ("triton", "math")

#: What :func:`attribute` returns for a name the installed Triton lacks.
MISSING = object()
_MODULES: dict[str, Any] = {}

Binding = tuple[str, "str | None"]  # (module, attribute) a triton import binds to a local name


def module(dotted: str) -> Any:
    """The Triton (or math) module ``dotted``, None when it cannot be imported."""
    if dotted.split(".", 1)[0] not in CHECKED_ROOTS:
        return None
    if dotted not in _MODULES:
        try:
            _MODULES[dotted] = importlib.import_module(dotted)
        except Exception:  # noqa: BLE001 - any failure means "not provided"
            _MODULES[dotted] = None
    return _MODULES[dotted]


def triton_version() -> str:
    """The installed Triton's version, for messages."""
    triton = module("triton")
    return str(getattr(triton, "__version__", "not installed")) if triton is not None else "not installed"


def attribute(obj: Any, part: str) -> Any:
    """``obj.part``, a submodule of a module, or :data:`MISSING`."""
    try:
        if hasattr(obj, part):
            return getattr(obj, part)
    except Exception:  # noqa: BLE001 - a lazy attribute that fails is not provided
        return MISSING
    if isinstance(obj, types.ModuleType):
        sub = module(f"{obj.__name__}.{part}")
        if sub is not None:
            return sub
    return MISSING


def provides(dotted: str, name: str | None = None) -> bool:
    """Whether the installed Triton has module ``dotted`` (and ``name`` in it)."""
    found = module(dotted)
    return found is not None and (name is None or attribute(found, name) is not MISSING)


def import_binding(statement: ast.stmt, local: str) -> Binding | None:
    """What a Triton/math import statement binds to ``local``."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname == local:
                return (alias.name, None) if alias.name.split(".", 1)[0] in CHECKED_ROOTS else None
            if alias.asname is None and alias.name.split(".", 1)[0] == local:
                return (local, None) if local in CHECKED_ROOTS else None
    elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module \
            and statement.module.split(".", 1)[0] in CHECKED_ROOTS:
        for alias in statement.names:
            if (alias.asname or alias.name) == local:
                return statement.module, alias.name
    return None


def triton_object(node: ast.expr, lookup: Callable[[str], Binding | None]) -> tuple[bool | None, Any]:
    """``(None, _)`` when ``node`` is no dotted name into Triton, ``(False, _)`` when the installed
    Triton lacks it, ``(True, obj)`` when it has it."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None, None
    bound = lookup(node.id)
    if bound is None:
        return None, None
    obj = module(bound[0])
    if obj is None:
        return False, None
    for part in ([bound[1]] if bound[1] else []) + list(reversed(parts)):
        obj = attribute(obj, part)
        if obj is MISSING:
            return False, None
    return True, obj



# --------------------------------------------------------------------------- another Triton build


def other_triton(imports: Sequence[ast.stmt], line: int | None, path: Path) -> str | None:
    """The reason for a module whose Triton import at ``line`` fails on the installed Triton, or None."""
    at_line = [s for s in imports if s.lineno == line]
    for statement in at_line or imports:
        missing = _missing_import(statement)
        if missing is not None:
            name, where = missing
            return (f"{NEEDS_OTHER_TRITON}{Path(path).name} imports `{name}` from `{where}`, which the installed "
                    f"Triton ({triton_version()}) does not provide, so its kernels cannot be launched with this "
                    "Triton (it is probably for another Triton build)")
    return None


def _missing_import(statement: ast.stmt) -> tuple[str, str] | None:
    """``(name, module)`` of the first name a Triton import asks for that the installed Triton lacks."""
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module \
            and statement.module.split(".", 1)[0] in CHECKED_ROOTS:
        for alias in statement.names:
            if alias.name != "*" and not provides(statement.module, alias.name):
                return alias.name, statement.module
    elif isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.name.split(".", 1)[0] in CHECKED_ROOTS and not provides(alias.name):
                return _missing_module(alias.name)
    return None


def _missing_module(dotted: str) -> tuple[str, str]:
    """``(part, parent)`` for the first part of ``dotted`` that cannot be imported."""
    parts = dotted.split(".")
    for index in range(1, len(parts)):
        if not provides(".".join(parts[: index + 1])):
            return parts[index], ".".join(parts[:index])
    return parts[0], parts[0]

