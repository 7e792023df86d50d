"""Types for tensor-descriptor arguments: ``tensordesc<fp16[BLOCK_M, BLOCK_K]>`` from the source.

A kernel whose body does ``a = a_desc.load([m, k])`` is launched with a host
``TensorDescriptor``; Triton specializes it on the element type and the block shape
(:mod:`kernelrules.compile.descriptor`). Both are read here from the kernel's module, never
by importing it, strongest first:

1. the ``pre_hook`` of the kernel's autotune configs, which sets the block shape per config
   (``nargs["a_desc"].block_shape = [BLOCK_M, BLOCK_K]``, locals read from ``nargs["BLOCK_M"]``);
2. a launcher in the same module that builds the descriptor and launches the kernel
   (``a_desc = TensorDescriptor.from_tensor(a, [BM, BK])`` then ``kernel[grid](a_desc, ...,
   BLOCK_M=BM)``: launcher names map to the constexprs they are passed as);
3. the body: each load/store offset ``pid_m * BLOCK_M`` (directly, through a local, or a loop
   variable stepping by ``BLOCK_K``) names its block dimension; a plain program id is 1.

The element type is never in the source at these places: it is guessed from the name as
for pointers (``fp16`` unless the name says otherwise), and retried with the other pointer
types when nothing compiles (:mod:`kernelrules.specify.guess_search`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..compile.descriptor import format_type
from ..discover.kernels import ParsedModule, cached_module


@dataclass(frozen=True)
class DescriptorType:
    """A descriptor argument's type text and where its block shape was read."""

    text: str
    source: str  # "pre_hook `hook` (file:line)", "the launcher `f` (file:line)" or "the kernel's loads"


def descriptor_types(module: ParsedModule, kernel: str, names: Iterable[str], dtype_of: Any) -> dict[str, DescriptorType]:
    """Types for the descriptor parameters ``names`` of ``kernel`` that the source gives a block shape;
    ``dtype_of(name)`` is the guessed element type. A name with no readable block shape is left out."""
    names = set(names)
    func = module.jit_functions.get(kernel)
    if func is None or not names:  # (most kernels: no descriptor, and the launchers need not be read)
        return {}
    constexprs = {a.arg for a in _params(func) if _is_constexpr(a)}
    found: dict[str, DescriptorType] = {}
    readers = [_from_hooks, *(_launchers_in(other) for other in _package_modules(module, kernel)), _from_body]
    for reader in readers:
        for name, (dims, source) in reader(module, func, constexprs).items():
            if name in names and name not in found and dims is not None:
                found[name] = DescriptorType(format_type(dtype_of(name), dims), source)
    return found


# --------------------------------------------------------------------------- shared helpers


def _params(func: ast.FunctionDef) -> list[ast.arg]:
    return [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]


def _is_constexpr(arg: ast.arg) -> bool:
    return arg.annotation is not None and "constexpr" in ast.unparse(arg.annotation)


def _dims(node: ast.expr, names: dict[str, str]) -> list[str] | None:
    """Block-dimension texts of a list or tuple literal: integers and ``names`` (mapped), with ``+ - * //``."""
    if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts:
        return None
    dims = [_dim(e, names) for e in node.elts]
    return None if any(d is None for d in dims) else dims


