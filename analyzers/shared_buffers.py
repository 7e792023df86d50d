"""The shared-memory buffers of a TTGIR: each ``ttg.local_alloc`` with its shape, buffers, layout
and what flows through it (an MMA accumulator converted to a dot operand, say).

Kept apart from :mod:`kernelrules.analyzers.irgraph` (which re-exports it) for size; it needs of
the graph only ``module``, ``users`` and ``layout``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .mlir import Operation
from .mlir_text import parse_type


@dataclass(eq=False)
class SharedBuffer:
    """One ``local_alloc``: full shape, buffers (leading dim when multi-buffered), layout."""

    op: Operation
    shape: tuple[int, ...]
    dtype: str | None
    element_bits: int | None
    num_buffers: int
    layout: dict
    encoding: str | None
    mutable: bool
    # the layout kind of the register tensor the alloc copies in ("nvidia_mma": an MMA accumulator),
    # "" for an empty alloc; and the dot operand (opIdx) every local_load of it yields, else None
    source: str = ""
    dot_operand: int | None = None

    @property
    def buffer_shape(self) -> tuple[int, ...]:
        return self.shape[1:] if self.num_buffers > 1 else self.shape

    @property
    def bytes(self) -> int | None:
        if self.element_bits is None:
            return None
        return math.prod(self.shape) * self.element_bits // 8

    @property
    def is_barrier(self) -> bool:
        """mbarriers are 64-bit shared allocations."""
        return self.dtype == "i64"

    def to_dict(self) -> dict:
        out = {"name": self.op.result_names[0] if self.op.result_names else None, "shape": list(self.shape),
               "buffer_shape": list(self.buffer_shape), "num_buffers": self.num_buffers, "dtype": self.dtype,
               "bytes": self.bytes, "encoding": self.encoding, "layout": dict(self.layout),
               "mutable": self.mutable, "barrier": self.is_barrier, "source": self.source,
               "dot_operand": self.dot_operand,
               "location": str(self.op.location) if self.op.location else None}
        return {k: v for k, v in out.items() if v is not None}


def shared_buffers(graph: Any) -> list[SharedBuffer]:
    """Each ``ttg.local_alloc`` of ``graph`` (an :class:`~kernelrules.analyzers.irgraph.IrGraph`)."""
    buffers = []
    for op in graph.module.ops_named("ttg.local_alloc"):
        mlir_type = op.result_types[0] if op.result_types else None
        if mlir_type is None:
            continue
        users = graph.users(op.results[0])
        indexed = any(u.name in ("ttg.memdesc_index", "ttg.memdesc_subview") for u in users)
        count = mlir_type.shape[0] if indexed and not op.operands and len(mlir_type.shape) > 1 else 1
        buffers.append(SharedBuffer(op, mlir_type.shape, mlir_type.dtype, mlir_type.element_bits, count,
                                    graph.layout(mlir_type.encoding), mlir_type.encoding, mlir_type.mutable,
                                    *_buffer_flow(graph, op, users)))
    return buffers


def _buffer_flow(graph: Any, alloc: Operation, users: list[Operation]) -> tuple[str, int | None]:
    """(layout kind of the tensor copied in at the alloc, dot operand its loads yield): an
    accumulator converted to a dot operand through shared memory reads ("nvidia_mma", 0)."""
    source = ""
    if alloc.operands and "->" in alloc.types_text:  # (tensor<..., #mma>) -> !ttg.memdesc<...>
        copied = alloc.types_text.split("->", 1)[0].strip().strip("()")
        source = str(graph.layout(parse_type(copied).encoding).get("kind", "")) if copied else ""
    loads = [graph.layout(u.result_types[0].encoding) for u in users
             if u.name == "ttg.local_load" and u.result_types and u.result_types[0] is not None]
    indices = {layout.get("opIdx") if layout.get("kind") == "dot_op" else None for layout in loads}
    return source, (indices.pop() if len(indices) == 1 and None not in indices else None)
