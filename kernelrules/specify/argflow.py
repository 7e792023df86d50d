"""What a kernel's body says about its arguments' types (dataflow evidence for signatures).

* :class:`PointerFlow`: a parameter at the root of pointer arithmetic that reaches
  ``tl.load``/``tl.store``/``tl.atomic_*``/``tl.make_block_ptr`` is a pointer;
* :func:`float_params`: a parameter compared or combined with a float literal is a float;
* :func:`index_pointers`: a pointer whose loaded values are used as offsets of other
  pointers, as loop bounds or as integer loop-carried sums holds integers (``*i32``): a
  float there does not compile, so a float guess for it can only fail.

Type comments and tensor descriptors: :mod:`kernelrules.specify.argnotes`; what the uses of values
demand beyond pointer-ness: :mod:`kernelrules.specify.usetypes`.

Only ``ast`` is read; nothing of the user's module runs.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Mapping

from ..discover.kernels import ParsedModule, cached_module

#: ``tl.*`` functions whose pointer argument (keyword, position) roots a pointer.
_POINTER_SINKS = {"load": ("pointer", 0), "store": ("pointer", 0), "make_block_ptr": ("base", 0),
                  "make_tensor_descriptor": ("base", 0), "prefetch": ("pointer", 0)}
#: Calls that keep their first argument's pointer-ness (``tl.advance(p, ...)``).
_POINTER_PASSTHROUGH = ("advance", "broadcast_to", "reshape", "view", "expand_dims", "multiple_of",
                        "max_contiguous", "max_constancy", "to")


#: The last modules' pointer flows, by module object and root (each module is parsed once per run).
_FLOWS: dict[tuple[int, str | None], tuple[ParsedModule, "PointerFlow"]] = {}


def pointer_flow(module: ParsedModule, root: str | None = None) -> "PointerFlow":
    """:class:`PointerFlow` of ``module``, solved once per module and root however many times asked.

    ``root``: solve only the jit functions ``root`` reaches (itself, what it names, and so on): a
    function's pointer parameters depend only on its callees, so the answer for them is the same,
    and a module of thousands of helpers costs what the kernel uses."""
    cached = _FLOWS.get((id(module), root))
    if cached is None or cached[0] is not module:
        if len(_FLOWS) >= 256:
            _FLOWS.clear()
        names = None if root is None or root not in module.jit_functions else reachable(module, root)
        cached = _FLOWS[(id(module), root)] = (module, PointerFlow(module, names=names))
    return cached[1]


def reachable(module: ParsedModule, root: str) -> frozenset[str]:
    """The jit functions of ``module`` that ``root`` reaches through the names its bodies read."""
    seen, stack = {root}, [root]
    while stack:
        for node in ast.walk(module.jit_functions[stack.pop()]):
            if isinstance(node, ast.Name) and node.id in module.jit_functions and node.id not in seen:
                seen.add(node.id)
                stack.append(node.id)
    return frozenset(seen)


def propagate(func: ast.FunctionDef, names: dict[str, set[str]], flow: Callable[[ast.expr], set[str]],
              augmented: bool | Callable[[str], bool] = True) -> dict[str, set[str]]:
    """Grow ``names`` (in place) to a fixpoint: each local assigned a value gets ``flow(value)``, which may
    read ``names`` (flow-insensitive: every assignment of the body counts).

    ``augmented``: whether ``x += v`` gives ``x`` ``flow(v)`` too; a callable answers per target name."""
    assignments = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            assignments.append((node.targets, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assignments.append(([node.target], node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and (
                augmented(node.target.id) if callable(augmented) else augmented):
            assignments.append(([node.target], node.value))
    changed = True
    while changed:
        changed = False
        for targets, value in assignments:
            found = flow(value)
            for target in targets:
                if isinstance(target, ast.Name) and not found <= names.setdefault(target.id, set()):
                    names[target.id] |= found
                    changed = True
    return names


class PointerFlow:
    """Which parameters of a module's jit functions are pointers, by where they flow."""

    def __init__(self, module: ParsedModule, solve: bool = True, names: frozenset[str] | None = None) -> None:
        """``solve=False``: only the expression helpers (:meth:`roots`, :meth:`local_roots`) are wanted.
        ``names``: the jit functions to solve (closed under calls: :func:`reachable`); None: all."""
        self.module = module
        self.pointers: dict[str, set[str]] = {name: set() for name in module.jit_functions
                                              if names is None or name in names}
        if solve:
            self._solve()

    def _solve(self) -> None:
        """Iterate to a fixpoint: pointers passed to helpers' pointer parameters count too."""
        changed = True
        while changed:
            changed = False
            for name, func in self.module.jit_functions.items():
                if name not in self.pointers:
                    continue
                found = self._function_pointers(func)
                if not found <= self.pointers[name]:
                    self.pointers[name] |= found
                    changed = True

    def _function_pointers(self, func: ast.FunctionDef) -> set[str]:
        params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
        roots = self.local_roots(func, params)
        found: set[str] = set()
        for node in ast.walk(func):
            if not isinstance(node, ast.Call):
                continue
            for arg in self._pointer_arguments(node):
                found |= self.roots(arg, roots)
        for node in ast.walk(func):  # p.dtype.element_ty: only pointers have an element type
            if isinstance(node, ast.Attribute) and node.attr == "element_ty":
                inner = node.value
                if isinstance(inner, ast.Attribute) and inner.attr == "dtype" and isinstance(inner.value, ast.Name):
                    found |= roots.get(inner.value.id, set())
        return found & params

    def local_roots(self, func: ast.FunctionDef, params: set[str]) -> dict[str, set[str]]:
        """Each name -> the parameters at the root of its pointer arithmetic (flow-insensitive)."""
        roots: dict[str, set[str]] = {p: {p} for p in params}
        flow = lambda value: self.roots(value, roots)  # noqa: E731
        # ``p += stride`` keeps ``p`` rooted where its assignments root it (read as ``p = stride`` it would
        # root ``p`` at ``stride`` too); only a name no assignment roots takes the root of what is added
        # to it (``t = tl.arange(...)`` then ``t += base_ptr``).
        propagate(func, roots, flow, augmented=False)
        rooted = {name for name, found in roots.items() if found}
        return propagate(func, roots, flow, augmented=lambda name: name not in rooted)

    def roots(self, node: ast.expr, roots: Mapping[str, set[str]], bases: bool = False) -> set[str]:
        """Parameters a pointer expression is based on: the left operand of ``+``/``-`` chains.

        ``bases``: also through ``tl.make_block_ptr(base=...)`` and ``tl.make_tensor_descriptor(base=...)``
        (a block pointer or descriptor is then rooted at its base: :mod:`kernelrules.lint.side_effects`).
        """
        if isinstance(node, ast.Name):
            return set(roots.get(node.id, ()))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left = self.roots(node.left, roots, bases)
            return left or (self.roots(node.right, roots, bases) if isinstance(node.op, ast.Add) else set())
        if isinstance(node, ast.Subscript):
            return self.roots(node.value, roots, bases)
        if isinstance(node, ast.IfExp):
            return self.roots(node.body, roots, bases) | self.roots(node.orelse, roots, bases)
        if isinstance(node, ast.Call) and _dotted(node.func).rpartition(".")[2] == "where" \
                and len(node.args) == 3:
            return self.roots(node.args[1], roots, bases) | self.roots(node.args[2], roots, bases)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _POINTER_PASSTHROUGH:
            if node.func.attr == "to":
                return self.roots(node.func.value, roots, bases)
            return self.roots(node.args[0], roots, bases) if node.args else set()
        if bases and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("make_block_ptr", "make_tensor_descriptor"):
            base = next((kw.value for kw in node.keywords if kw.arg == "base"), node.args[0] if node.args else None)
            return self.roots(base, roots, bases) if base is not None else set()
        return set()

    def _pointer_arguments(self, call: ast.Call) -> list[ast.expr]:
        """Arguments of ``call`` that must be pointers (tl sinks, helpers' pointer parameters)."""
        func = call.func
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr.startswith("atomic_"):
                keyword, position = "pointer", 0
            elif attr in _POINTER_SINKS:
                keyword, position = _POINTER_SINKS[attr]
            else:
                return []
            for kw in call.keywords:
                if kw.arg == keyword:
                    return [kw.value]
            return [call.args[position]] if len(call.args) > position else []
        if isinstance(func, ast.Name) and func.id in self.module.jit_functions:
            helper = self.module.jit_functions[func.id]
            return _bound(call, helper, self.pointers.get(func.id, set()))
        if isinstance(func, ast.Name) and func.id in self.module.import_sources:
            found = _imported_helper(*self.module.import_sources[func.id])
            return _bound(call, *found) if found is not None else []
        return []


