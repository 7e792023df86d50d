"""A tune space for a torch.compile (Inductor) kernel, generated from its decorator.

``kernelrules space --from-inductor FILE[:NAME] -o kernel.tune.yaml`` writes an
ordinary, editable space file (docs/tune.md, "Tuning a kernel from torch.compile"):

* ``kernel`` and ``signature``: the kernel and its launch signature as
  :mod:`kernelrules.specify.inductor` reads them from ``triton_meta`` (numels from the size hints);
* ``space``: Inductor's own tunables, the kernel's ``XBLOCK``/``YBLOCK``/``ZBLOCK``
  and ``R0_BLOCK``/``R1_BLOCK`` (``RBLOCK`` in older output) constexpr parameters, in
  powers of two capped by the size hints, plus ``num_warps`` and, for looped
  reductions, ``num_stages``;
* ``problem``: one size per ``<prefix>numel`` argument, a tensor per pointer argument
  (``in_ptr*`` inputs, ``out_ptr*`` outputs, ``in_out_ptr*`` outputs with ``in_place``),
  each a flat 1-D tensor sized by the largest element its loads and stores can reach
  (interval arithmetic over the kernel's index expressions, from ``xindex`` in
  ``[0, xnumel)`` etc.), the grid from the ``tl.program_id(axis) * XBLOCK`` lines, and
  ``reference: {config: ...}``: the same kernel at a safe config, since no torch
  expression exists for an arbitrary fused kernel.

What cannot be inferred (a dynamic-shape size ``ks0``, a shape whose index uses one, a
template's grid) is written as ``TODO`` with a comment; :func:`generate` reports those
fields and tune refuses a file that still has one.

Nothing here runs the kernel file: it is read with :mod:`ast`.

Why over 400 lines: one generator of a tune space from Inductor's output, whose steps each need the
kernel's parsed metadata; a later step may split its 176-line `generate`.
"""

from __future__ import annotations

import ast
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import KernelrulesError
from ..specify.inductor import read_kernel_info, read_inductor_file, heuristics_decorator, kernel_functions, numel_prefix

#: Block-size constexprs Inductor writes, and the size-hint prefix each one tiles.
BLOCK_PREFIX = {"XBLOCK": "x", "YBLOCK": "y", "ZBLOCK": "z", "R0_BLOCK": "r0_", "R1_BLOCK": "r1_", "RBLOCK": "r"}

#: Index variables Inductor defines per prefix (``xindex``, ``r0_index``, older ``rindex``).
_INDEX = re.compile(r"^(x|y|z|r0_|r1_|r)index$")

TODO = "TODO"


class InductorSpaceError(KernelrulesError):
    """An Inductor kernel for which no tune space can be generated."""


@dataclass
class GeneratedSpace:
    """The space file's text and what the user still has to fill in."""

    text: str
    kernel: str
    kernel_type: str
    todo: list[str] = field(default_factory=list)