def _dim(node: ast.expr, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return str(node.value)
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return names.get(node.slice.value)  # nargs["BLOCK_M"] in a pre_hook: the constexpr itself
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        left, right = _dim(node.left, names), _dim(node.right, names)
        if left is not None and right is not None:
            return ast.unparse(ast.BinOp(ast.parse(left, mode="eval").body, node.op, ast.parse(right, mode="eval").body))
    return None


def _where(module: ParsedModule, node: ast.AST) -> str:
    return f"{module.path.name}:{node.lineno}"


# --------------------------------------------------------------------------- 1. autotune pre_hooks


def _from_hooks(module: ParsedModule, func: ast.FunctionDef, constexprs: set[str]) -> dict:
    """Block shapes a ``pre_hook`` of the kernel's autotune configs sets (the first assignment of each)."""
    found: dict[str, tuple[list[str] | None, str]] = {}
    for hook in _hooks(module, func):
        nargs = hook.args.args[0].arg if hook.args.args else None
        names = {c: c for c in constexprs}
        for node in ast.walk(hook):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                _hook_local(node, nargs, constexprs, names)
        for node in _in_order(hook):
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if (isinstance(target, ast.Attribute) and target.attr == "block_shape"
                    and _nargs_key(target.value, nargs) is not None):
                name = _nargs_key(target.value, nargs)
                found.setdefault(name, (_dims(node.value, names), f"the autotune pre_hook `{hook.name}` "
                                                                  f"({_where(module, node)})"))
    return found


def _in_order(root: ast.AST) -> list[ast.AST]:
    """Every node under ``root`` in source order (the first branch's assignment first)."""
    return sorted((n for n in ast.walk(root) if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))


def _hook_local(node: ast.Assign, nargs: str | None, constexprs: set[str], names: dict[str, str]) -> None:
    """``BM = nargs["BLOCK_M"]``: the local stands for the constexpr."""
    key = _nargs_key(node.value, nargs)
    if isinstance(node.targets[0], ast.Name) and key in constexprs:
        names[node.targets[0].id] = key


def _nargs_key(node: ast.expr, nargs: str | None) -> str | None:
    """``"a_desc"`` for ``nargs["a_desc"]``."""
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == nargs
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
        return node.slice.value
    return None


def _hooks(module: ParsedModule, func: ast.FunctionDef) -> list[ast.FunctionDef]:
    """Module functions the kernel's decorators name (directly or as a default of a config function
    they call) that set ``.block_shape``."""
    referenced = [n.id for d in func.decorator_list for n in ast.walk(d) if isinstance(n, ast.Name)]
    hooks: list[ast.FunctionDef] = []
    for name in referenced:
        candidate = module.plain_functions.get(name)
        if candidate is None:
            continue
        defaults = [n.id for d in candidate.args.defaults + candidate.args.kw_defaults if d is not None
                    for n in ast.walk(d) if isinstance(n, ast.Name)]
        for target in [candidate] + [module.plain_functions[d] for d in defaults if d in module.plain_functions]:
            if target not in hooks and _sets_block_shape(target):
                hooks.append(target)
    return hooks


def _sets_block_shape(func: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "block_shape" and isinstance(n.ctx, ast.Store)
               for n in ast.walk(func))


# --------------------------------------------------------------------------- 2. launchers


#: Modules of a package read for launchers: package root -> [(path, text)] of its files that build descriptors.
_PACKAGE_FILES: dict[Path, list[tuple[Path, str]]] = {}


def _package_modules(module: ParsedModule, kernel: str) -> list[ParsedModule]:
    """The kernel's own module, then the other modules of its package that build tensor descriptors and name
    the kernel (a launcher is often in another module than the kernel)."""
    root = module.path.parent
    while (root.parent / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    if root not in _PACKAGE_FILES:
        if len(_PACKAGE_FILES) >= 8:
            _PACKAGE_FILES.clear()
        _PACKAGE_FILES[root] = _descriptor_files(root) if (module.path.parent / "__init__.py").is_file() else []
    found = [module]
    for path, text in _PACKAGE_FILES[root]:
        if path != module.path and kernel in text:
            other = cached_module(path)
            if isinstance(other, ParsedModule):
                found.append(other)
    return found


def _descriptor_files(root: Path) -> list[tuple[Path, str]]:
    """Files under ``root`` whose text builds a ``TensorDescriptor`` (read once per package)."""
    files = []
    for path in sorted(root.rglob("*.py")):
        if any(part.startswith(".") or part in ("__pycache__", "venv", ".venv") for part in path.parts[len(root.parts):]):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "TensorDescriptor" in text:
            files.append((path, text))
    return files


def _launchers_in(module: ParsedModule) -> Any:
    """A reader of the launchers in ``module`` (the kernel's own or another of its package)."""
    return lambda _kernel_module, func, constexprs: _from_launchers(module, func, constexprs)


def _launches_kernel(call: ast.AST, kernel: str) -> bool:
    """``kernel[grid](...)`` or ``module.kernel[grid](...)``."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)):
        return False
    callee = call.func.value
    return (isinstance(callee, ast.Name) and callee.id == kernel) or (
        isinstance(callee, ast.Attribute) and callee.attr == kernel)


def _from_launchers(module: ParsedModule, func: ast.FunctionDef, constexprs: set[str]) -> dict:
    """Block shapes of the descriptors a function of ``module`` builds and passes to the kernel."""
    found: dict[str, tuple[list[str] | None, str]] = {}
    params = [a.arg for a in _params(func)]
    for launcher in [n for n in ast.walk(module.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        for call in ast.walk(launcher):
            if not _launches_kernel(call, func.name):
                continue
            passed = _passed(call, params)
            names = {c: c for c in constexprs if c not in _assigned(launcher)}
            names.update({local: param for param, local in passed.items() if param in constexprs})
            names.update(_int_locals(launcher, names))
            builds = _built_descriptors(launcher)
            for param, local in passed.items():
                if local in builds:
                    node = builds[local]
                    found.setdefault(param, (_dims(node, names), f"the launcher `{launcher.name}` "
                                                                 f"({_where(module, node)})"))
    return found


def _passed(call: ast.Call, params: list[str]) -> dict[str, str]:
    """Kernel parameter -> the launcher's local name passed for it."""
    passed = {}
    if not any(isinstance(a, ast.Starred) for a in call.args):
        passed.update({p: a.id for p, a in zip(params, call.args) if isinstance(a, ast.Name)})
    passed.update({k.arg: k.value.id for k in call.keywords if k.arg in params and isinstance(k.value, ast.Name)})
    return passed


def _assigned(func: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _int_locals(func: ast.AST, names: dict[str, str]) -> dict[str, str]:
    """Locals assigned once, from an integer literal: ``BM = 128``."""
    counts: dict[str, int] = {}
    values: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int):
            values[node.targets[0].id] = str(node.value.value)
    return {k: v for k, v in values.items() if counts.get(k) == 1 and k not in names}


def _built_descriptors(func: ast.AST) -> dict[str, ast.expr]:
    """Local name -> the block-shape argument of ``TensorDescriptor(...)`` / ``.from_tensor(...)`` assigned to it."""
    built: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)):
            continue
        shape = _block_shape_arg(node.value)
        if shape is not None:
            built.setdefault(node.targets[0].id, shape)
    return built


