"""Which shared-memory buffers of a kernel are live at the same time, from its TTGIR.

Triton's allocator (``lib/Analysis/Allocation.cpp``) gives each ``ttg.local_alloc`` a
live range (from the allocation to its last use, through views and loop-carried
values, a use inside a loop keeping it live through the whole loop) and lets buffers
whose ranges do not overlap share space. A kernel with two loops one after the other
(flash attention's unmasked and masked KV blocks) thus allocates the larger loop's
pipeline buffers, not both. This module turns a probe's TTGIR into the *live sets*:
the maximal sets of buffers live at one point (the cliques of the interval graph); the
allocation is the largest live set's sum, whatever the tile sizes.

Probes are compiled pipelined (``num_stages = 3``). Without pipelining (``num_stages``
<= 1) a pipelined buffer is a single copy that Triton allocates where the tile is
loaded and frees at the dot that reads it, so :func:`live_sets` also gives the live
sets for that case: each pipelined buffer lives from just after the previous dot in its
block (or the block's start) to the dot it feeds.
"""

from __future__ import annotations

from typing import Sequence

from ..analyzers.irgraph import IrGraph, SharedBuffer

#: Ops whose regions run repeatedly: a buffer used inside stays live through the whole op.
LOOP_OPS = ("scf.for", "scf.while")
DOT_OPS = ("tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled")

Interval = tuple[int, int]


def _last(op) -> int:
    """The index of the last op nested in ``op`` (``op``'s own without regions)."""
    last = op.index
    for inner in op.walk():
        last = max(last, inner.index)
    return last


def _intervals(graph: IrGraph, buffers: Sequence[SharedBuffer]) -> list[Interval]:
    """Each buffer's live range in op indices (textual order), as Triton's liveness extends it."""
    slot = {b.op.index: i for i, b in enumerate(buffers)}
    spans = [[b.op.index, b.op.index] for b in buffers]
    outer = [{a.index for a in b.op.ancestors()} for b in buffers]
    for op in graph.module.operations:
        for value in op.operands:
            if value is None or value.type is None or value.type.kind != "memdesc":
                continue
            root = graph.buffer_root(value)
            if root is None or root.index not in slot:
                continue
            i = slot[root.index]
            end = _last(op) if op.regions else op.index  # a loop carrying the buffer holds it to its end
            for enclosing in op.ancestors():
                if enclosing.name in LOOP_OPS and enclosing.index not in outer[i]:
                    spans[i][0] = min(spans[i][0], enclosing.index)
                    end = max(end, _last(enclosing))
            spans[i][1] = max(spans[i][1], end)
    return [(s, e) for s, e in spans]


def _cliques(intervals: Sequence[Interval | None]) -> tuple[tuple[int, ...], ...]:
    """The maximal sets of intervals that share a point (checked at every interval's start)."""
    found: set[tuple[int, ...]] = set()
    for interval in intervals:
        if interval is None:
            continue
        point = interval[0]
        found.add(tuple(i for i, other in enumerate(intervals) if other is not None and other[0] <= point <= other[1]))
    maximal = [s for s in found if not any(set(s) < set(t) for t in found)]
    return tuple(sorted(maximal))


def _fed_dots(graph: IrGraph, buffers: Sequence[SharedBuffer]) -> list[list]:
    """For each buffer, the dot ops that read it (directly, or through a ``ttg.local_load``)."""
    slot = {b.op.index: i for i, b in enumerate(buffers)}
    fed: list[list] = [[] for _ in buffers]
    for op in graph.module.operations:
        if op.name not in DOT_OPS:
            continue
        for value in op.operands[:2]:
            if value is None or value.type is None:
                continue
            if value.type.kind != "memdesc":
                owner = value.owner
                if value.is_block_arg or owner.name != "ttg.local_load" or not owner.operands:
                    continue
                value = owner.operands[0]
            root = graph.buffer_root(value)
            if root is not None and root.index in slot:
                fed[slot[root.index]].append(op)
    return fed


def _unpipelined(graph: IrGraph, buffers: Sequence[SharedBuffer], intervals: Sequence[Interval]) -> list[Interval]:
    """The ranges without pipelining: a multi-buffered tile becomes one buffer from after the
    previous dot of its block to the dot that reads it; the other buffers keep theirs."""
    dots = [op for op in graph.module.operations if op.name in DOT_OPS]
    out = []
    for buffer, interval, fed in zip(buffers, intervals, _fed_dots(graph, buffers)):
        if buffer.num_buffers <= 1 or not fed:
            out.append(interval)
            continue
        starts = []
        for dot in fed:
            before = [d.index for d in dots if d.parent is dot.parent and d.index < dot.index]
            starts.append(max(before) + 1 if before else (dot.parent.index + 1 if dot.parent is not None else 0))
        out.append((min(starts), max(d.index for d in fed)))
    return out


def live_sets(graph: IrGraph, buffers: Sequence[SharedBuffer]) -> tuple[tuple[tuple[int, ...], ...],
                                                                        tuple[tuple[int, ...], ...]]:
    """(pipelined, unpipelined) live sets of ``buffers`` (indices into it), each the maximal
    sets of buffers live at one point; the buffers are a probe's non-barrier allocations."""
    if not buffers:
        return (), ()
    intervals = _intervals(graph, buffers)
    return _cliques(intervals), _cliques(_unpipelined(graph, buffers, intervals))