def _bound(call: ast.Call, helper: ast.FunctionDef, names: set[str]) -> list[ast.expr]:
    """The arguments ``call`` passes to the parameters of ``helper`` named in ``names``."""
    params = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args, *helper.args.kwonlyargs]]
    out = [arg for name, arg in zip(params, call.args) if name in names]
    return out + [kw.value for kw in call.keywords if kw.arg in names]


#: (module path, helper) pairs whose pointer flow is being solved: an import cycle answers "no pointers".
_SOLVING: set[tuple[Path, str]] = set()


def _imported_helper(path: Path, name: str) -> tuple[ast.FunctionDef, set[str]] | None:
    """A jit helper imported from another file of the package and its pointer parameters (None when that
    file cannot be read, the name is no jit function there, or its flow is being solved: a cycle)."""
    module = cached_module(path)
    if not isinstance(module, ParsedModule) or name not in module.jit_functions or (path, name) in _SOLVING:
        return None
    _SOLVING.add((path, name))
    try:
        return module.jit_functions[name], pointer_flow(module, name).pointers.get(name, set())
    finally:
        _SOLVING.discard((path, name))


def float_params(func: ast.FunctionDef, params: set[str]) -> set[str]:
    """Parameters compared with, or combined arithmetically with, a float literal."""
    found: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.BinOp):
            pairs = [(node.left, node.right), (node.right, node.left)]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            pairs = [(a, b) for a in operands for b in operands if a is not b]
        else:
            continue
        for name_node, other in pairs:
            if (isinstance(name_node, ast.Name) and name_node.id in params
                    and isinstance(other, ast.Constant) and isinstance(other.value, float)):
                found.add(name_node.id)
    return found


