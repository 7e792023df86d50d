"""Predict registers per thread and spills of any kernel from the tensors its TTGIR keeps live.

A kernel's register demand is dominated by the tensors a program holds at once: a
loaded ``[ROWS, BLOCK_N]`` tile, the loop-carried accumulators of a reduction, the
centred copy a norm keeps for its second pass. Every distributed tensor costs
``elements / (32 x num_warps)`` elements per thread (Triton's blocked layouts spread a
tile over all threads; a smaller tile is replicated, one element at least), times its
32-bit words per element. From one probe's TTGIR this module reads every tensor value,
its shape as a formula of the constexprs (each dimension matched against the probe's
constexpr values), and its live range (definition to last use; a use inside a loop that
the value was defined outside of holds it through the loop; a loop-carried value lives
through its loop). The *live sets* (tensors live at one point) give, for any config,

    D(config) = max over live sets of sum(words x elements per thread)

without compiling it. ptxas' count is ``registers ~ base + slope x D``: the slope and
base (addresses, loop counters, reduction scratch) are fitted on the kernel's own probe
compiles, on the two probes with the largest D that did not spill (the count grows
faster than linearly at small D, where the base dominates). The per-thread limit is
``min(max_registers_per_thread, registers_per_block / (32 x num_warps))`` rounded down
to 8 (ptxas' ``maxntid`` cap: 128 at 16 warps), or ``maxnreg``; a demand above it spills
about ``4 x (demand - limit)`` bytes per thread.

Only floating-point tensors count (integer offsets and masks are folded into addressing
and predicates by ptxas, pointers into a base and offsets); the fit absorbs the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

LOOP_OPS = ("scf.for", "scf.while")
#: Uniform values (one scalar register, not a tile): not counted.
FREE_OPS = ("tt.splat", "arith.constant")
#: Results that hold their source's registers (a broadcast replicates in place).
VIEW_OPS = ("tt.broadcast", "tt.expand_dims")
#: Bodies of these ops hold scalars only (combine functions): skipped.
SCALAR_BODIES = ("tt.reduce", "tt.scan")


@dataclass(frozen=True)
class Extent:
    """One tensor dimension: ``factor x constexpr`` or a constant."""

    constexpr: str | None = None
    factor: float = 1.0
    constant: int = 1

    def value(self, values: Mapping[str, Any]) -> float:
        if self.constexpr is not None:
            return float(values.get(self.constexpr, 0)) * self.factor
        return float(self.constant)

    def __str__(self) -> str:
        if self.constexpr is None:
            return str(self.constant)
        if self.factor == 1:
            return self.constexpr
        return f"{self.constexpr}/{int(round(1 / self.factor))}" if self.factor < 1 else f"{int(self.factor)}x{self.constexpr}"


@dataclass(frozen=True)
class TensorTerm:
    """A live tensor: its shape as formulas and its 32-bit words per element."""

    dims: tuple[Extent, ...]
    words: float

    def per_thread(self, values: Mapping[str, Any], threads: int) -> float:
        elements = 1.0
        for d in self.dims:  # a loop, not math.prod over a generator: called for every term of every config
            elements *= d.value(values)
        return self.words * max(1.0, elements / threads)

    def describe(self) -> str:
        return " x ".join(str(d) for d in self.dims) + f" ({self.words:g} words)"


@dataclass
class LiveTensors:
    """What one probe's TTGIR says: the tensor terms and the sets of them live at one point."""

    terms: tuple[TensorTerm, ...]
    live_sets: tuple[tuple[int, ...], ...]
    ambiguous: bool = False  # a dimension matched several constexprs
    names: tuple[str, ...] = ()  # the SSA names, for reports

    def demand(self, values: Mapping[str, Any], threads: int) -> float:
        """D: the largest sum of per-thread words of the tensors live at one point."""
        return self.demand_and_largest_tile(values, threads)[0]

    def largest_tile(self, values: Mapping[str, Any], threads: int) -> float:
        """Elements per thread of the largest single tensor."""
        return self.demand_and_largest_tile(values, threads)[1]

    def demand_and_largest_tile(self, values: Mapping[str, Any], threads: int) -> tuple[float, float]:
        """:meth:`demand` and :meth:`largest_tile` from one pass over the terms (a prediction needs both, for
        every config of a space)."""
        sizes = [t.per_thread(values, threads) for t in self.terms]
        demand = max((sum(sizes[i] for i in s) for s in self.live_sets), default=0.0)
        largest = max((size / t.words for size, t in zip(sizes, self.terms)), default=0.0)
        return demand, largest


def _words(dtype: str | None) -> float | None:
    """32-bit words per element of a floating-point element type (None: not counted)."""
    if not dtype or not (dtype.startswith(("f", "bf")) or dtype == "tf32"):
        return None
    digits = "".join(ch for ch in dtype.split("E")[0] if ch.isdigit())
    bits = int(digits) if digits else 32
    return bits / 32


