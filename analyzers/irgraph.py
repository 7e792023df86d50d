"""Structural questions about a Triton kernel, answered on a graph of its IR.

``IrGraph(module)`` builds a directed graph whose nodes are operation indices
(``module.operations[i]``) and whose edges, ``edges[(u, v)]``, are a set of kinds:

* ``data``: producer → consumer for every SSA use (a use of a block argument
  comes from the op that owns the block, e.g. the ``scf.for``);
* ``nested``: op → the op whose region holds it;
* ``memory``: an op that writes a shared/tensor-memory buffer (``cp.async``,
  TMA, ``local_store``) → the ``local_alloc`` that owns the buffer.

On top of it: the dots with their operand shapes, the loads whose data reaches
a dot, whether a dot sits under a branch on loaded data, whether the loop around
a dot was software-pipelined, and the shared-memory buffers with their layouts.
Works on TTIR and TTGIR; layout questions need TTGIR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from .mlir import Module, Operation, Value, parse
from .mlir_loc import SourceLocation
from .mlir_text import MlirType, parse_attribute
from .shared_buffers import SharedBuffer, shared_buffers

DOT_OPS = frozenset({"tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled"})
#: Ops that read global memory: the data they produce is "loaded".
LOAD_OPS = frozenset({
    "tt.load", "tt.descriptor_load", "tt.descriptor_gather", "tt.atomic_rmw", "tt.atomic_cas",
    "ttg.async_copy_global_to_local", "ttng.async_tma_copy_global_to_local", "ttng.async_tma_gather",
    "amdgpu.buffer_load", "amdgpu.buffer_load_to_local", "amdgpu.buffer_atomic_rmw",
})
ASYNC_LOAD_OPS = frozenset({"ttg.async_copy_global_to_local", "ttng.async_tma_copy_global_to_local",
                            "ttng.async_tma_gather", "amdgpu.buffer_load_to_local"})
TMA_LOAD_OPS = frozenset({"ttng.async_tma_copy_global_to_local", "ttng.async_tma_gather"})
WAIT_OPS = frozenset({"ttg.async_wait", "ttng.wait_barrier"})
LOOP_OPS = frozenset({"scf.for", "scf.while"})
ALLOC_OPS = frozenset({"ttg.local_alloc", "ttng.tmem_alloc"})
#: Ops that return a view of their first operand's buffer.
VIEW_OPS = frozenset({"ttg.memdesc_index", "ttg.memdesc_subslice", "ttg.memdesc_trans", "ttg.memdesc_reshape",
                      "ttg.memdesc_reinterpret", "ttg.memdesc_subview", "ttng.tmem_subslice"})
#: Ops that store into a buffer, with the operand index of the data they store (None: global data).
WRITE_OPS = {"ttg.async_copy_global_to_local": None, "ttng.async_tma_copy_global_to_local": None,
             "ttng.async_tma_gather": None, "amdgpu.buffer_load_to_local": None,
             "ttg.local_store": 0, "ttng.tmem_store": 0, "ttng.tmem_copy": 0}
_MMA_ENCODINGS = ("nvidia_mma", "amd_mfma", "amd_wmma", "tensor_memory_encoding")


@dataclass(frozen=True)
class OperandInfo:
    """Shape, element type and layout of one dot operand."""

    shape: tuple[int, ...]
    dtype: str | None
    encoding: str | None

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "encoding": self.encoding}


@dataclass(eq=False)
class DotInfo:
    """A dot-like op: A (M×K) · B (K×N) + C (M×N).

    ``lowering`` is ``mma`` when the result has a tensor-core layout, ``fma`` when it
    has a plain (blocked) layout, ``unknown`` in TTIR where layouts are not chosen yet.
    """

    op: Operation
    a: OperandInfo | None
    b: OperandInfo | None
    c: OperandInfo | None
    input_precision: str | None
    max_num_imprecise_acc: int | None
    lowering: str
    in_loop: bool

    @property
    def location(self) -> SourceLocation | None:
        return self.op.location

    @property
    def mnk(self) -> tuple[int | None, int | None, int | None]:
        """(M, N, K) from the C and A shapes (the last two dimensions)."""
        m = self.c.shape[-2] if self.c and len(self.c.shape) >= 2 else None
        n = self.c.shape[-1] if self.c and len(self.c.shape) >= 2 else None
        k = self.a.shape[-1] if self.a and self.a.shape else None
        return m, n, k

    def to_dict(self) -> dict:
        m, n, k = self.mnk
        out = {"op": self.op.name, "m": m, "n": n, "k": k, "lowering": self.lowering, "in_loop": self.in_loop,
               "input_precision": self.input_precision, "max_num_imprecise_acc": self.max_num_imprecise_acc,
               "location": str(self.location) if self.location else None}
        for key in ("a", "b", "c"):
            info = getattr(self, key)
            out[key] = info.to_dict() if info else None
        return {k: v for k, v in out.items() if v is not None}


def _link(edges: dict[tuple[int, int], set[str]], u: int, v: int, kind: str) -> None:
    """Add ``kind`` to the edge u → v (creating it)."""
    edges.setdefault((u, v), set()).add(kind)


def _operand(op: Operation, index: int) -> Value | None:
    """``op.operands[index]``, or None when the op has fewer operands."""
    return op.operands[index] if 0 <= index < len(op.operands) else None


def _yielded(op: Operation, region: int, index: int) -> Value | None:
    """Operand ``index`` of the terminator of ``op``'s region ``region`` (``scf.yield``;
    ``scf.condition`` passes its condition first)."""
    if region >= len(op.regions):
        return None
    ops = list(op.regions[region].operations())
    if not ops:
        return None
    return _operand(ops[-1], index + (1 if ops[-1].name == "scf.condition" else 0))


class IrGraph:
    """The def-use / nesting / memory graph of one module, with the queries rules need."""

    def __init__(self, module: Module):
        self.module = module
        #: (producer or inner op, consumer or outer op or buffer) -> kinds of the edge. A plain
        #: dict: the queries below walk operands and users directly, and a graph library's import
        #: and bookkeeping cost every compile worker more than the whole analysis.
        self.edges: dict[tuple[int, int], set[str]] = {}
        self._users: dict[int, list[Operation]] = {}
        self._writers: dict[int, list[Operation]] = {}
        self._build()

    @classmethod
    def from_text(cls, text: str) -> "IrGraph":
        """Parse a TTIR/TTGIR dump and build its graph."""
        return cls(parse(text))

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        for op in self.module.operations:
            if op.parent is not None:
                _link(self.edges, op.index, op.parent.index, "nested")
            for value in op.operands:
                if value is not None:
                    _link(self.edges, value.owner.index, op.index, "data")
                    self._users.setdefault(id(value), []).append(op)
        for op in self.module.operations:
            if op.name in WRITE_OPS:
                for root in self._written_roots(op):
                    _link(self.edges, op.index, root.index, "memory")
                    self._writers.setdefault(root.index, []).append(op)

    def _written_roots(self, op: Operation) -> list[Operation]:
        """The allocations a write op stores into (barrier operands excluded)."""
        data = WRITE_OPS[op.name]
        roots = []
        for i, value in enumerate(op.operands):
            if value is None or i == data or value.type is None or value.type.kind != "memdesc":
                continue
            if value.type.dtype == "i64":
                continue  # an mbarrier, not the destination
            root = self.buffer_root(value)
            if root is not None and root not in roots:
                roots.append(root)
            if op.name in ("ttg.async_copy_global_to_local", "ttg.local_store", "ttng.tmem_store"):
                break  # the first memdesc operand is the destination
        return roots

    def buffer_root(self, value: Value | None) -> Operation | None:
        """The allocation a memdesc value views (through views and loop-carried values)."""
        seen = set()
        while value is not None and id(value) not in seen:
            seen.add(id(value))
            owner = value.owner
            if value.is_block_arg:
                value = _operand(owner, 3 + value.index - 1) if owner.name == "scf.for" and value.index else None
            elif owner.name in ALLOC_OPS:
                return owner
            elif owner.name in VIEW_OPS and owner.operands:
                value = owner.operands[0]
            else:
                return None
        return None

    def users(self, value: Value) -> list[Operation]:
        """Ops that use ``value``."""
        return list(self._users.get(id(value), []))

    # ------------------------------------------------------------------ slicing

    def _sources(self, value: Value, control: bool) -> list[Value | Operation]:
        """What ``value`` is computed from: values, or buffer-writing ops for allocations.

        The loop counter of an ``scf.for`` is a leaf (it depends on bounds only). With
        ``control`` an ``scf.if`` result also depends on the if's condition.
        """
        owner = value.owner
        if value.is_block_arg:
            if owner.name == "scf.for" and value.index > 0:
                return [_operand(owner, 3 + value.index - 1), _yielded(owner, 0, value.index - 1)]
            if owner.name == "scf.while":
                init = _operand(owner, value.index) if value.region == 0 else None
                return [init, _yielded(owner, 1 - value.region, value.index)]
            return []
        if owner.name == "scf.for":
            return [_operand(owner, 3 + value.index), _yielded(owner, 0, value.index)]
        if owner.name == "scf.if":
            branches = [_yielded(owner, r, value.index) for r in range(len(owner.regions))]
            return branches + (owner.operands[:1] if control else [])
        if owner.name == "scf.while":
            return [_yielded(owner, 0, value.index)]
        if owner.name == "ttng.warp_group_dot_wait":
            return [_operand(owner, value.index)]
        if owner.name in VIEW_OPS or owner.name == "ttg.local_load":
            return owner.operands[:1]
        if owner.name in ALLOC_OPS:
            return list(owner.operands) + self._writers.get(owner.index, [])
        return list(owner.operands)

    def _slice_loads(self, start: Iterable[Value | None], control: bool = False,
                     stop: Operation | None = None) -> list[Operation]:
        """Load ops whose data reaches ``start`` (a load stops the walk: its address is not
        data). Values produced by ``stop`` are not followed (a dot's own loop-carried result)."""
        found: dict[int, Operation] = {}
        stack = [item for item in start if item is not None]
        seen: set[int] = {id(v) for v in stop.results} if stop is not None else set()
        while stack:
            item = stack.pop()
            if item is None or id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Operation):
                if item.name in LOAD_OPS:
                    found[item.index] = item
                elif WRITE_OPS.get(item.name) is not None:
                    stack.append(_operand(item, WRITE_OPS[item.name]))
                continue
            if not item.is_block_arg and item.owner.name in LOAD_OPS:
                found[item.owner.index] = item.owner
                continue
            stack.extend(s for s in self._sources(item, control) if s is not None)
        return [found[i] for i in sorted(found)]

    # ------------------------------------------------------------------ queries

    def dots(self) -> list[DotInfo]:
        """Every dot-like op (``tt.dot``, ``tt.dot_scaled``, ``ttng.warp_group_dot``, tcgen05)."""
        return [self._dot_info(op) for op in self.module.operations if op.name in DOT_OPS]

    def _dot_info(self, op: Operation) -> DotInfo:
        a, b, c = (self._operand_info(v) for v in _dot_operands(op))
        if c is None and op.result_types and op.result_types[0] is not None:
            c = self._operand_info_type(op.result_types[0])
        precision = op.input_precision
        if precision is None and op.name in ("tt.dot", "ttng.warp_group_dot"):
            precision = "ieee"  # the attribute's default, which the printer leaves out
        return DotInfo(op, a, b, c, precision, op.max_num_imprecise_acc, self._lowering(op, c),
                       self.enclosing_loop(op) is not None)

    def _operand_info(self, value: Value | None) -> OperandInfo | None:
        return self._operand_info_type(value.type) if value is not None and value.type is not None else None

    @staticmethod
    def _operand_info_type(mlir_type: MlirType) -> OperandInfo:
        return OperandInfo(mlir_type.shape, mlir_type.dtype, mlir_type.encoding)

    def _lowering(self, op: Operation, c: OperandInfo | None) -> str:
        """``mma`` or ``fma`` from the accumulator's layout; ``unknown`` without one (TTIR)."""
        if op.name != "tt.dot":
            return "mma"
        if c is None or not c.encoding:
            return "unknown"
        return "mma" if self.layout(c.encoding).get("kind") in _MMA_ENCODINGS else "fma"

    def layout(self, encoding: str | None) -> dict:
        """An encoding (alias or inline attribute) as a dict with ``kind``."""
        if not encoding:
            return {}
        if encoding in self.module.encodings:
            return self.module.encodings[encoding]
        try:
            value = parse_attribute(encoding)
        except ValueError:
            return {"kind": "unknown", "raw": encoding}
        return value if isinstance(value, dict) else {"kind": str(value).lstrip("#").split(".", 1)[-1]}

    def enclosing_loop(self, op: Operation) -> Operation | None:
        """The innermost ``scf.for``/``scf.while`` around ``op``."""
        return next((a for a in op.ancestors() if a.name in LOOP_OPS), None)

    def loads_feeding(self, dot: DotInfo | Operation, operands: tuple[int, ...] = (0, 1)) -> list[Operation]:
        """The global loads (``tt.load``, ``cp.async``, TMA) whose data reaches the dot's
        A and B operands (``operands`` picks others: 2 is C), through layout conversions,
        shared-memory buffers and loop-carried values."""
        op = dot.op if isinstance(dot, DotInfo) else dot
        values = _dot_operands(op)
        return self._slice_loads([values[i] for i in operands if i < len(values)], stop=op)

    def data_dependent_branches(self, dot: DotInfo | Operation) -> list[Operation]:
        """The ``scf.if`` ops around ``dot``, inside a loop, whose condition depends on loaded data."""
        op = dot.op if isinstance(dot, DotInfo) else dot
        found = []
        for branch in op.ancestors():
            if branch.name != "scf.if" or self.enclosing_loop(branch) is None or not branch.operands:
                continue
            if self._slice_loads(branch.operands[:1], control=True):
                found.append(branch)
        return found

    def dot_under_data_dependent_branch(self, dot: DotInfo | Operation) -> bool:
        """True when the dot runs under an ``if`` on loaded data inside a loop (not on
        program ids, loop counters, arguments or constants)."""
        return bool(self.data_dependent_branches(dot))

    def pipelined(self, target: DotInfo | Operation) -> bool:
        """Whether a dot's loop (or the given loop) was software-pipelined: the loads
        feeding it inside the loop are async copies or TMA, and the loop waits on them."""
        op = target.op if isinstance(target, DotInfo) else target
        loop = op if op.name in LOOP_OPS else self.enclosing_loop(op)
        if loop is None:
            return False
        inside = list(loop.walk())
        if op.name in DOT_OPS:
            loads = [ld for ld in self.loads_feeding(op) if loop in ld.ancestors()]
        else:
            loads = [o for o in inside if o.name in LOAD_OPS]
        if not loads or not all(ld.name in ASYNC_LOAD_OPS for ld in loads):
            return False
        return any(o.name in WAIT_OPS for o in inside)

    def shared_layouts(self) -> list[SharedBuffer]:
        """Each ``ttg.local_alloc`` with shape, dtype, buffer count and parsed layout."""
        return shared_buffers(self)


def _dot_operands(op: Operation) -> list[Value | None]:
    """A, B, C values of a dot-like op (``tt.dot_scaled`` interleaves optional scales)."""
    if op.name == "tt.dot_scaled":
        body = op.text.split(op.name, 1)[-1]
        names = re.findall(r"(%[\w$.-]+(?:#\d+)?)(?:\s+scale\s+%[\w$.-]+(?:#\d+)?)?", body)
        if len(names) >= 3 and set(names[:3]) <= set(op.operand_names):
            return [op.operands[op.operand_names.index(n)] for n in names[:3]]
    return (list(op.operands) + [None, None, None])[:3]