def used_names(func: ast.FunctionDef) -> set[str]:
    """Names the body reads."""
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# --------------------------------------------------------------------------- index pointers

#: ``tl`` loops whose bounds must be integers (``tl.static_range`` needs constexprs: not ours).
_RANGES = ("range", "tl.range")


def _is_load(node: ast.AST) -> bool:
    """``tl.load(p)``, or ``tl.atomic_add(p, v)`` (an atomic returns the value it replaced: read from ``p``)."""
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and (func.attr == "load" or func.attr.startswith("atomic_"))
            and isinstance(func.value, ast.Name))


def _load_pointer(call: ast.Call) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "pointer":
            return kw.value
    return call.args[0] if call.args else None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


#: ``tl`` calls that return positions, not values (``tl.argmax(x)`` is an index whatever ``x`` holds).
_POSITIONS = ("argmax", "argmin")


class _IndexFlow:
    """Pointer parameters whose loaded values the body uses as integers."""

    def __init__(self, flow: PointerFlow, func: ast.FunctionDef, pointers: set[str]) -> None:
        params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
        self.flow, self.func, self.pointers = flow, func, pointers
        self.roots = flow.local_roots(func, params)
        self.loaded = self._loaded_names()

    def _pointer_roots(self, node: ast.expr) -> set[str]:
        return self.flow.roots(node, self.roots) & self.pointers

    def sources(self, node: ast.expr) -> set[str]:
        """Pointer parameters whose loaded values flow into ``node``."""
        if isinstance(node, ast.Name):
            return set(self.loaded.get(node.id, ()))
        if _is_load(node):  # its value comes from what the pointer points at, not from the offsets
            pointer = _load_pointer(node)
            return self._pointer_roots(pointer) if pointer is not None else set()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _POSITIONS:
            return set()  # where a value is, not what it is: an index of any buffer's values
        found: set[str] = set()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                found |= self.sources(child)
        return found

    def _loaded_names(self) -> dict[str, set[str]]:
        """Each local name -> the pointer parameters whose loaded values reach it (a fixpoint)."""
        self.loaded: dict[str, set[str]] = {}
        return propagate(self.func, self.loaded, self.sources)

    def integer_uses(self) -> set[str]:
        """Pointers whose loaded values are offsets of a pointer, loop bounds or int loop sums."""
        found: set[str] = set()
        for node in ast.walk(self.func):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                if self._pointer_roots(node.left):
                    found |= self.sources(node.right)
                if isinstance(node.op, ast.Add) and self._pointer_roots(node.right):
                    found |= self.sources(node.left)
            elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and _dotted(node.iter.func) in _RANGES:
                for arg in node.iter.args:
                    found |= self.sources(arg)
        found |= self._int_loop_sums()
        return found & self.pointers

    def address_uses(self) -> set[str]:
        """Pointers whose loaded values become pointers (``tl.load(meta + i).to(out.dtype)``,
        ``tl.cast(v, tl.pointer_type(tl.uint8))``): they hold 64-bit addresses."""
        found: set[str] = set()
        for node in ast.walk(self.func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "to" and node.args and _is_pointer_type(node.args[0], self.pointers):
                found |= self.sources(node.func.value)
            elif (node.func.attr == "cast" and len(node.args) >= 2
                  and _is_pointer_type(node.args[1], self.pointers)):
                found |= self.sources(node.args[0])
        return found & self.pointers

    def _int_loop_sums(self) -> set[str]:
        """``s = 0`` then ``s += tl.load(p...)`` inside a loop: the loop-carried ``s`` stays an int."""
        int_names = {t.id for node in ast.walk(self.func) if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name)
                     and isinstance(node.value, ast.Constant) and type(node.value.value) is int}
        found: set[str] = set()
        for loop in ast.walk(self.func):
            if isinstance(loop, (ast.For, ast.While)):
                for node in ast.walk(loop):
                    if (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
                            and node.target.id in int_names):
                        found |= self.sources(node.value)
        return found


def _is_pointer_type(node: ast.expr, pointers: set[str]) -> bool:
    """``out.dtype`` of a pointer parameter, or ``tl.pointer_type(...)``."""
    if isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
        return node.value.id in pointers
    return isinstance(node, ast.Call) and _dotted(node.func).endswith("pointer_type")


def index_pointers(module: ParsedModule, kernel: str, pointers: set[str]) -> set[str]:
    """Pointer parameters of ``kernel`` whose loaded values it uses as integers."""
    func = module.jit_functions.get(kernel)
    if func is None or not pointers:
        return set()
    return _IndexFlow(pointer_flow(module, kernel), func, pointers).integer_uses()


def address_pointers(module: ParsedModule, kernel: str, pointers: set[str]) -> set[str]:
    """Pointer parameters of ``kernel`` whose loaded values it turns into pointers (64-bit addresses)."""
    func = module.jit_functions.get(kernel)
    if func is None or not pointers:
        return set()
    return _IndexFlow(pointer_flow(module, kernel), func, pointers).address_uses()