def _extent(size: int, values: Mapping[str, int]) -> tuple[Extent, bool]:
    """A dimension as a constexpr (or a half/double of one), else a constant; and whether ambiguous."""
    if size == 1:
        return Extent(constant=1), False
    for factor in (1.0, 0.5, 2.0):
        names = [k for k, v in values.items() if v * factor == size]
        if names:
            return Extent(constexpr=sorted(names)[0], factor=factor), len(names) > 1
    return Extent(constant=size), False


def _last(op) -> int:
    last = op.index
    for inner in op.walk():
        last = max(last, inner.index)
    return last


def read_live_tensors(ttgir: str, constexprs: Mapping[str, Any]) -> LiveTensors:
    """The floating-point tensors of a probe's TTGIR, their shapes as formulas, and live sets."""
    from ..analyzers.irgraph import IrGraph

    graph = IrGraph.from_text(ttgir)
    module = graph.module
    values = {k: int(v) for k, v in constexprs.items() if isinstance(v, int) and not isinstance(v, bool)}
    tracked: dict[int, int] = {}  # id(value) -> slot
    slots: list[list[int]] = []  # [start, end]
    terms: list[TensorTerm] = []
    names: list[str] = []
    ambiguous = False

    def track(value, start: int, end: int, shape_of=None) -> None:
        nonlocal ambiguous
        mlir_type = value.type
        if shape_of is not None and shape_of.type is not None and shape_of.type.kind == "tensor":
            mlir_type = shape_of.type  # a broadcast holds its source's registers, not the full tile
        if mlir_type is None or mlir_type.kind != "tensor" or not mlir_type.shape:
            return
        words = _words(mlir_type.dtype)
        if words is None:
            return
        dims = []
        for size in mlir_type.shape:
            extent, amb = _extent(int(size), values)
            dims.append(extent)
            ambiguous = ambiguous or amb
        tracked[id(value)] = len(slots)
        slots.append([start, end])
        terms.append(TensorTerm(tuple(dims), words))
        names.append(value.name)

    def in_scalar_body(op) -> bool:
        return any(a.name in SCALAR_BODIES for a in op.ancestors())

    for op in module.operations:
        if in_scalar_body(op):
            continue
        if op.name in FREE_OPS:
            continue
        for value in op.results:
            source = op.operands[0] if op.name in VIEW_OPS and op.operands else None
            # the results of a loop or a branch exist once it is done
            start = _last(op) if op.regions else op.index
            track(value, start, start, source)
        if op.name in LOOP_OPS:  # loop-carried values: from the body's start to their last use
            for region in op.regions:  # (the yielded value carries them over the back edge)
                for block in region.blocks:
                    for arg in block.arguments:
                        track(arg, op.index, op.index)
    for op in module.operations:
        for value in op.operands:
            if value is None or id(value) not in tracked:
                continue
            slot = slots[tracked[id(value)]]
            end = op.index
            defined_in = value.owner
            outer = {a.index for a in defined_in.ancestors()} | {defined_in.index}
            for enclosing in op.ancestors():
                if enclosing.name in LOOP_OPS and enclosing.index not in outer:
                    end = max(end, _last(enclosing))
            slot[1] = max(slot[1], end)
    # a value dies at its last use (the op's result may take its registers): [start, end)
    found: set[tuple[int, ...]] = set()
    for i, (start, _) in enumerate(slots):
        found.add(tuple(j for j, (s, e) in enumerate(slots) if s == start or s < start < e))
    maximal = tuple(sorted(s for s in found if not any(set(s) < set(t) for t in found)))
    # identical terms shared across sets are kept per value: two live copies cost twice
    return LiveTensors(tuple(terms), maximal, ambiguous, tuple(names))


def register_limit(arch: Any, num_warps: int, maxnreg: int | None = None) -> int:
    """Registers a thread may use at ``num_warps``: ptxas caps at ``registers_per_block`` over the block."""
    flat = arch.flat() if hasattr(arch, "flat") else dict(arch)
    cap = int(flat.get("max_registers_per_thread", 255) or 255)
    per_block = int(flat.get("registers_per_block", 65536) or 65536)
    warp = int(flat.get("warp_size", 32) or 32)
    by_block = per_block // (warp * max(1, num_warps)) // 8 * 8
    limit = min(cap, by_block)
    if maxnreg:
        limit = min(limit, int(maxnreg))
    return limit