def _pow2_up(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _powers(low: int, high: int, cap: int) -> list[int]:
    """Powers of two in [low, high], at most ``cap`` (the next power of two of the hint); never empty."""
    values = [1 << i for i in range(0, 14) if low <= (1 << i) <= high and (1 << i) <= cap]
    return values or [max(1, min(low, cap))]


# --------------------------------------------------------------------------- index bounds


class _Bounds:
    """Interval arithmetic over a kernel's index expressions: the largest element an access reaches."""

    def __init__(self, func: ast.FunctionDef, sizes: Mapping[str, int]) -> None:
        self.sizes = sizes
        self.assigned: dict[str, ast.expr | None] = {}
        for node in ast.walk(func):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.For)) else []
            for target in targets:
                if isinstance(target, ast.Name):
                    value = getattr(node, "value", None) if not isinstance(node, ast.For) else None
                    # a name bound twice (or by a loop) has no single definition
                    self.assigned[target.id] = None if target.id in self.assigned else value
        self._busy: set[str] = set()

    def numel(self, prefix: str) -> int | None:
        for name in (f"{prefix}numel", *(("r0_numel", "rnumel") if prefix in ("r", "r0_") else ())):
            if isinstance(self.sizes.get(name), int):
                return int(self.sizes[name])
        return None

    def of(self, node: ast.expr) -> tuple[int, int] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value, node.value
        if isinstance(node, ast.Name):
            match = _INDEX.match(node.id)
            if match:
                n = self.numel(match.group(1))
                return (0, n - 1) if n else None
            if node.id in self.sizes and isinstance(self.sizes[node.id], int):
                return self.sizes[node.id], self.sizes[node.id]
            value = self.assigned.get(node.id)
            if value is None or node.id in self._busy:
                return None
            self._busy.add(node.id)
            try:
                return self.of(value)
            finally:
                self._busy.discard(node.id)
        if isinstance(node, ast.Subscript):  # x0[:, None]
            return self.of(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return self.of(node.func.value)  # x0.to(tl.int64)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.of(node.operand)
            return (-inner[1], -inner[0]) if inner else None
        if isinstance(node, ast.BinOp):
            left, right = self.of(node.left), self.of(node.right)
            if left is None or right is None:
                return None
            (a, b), (c, d) = left, right
            if isinstance(node.op, ast.Add):
                return a + c, b + d
            if isinstance(node.op, ast.Sub):
                return a - d, b - c
            if isinstance(node.op, ast.Mult):
                corners = [a * c, a * d, b * c, b * d]
                return min(corners), max(corners)
            if isinstance(node.op, ast.FloorDiv) and c == d and c > 0 and a >= 0:
                return a // c, b // c
            if isinstance(node.op, ast.Mod) and c == d and c > 0 and a >= 0:
                return (a, b) if b < c else (0, c - 1)
        return None


def _accesses(func: ast.FunctionDef) -> dict[str, list[ast.expr | None]]:
    """``{pointer argument: [index expression, ...]}`` of every ``tl.load``/``tl.store``/``tl.atomic_*``."""
    params = {a.arg for a in func.args.args}
    found: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(func):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
                and (node.func.attr in ("load", "store") or node.func.attr.startswith("atomic_"))):
            continue
        pointer = node.args[0]
        if isinstance(pointer, ast.Name) and pointer.id in params:
            found.setdefault(pointer.id, []).append(ast.Constant(0))
        elif isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add):
            for base, index in ((pointer.left, pointer.right), (pointer.right, pointer.left)):
                if isinstance(base, ast.Name) and base.id in params:
                    found.setdefault(base.id, []).append(index)
                    break
        else:
            for name in {n.id for n in ast.walk(pointer) if isinstance(n, ast.Name)} & params:
                found.setdefault(name, []).append(None)  # a block pointer or another form: not read
    return found


def _grid_axes(func: ast.FunctionDef, blocks: list[str]) -> dict[int, str]:
    """``{axis: block}`` from ``xoffset = tl.program_id(0) * XBLOCK`` lines."""
    axes: dict[int, str] = {}
    for node in ast.walk(func):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Mult):
            continue
        for call, block in ((node.left, node.right), (node.right, node.left)):
            while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to":
                call = call.func.value  # tl.program_id(0).to(tl.int64)
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "program_id" and call.args and isinstance(call.args[0], ast.Constant)
                    and isinstance(block, ast.Name) and block.id in blocks):
                axes.setdefault(int(call.args[0].value), block.id)
    return axes


# --------------------------------------------------------------------------- the space


def find_kernel(path: Path, name: str | None) -> tuple[ast.FunctionDef, int, ast.Call]:
    """The decorated Inductor kernel ``name`` of ``path`` (the only one when ``name`` is None)."""
    found = [(f, off) for f, off in kernel_functions(path, read_inductor_file(path)) if heuristics_decorator(f) is not None]
    if not found:
        raise InductorSpaceError("no Inductor kernel (@triton_heuristics.*) in the file", path=str(path))
    if name is None:
        if len(found) > 1:
            raise InductorSpaceError(f"the file has {len(found)} Inductor kernels; name one as FILE:NAME",
                                     path=str(path), hint=", ".join(f.name for f, _ in found))
        func, offset = found[0]
    else:
        match = [(f, off) for f, off in found if f.name == name]
        if not match:
            raise InductorSpaceError(f"no Inductor kernel named {name!r}", path=str(path),
                                     hint="kernels: " + ", ".join(f.name for f, _ in found))
        func, offset = match[0]
    return func, offset, heuristics_decorator(func)  # type: ignore[return-value]