def _block_shape_arg(call: ast.Call) -> ast.expr | None:
    """The ``block_shape`` of a descriptor-building call, by keyword or position."""
    callee = ast.unparse(call.func)
    if callee.endswith(".from_tensor"):
        position = 1
    elif callee.split(".")[-1].lstrip("_") == "TensorDescriptor":
        position = 3
    else:
        return None
    for keyword in call.keywords:
        if keyword.arg == "block_shape":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


# --------------------------------------------------------------------------- 3. the kernel's own loads


#: Descriptor methods whose first argument is the list of block offsets.
_OFFSET_METHODS = ("load", "store", "atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor")


def _from_body(module: ParsedModule, func: ast.FunctionDef, constexprs: set[str]) -> dict:
    """Block shapes guessed from the offsets of each descriptor's first load or store."""
    steps = _loop_steps(func, constexprs)
    assigned = _single_assignments(func)
    found: dict[str, tuple[list[str] | None, str]] = {}
    for node in _in_order(func):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _OFFSET_METHODS
                and isinstance(node.func.value, ast.Name) and node.args
                and isinstance(node.args[0], (ast.List, ast.Tuple)) and node.func.value.id not in found):
            dims = [_offset_dim(e, constexprs, steps, assigned, 3) for e in node.args[0].elts]
            found[node.func.value.id] = (None if None in dims else dims,
                                         f"the offsets at {_where(module, node)}, guessed")
    return found