@dataclass
class RegisterModel:
    """registers ~ base + slope x D, fitted on a kernel's probes, with the limit per num_warps."""

    tensors: LiveTensors
    base: float
    slope: float
    limits: dict[int, int]  # num_warps -> registers per thread
    warp_size: int = 32
    probes: list[dict[str, Any]] = field(default_factory=list)  # config, demand, registers, spill
    residual: float = 0.0  # largest |fit - registers| over the non-spilling probes
    default_limit: int = 255

    def limit(self, num_warps: int, maxnreg: int | None = None) -> int:
        limit = self.limits.get(num_warps)
        if limit is None:
            limit = min(self.default_limit, 65536 // (self.warp_size * max(1, num_warps)) // 8 * 8)
        return min(limit, int(maxnreg)) if maxnreg else limit

    def predict(self, values: Mapping[str, Any], num_warps: int, maxnreg: int | None = None) -> dict[str, Any]:
        threads = self.warp_size * num_warps
        d, largest = self.tensors.demand_and_largest_tile(values, threads)
        demand = int(round(self.base + self.slope * d))
        limit = self.limit(num_warps, maxnreg)
        return {
            "register_demand": demand,
            "register_limit": limit,
            "registers_predicted": min(demand, limit),
            "spill_bytes_predicted": max(0, demand - limit) * 4,
            "tile_elements_per_thread": int(math.ceil(largest)),
            "register_model_residual": int(math.ceil(self.residual)),
        }

    def describe(self) -> dict[str, Any]:
        return {"registers": f"{self.base:.0f} + {self.slope:.2f} x D",
                "live_tensors": sorted({t.describe() for t in self.tensors.terms}),
                "probes": self.probes, "residual": round(self.residual, 1)}


def fit(tensors: LiveTensors, observed: Sequence[tuple[Mapping[str, Any], int, int, int]], arch: Any,
        warp_size: int = 32) -> RegisterModel | None:
    """Fit base and slope on probes ``(constexprs, num_warps, registers, spill_bytes)``.

    The line goes through the two non-spilling probes with the largest D (least squares
    over those with D >= half the largest when there are more); None with fewer than two
    distinct D values.
    """
    points = []
    for values, num_warps, registers, spill in observed:
        d = tensors.demand(values, warp_size * num_warps)
        points.append((d, registers, spill, dict(values), num_warps))
    clean = sorted((p for p in points if p[2] == 0 and p[1] < register_limit(arch, p[4])), key=lambda p: p[0])
    if len({p[0] for p in clean}) < 2:
        return None
    top = clean[-1][0]
    used = [p for p in clean if p[0] >= top / 2]
    if len({p[0] for p in used}) < 2:
        used = clean[-2:]
    n = len(used)
    mx = sum(p[0] for p in used) / n
    my = sum(p[1] for p in used) / n
    sxx = sum((p[0] - mx) ** 2 for p in used)
    slope = sum((p[0] - mx) * (p[1] - my) for p in used) / sxx if sxx else 0.0
    slope = max(slope, 0.0)
    base = my - slope * mx
    residual = max(abs(base + slope * p[0] - p[1]) for p in clean if p[0] >= top / 4) if clean else 0.0
    limits = {w: register_limit(arch, w) for w in (1, 2, 4, 8, 16, 32)}
    flat = arch.flat() if hasattr(arch, "flat") else {}
    return RegisterModel(
        tensors, base, slope, limits, warp_size,
        probes=[{"config": {**p[3], "num_warps": p[4]}, "demand": round(p[0], 1), "registers": p[1],
                 "spill_bytes": p[2]} for p in points],
        residual=residual, default_limit=int(flat.get("max_registers_per_thread", 255) or 255))


def _numeric(config: Any) -> dict[str, int]:
    return {k: int(v) for k, v in config.constexprs.items() if isinstance(v, int) and not isinstance(v, bool)}


def distinct(config: Any) -> bool:
    """Every integer constexpr at least 2 and unlike the others: each tensor dimension names one."""
    values = list(_numeric(config).values())
    return all(v >= 2 for v in values) and len(set(values)) == len(values)


def register_probes(candidates: Iterable[Any], done: Iterable[Any], targets: Sequence[int] = (16, 32)) -> list[Any]:
    """Configs to compile so the fit sees larger tiles: for each target, a config with about that
    many elements per thread (the product of its integer constexprs over its threads), whose
    constexprs tell the tensor dimensions apart (:func:`distinct`), 4 warps preferred, then the
    smallest least constexpr (a few wide rows: the common shape, not 16 rows per thread)."""
    seen = {c.key() for c in done}
    chosen: list[Any] = []
    pool = [c for c in candidates if (c.num_warps or 4) <= 8]
    for target in targets:
        def score(c: Any) -> tuple:
            warps = c.num_warps or 4
            tile = math.prod(_numeric(c).values() or [1]) / (32 * warps)
            return (not distinct(c), abs(math.log2(max(tile, 1e-9)) - math.log2(target)), abs(warps - 4),
                    min(_numeric(c).values() or [0]), str(c))
        for config in sorted(pool, key=score):
            if config.key() in seen:
                continue
            seen.add(config.key())
            chosen.append(config)
            break
    return chosen