def _constexprs(func: ast.FunctionDef) -> list[str]:
    """The kernel's ``NAME: tl.constexpr`` parameters."""
    return [a.arg for a in func.args.args if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")]


def generate(kernel_path: str | os.PathLike[str], name: str | None, output: str | os.PathLike[str]) -> GeneratedSpace:
    """The space file for an Inductor kernel, to be written at ``output`` (paths are relative to it)."""
    path = Path(kernel_path).resolve()
    func, offset, decorator = find_kernel(path, name)
    info = read_kernel_info(path, func, offset, decorator)
    kind = info.kernel_type
    signature = dict(info.signature)
    constexprs = [c for c in _constexprs(func) if c not in info.constants]
    blocks = [c for c in constexprs if c in BLOCK_PREFIX]
    todo: list[str] = []
    comments: dict[str, str] = {}

    # -- sizes: every <prefix>numel argument; other integers (dynamic shapes) are TODO
    sizes: dict[str, Any] = {}
    scalars: dict[str, Any] = {}
    for arg, value in signature.items():
        if isinstance(value, str) and value.startswith("*"):
            continue
        if numel_prefix(arg) is not None:
            sizes[arg] = value if isinstance(value, int) else TODO
            if sizes[arg] == TODO:
                comments[arg] = "no size hint: the number of elements along this axis"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            scalars[arg] = value
        else:
            scalars[arg] = TODO
            comments[arg] = f"a {value} argument that is not a numel (a dynamic-shape size?): its value at launch"
    for key, value in {**sizes, **scalars}.items():
        if value == TODO:
            todo.append(f"problem.{key}")

    # -- the space: Inductor's block sizes, num_warps, num_stages
    hint = {prefix: _pow2_up(v) for prefix, v in info.size_hints.items()}
    reduction = "reduction" in kind
    persistent = kind.startswith("persistent") or kind == "cooperative_reduction"
    space: dict[str, list[int]] = {}
    fixed: dict[str, Any] = {}
    reference: dict[str, Any] = {}
    known = {k: v for k, v in sizes.items() if isinstance(v, int)}
    bounds = _Bounds(func, known)
    edge_bounds = _Bounds(func, {k: max(1, v - 1) for k, v in known.items()})  # the default edge shape
    for block in blocks:
        prefix = BLOCK_PREFIX[block]
        cap = hint.get(prefix) or (hint.get("r0_") or hint.get("r") if prefix in ("r", "r0_") else None)
        cap = cap or 1024
        if prefix.startswith("r"):
            if persistent:  # the whole row in one block
                fixed[block] = cap
                reference[block] = cap
                continue
            space[block] = _powers(16, 2048, cap)
            reference[block] = min(cap, 1024)
        elif reduction:
            space[block] = _powers(1, 64, cap)
            reference[block] = 1
        elif len([b for b in blocks if not BLOCK_PREFIX[b].startswith("r")]) > 1:
            space[block] = _powers(4, 256, cap)
            reference[block] = min(cap, 32)
        else:
            space[block] = _powers(16, 1024, cap)
            reference[block] = min(cap, 128)
    for other in constexprs:
        if other not in blocks:
            fixed[other] = TODO
            comments[other] = "a constexpr that is not an Inductor block size: its value"
            todo.append(f"fixed.{other}")
    looped = reduction and not persistent
    space["num_warps"] = [1, 2, 4, 8]
    hinted_warps = info.hints.get("num_warps")
    reference["num_warps"] = hinted_warps if isinstance(hinted_warps, int) else (8 if looped and math.prod(
        v for k, v in reference.items() if k in blocks) >= 2048 else 4)
    if looped or kind == "template":
        space["num_stages"] = [1, 2, 3] if looped else [2, 3, 4, 5]
        reference["num_stages"] = info.hints.get("num_stages") if isinstance(info.hints.get("num_stages"), int) else 1
    else:
        fixed["num_stages"] = 1  # no loop to pipeline
    constraints = []
    tiled = [b for b in blocks if b in space]
    if len(tiled) > 1:
        constraints.append(" * ".join(f"config.{b}" for b in tiled) + " <= 4096")

    # -- tensors: flat, sized by the largest element the accesses reach
    accesses = _accesses(func)
    pointer_types = {k: v[1:] for k, v in signature.items() if isinstance(v, str) and v.startswith("*")}
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    exact_edges = True
    for arg, dtype in pointer_types.items():
        extent: Any = None
        reached = accesses.get(arg, [])
        ranges = [bounds.of(i) if i is not None else None for i in reached]
        if reached and all(r is not None for r in ranges):
            extent = max(r[1] for r in ranges) + 1  # type: ignore[index]
            if min(r[0] for r in ranges) < 0:  # type: ignore[index]
                extent = None
        written = arg.startswith(("out_ptr", "in_out_ptr"))
        if extent:  # a product of numels when it is one at every size (an output must be exact; inputs may be larger)
            edge = [edge_bounds.of(i) if i is not None else None for i in reached]
            edge_extent = max(r[1] for r in edge) + 1 if all(r is not None for r in edge) else None  # type: ignore
            product = _numel_product(known, extent, edge_extent)
            if product:
                extent = product
            elif written:
                exact_edges = False
        entry: dict[str, Any] = {"shape": [extent if extent else TODO], "dtype": dtype}
        if arg.startswith("in_out_ptr"):
            entry["in_place"] = True
            outputs[arg] = entry
            where = "outputs"
        elif arg.startswith("out_ptr"):
            outputs[arg] = entry
            where = "outputs"
        else:
            inputs[arg] = entry
            where = "inputs"
            if not arg.startswith("in_ptr"):
                comments[arg] = "not named in_ptr/out_ptr/in_out_ptr: assumed an input; move it if it is written"
        if not extent:
            todo.append(f"problem.{where}.{arg}.shape")
            comments[arg] = ("its index could not be bounded (a dynamic-shape size, a block pointer, or no "
                             "plain load/store): the number of elements the kernel reaches")
    if not outputs:
        todo.append("problem.outputs")

    # -- the grid
    grid: list[str] = []
    if kind == "template" or not blocks:
        grid = [TODO]
        todo.append("problem.grid")
        comments["grid"] = "a template computes its grid from its own block sizes: write it from the kernel body"
    else:
        axes = _grid_axes(func, [b for b in blocks if not (BLOCK_PREFIX[b].startswith("r"))])
        if not axes:  # Inductor's order: x, y, z on axes 0, 1, 2
            axes = dict(enumerate(b for b in ("XBLOCK", "YBLOCK", "ZBLOCK") if b in blocks))
        for axis in range(max(axes) + 1 if axes else 0):
            block = axes.get(axis)
            numel = f"{BLOCK_PREFIX[block]}numel" if block else None
            grid.append(f"cdiv({numel}, {block})" if numel in sizes else "1")

    # -- writing
    kernel_file = os.path.relpath(path, Path(output).resolve().parent)
    dtypes = [t for t in pointer_types.values() if t.startswith(("fp", "bf"))] or list(pointer_types.values())
    dtype = max(set(dtypes), key=dtypes.count) if dtypes else "fp32"
    lines = [
        f"# Generated by `kernelrules space --from-inductor` from {path.name}:{func.name} ({kind}).",
        "# Edit freely: sizes are the size hints (powers of two; set the real numels), tensors are flat",
        "# and sized by the largest element the kernel's loads and stores reach (docs/tune.md).",
        f"kernel: {kernel_file}:{func.name}",
        "signature:",
    ]
    lines += [f"  {k}: {_yaml(v)}" for k, v in signature.items()]
    if fixed:
        lines.append("fixed:")
        lines += [f"  {k}: {_yaml(v)}{_comment(comments.get(k))}" for k, v in fixed.items()]
    lines.append("space:")
    lines += [f"  {k}: {_yaml(v)}" for k, v in space.items()]
    if constraints:
        lines.append("constraints:")
        lines += [f"  - {_yaml(c)}" for c in constraints]
    lines += ["problem:"]
    lines += [f"  {k}: {_yaml(v)}{_comment(comments.get(k))}" for k, v in {**sizes, **scalars}.items()]
    lines.append(f"  dtype: {dtype}")
    for section, tensors in (("inputs", inputs), ("outputs", outputs)):
        if not tensors:
            lines.append(f"  {section}: {{}}" if section == "inputs" else f"  {section}: {TODO}")
            continue
        lines.append(f"  {section}:")
        lines += [f"    {k}: {_yaml(v)}{_comment(comments.get(k))}" for k, v in tensors.items()]
    grid_text = _yaml(grid[0]) if len(grid) == 1 else _yaml(grid)
    lines.append(f"  grid: {grid_text}{_comment(comments.get('grid'))}")
    lines.append(f"  reference: {{config: {_yaml(reference)}}}  # the same kernel at a safe config")
    if not exact_edges:
        lines.append("  edge_sizes: []  # an output's extent is not a product of numels: the default edge shapes "
                     "(every numel minus one) would leave elements unwritten")
    text = "\n".join(lines) + "\n"
    return GeneratedSpace(text=text, kernel=func.name, kernel_type=kind, todo=todo)


def _numel_product(sizes: Mapping[str, int], extent: int, edge_extent: int | None) -> str | None:
    """``xnumel * r0_numel``: the product of numels equal to ``extent``, and at the edge shape to ``edge_extent``."""
    import itertools

    names = list(sizes)
    for count in range(1, len(names) + 1):
        for combo in itertools.combinations(names, count):
            if math.prod(sizes[n] for n in combo) == extent and \
                    math.prod(max(1, sizes[n] - 1) for n in combo) == edge_extent:
                return " * ".join(combo)
    return None


def _comment(text: str | None) -> str:
    return f"  # TODO: {text}" if text else ""


def _yaml(value: Any) -> str:
    """A flow-style YAML scalar, list or mapping."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if text == TODO or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) and text not in ("true", "false", "null"):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def split_target(text: str) -> tuple[Path, str | None]:
    """``FILE[:NAME]`` -> (path, name)."""
    file_part, sep, name = text.rpartition(":")
    if sep and file_part.endswith(".py") and name.isidentifier():
        return Path(file_part), name
    return Path(text), None