def _loop_steps(func: ast.FunctionDef, constexprs: set[str]) -> dict[str, str]:
    """Loop variables stepping by a constexpr: ``for k in range(0, K, BLOCK_K)`` -> ``{k: BLOCK_K}``."""
    steps = {}
    for node in ast.walk(func):
        if (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call)
                and len(node.iter.args) == 3 and isinstance(node.iter.args[2], ast.Name)
                and node.iter.args[2].id in constexprs):
            steps[node.target.id] = node.iter.args[2].id
    return steps


def _single_assignments(func: ast.FunctionDef) -> dict[str, ast.expr]:
    """Locals assigned exactly once, by a plain ``name = expr``."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def _offset_dim(node: ast.expr, constexprs: set[str], steps: dict[str, str], assigned: dict[str, ast.expr],
                depth: int) -> str | None:
    """The block dimension an offset implies: the constexpr it is a multiple of (``pid * BLOCK_M``,
    ``k`` stepping by ``BLOCK_K``), ``1`` for a program id, else None."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
        node = node.func.value  # offs.to(tl.int32)
    if isinstance(node, ast.Name):
        if node.id in steps:
            return steps[node.id]
        if node.id in assigned and depth > 0:
            return _offset_dim(assigned[node.id], constexprs, steps, assigned, depth - 1)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for side in (node.right, node.left):
            if isinstance(side, ast.Name) and side.id in constexprs:
                return side.id
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _offset_dim(node.left, constexprs, steps, assigned, depth)
        right = _offset_dim(node.right, constexprs, steps, assigned, depth)
        return right if left in (None, "1") else left
    if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("program_id"):
        return "1"
    return None


# --------------------------------------------------------------------------- messages


def guessed_note(spec: dict[str, Any], sources: dict[str, str]) -> str | None:
    """The kernel report's clause for descriptors typed from the source, or None when there are none."""
    if not sources:
        return None
    shown = "; ".join(f"{name}={spec[name]} (block shape from {source})" for name, source in sources.items()
                      if name in spec)
    return (f"judged with guessed tensor descriptors {shown}, element types guessed; give the real ones in a spec "
            f"(`{next(iter(sources))}: \"tensordesc<bf16[BLOCK_M, BLOCK_K]>\"`) or a trace")


def missing_reason(kernel: str, names: list[str], shown_path: str) -> str:
    """The needs-spec line for descriptors whose block shape the source does not give."""
    many = len(names) > 1
    return (f"cannot judge {kernel}: {', '.join(names)} {'are tensor descriptors' if many else 'is a tensor descriptor'}"
            f" (`{names[0]}.load(...)`) whose block shape kernelrules cannot read from the launcher, the autotune "
            f"pre_hook or the kernel's offsets; give {'their types' if many else 'its type'} in a spec "
            f"('kernelrules spec {shown_path}', e.g. `{names[0]}: \"tensordesc<fp16[BLOCK_M, BLOCK_K]>\"`) "
            f"or record a launch with 'kernelrules trace'")


def guessed_descriptors(spec: dict[str, Any], provenance: dict[str, str]) -> list[str]:
    """Descriptor arguments whose type is a guess: a compile failing with them is ours, never a CMP001."""
    from ..compile.descriptor import is_descriptor
    from ..compile.limits import GUESSED_SIGNATURE

    return [k for k, v in spec.items()
            if is_descriptor(v) and str(provenance.get(k, "")).split(" ")[0] in GUESSED_SIGNATURE]
