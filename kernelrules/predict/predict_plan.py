"""The resource model's prediction for the commonest kernel, laid out once per model.

:meth:`~kernelrules.predict.resource_model.ResourceModel.predict` runs for every config a prune
judges (``benchmarks/bench_prune.py``: 100,000 configs a second is the target). Most kernels
judged have one ``tl.dot``, on the tensor cores of an NVIDIA GPU without tensor memory
(mma.sync or Hopper's wgmma). For such a model, :class:`PredictPlan` lays out once what the
formulas need (each dimension as a constexpr name or a constant, each path's buffer terms,
the operand widths), and its :meth:`~PredictPlan.predict` gives, per config, the facts the
model's general code gives, with the same formulas written out inline (the MMA path rule,
the pipeline buffers, the registers). Any other model (AMD, tcgen05, several dots or none,
a register model) takes the general code. ``tests/predict/test_predict_plan.py`` checks that
both give the same facts.

The plan reads a model as it is when the plan is made; the model drops its plan whenever one
of its fields is set (its dict and tuple fields are never changed in place).
"""

from __future__ import annotations

from typing import Any


def _dim(dim: Any) -> tuple[Any, Any]:
    """(constexpr name, constant): the constant is used when the name is None."""
    return (dim.constexpr, dim.constant)


class PredictPlan:
    """One model's predictions for a kernel with one dot on NVIDIA tensor cores without tensor memory."""

    __slots__ = ("applies", "dot", "m", "n", "k", "wgmma", "wgmma_m_multiple", "warp_size", "terms", "live",
                 "live_unpipelined", "barriers", "bits", "source_bits", "dims")

    def __init__(self, model: Any) -> None:
        dots = model.dots
        self.applies = (not model.mfma and not model.tcgen05 and model.registers is None and len(dots) == 1
                        and dots[0].lowering != "fma"
                        and not any(t.converts is not None for terms in model.paths.values() for t in terms))
        if not self.applies:
            return
        self.dot = dots[0]
        self.m, self.n, self.k = _dim(self.dot.m), _dim(self.dot.n), _dim(self.dot.k)
        self.wgmma, self.wgmma_m_multiple, self.warp_size = model.wgmma, model.wgmma_m_multiple, model.warp_size
        self.live, self.live_unpipelined, self.barriers = model.live, model.live_unpipelined, model.barriers
        #: path -> its buffer terms: (dimensions, element bits, stage offset, count), laid out on first use
        self.terms: dict[str, tuple[Any, ...]] = {}
        #: path -> bits per A element as the path lowers the dot, kept once known
        self.bits: dict[str, int] = {}
        self.source_bits: int | None = None  # the source dtype's bits, kept once known
        self.dims = dict(self.dot.named_dims)  # ``dot_dims``, copied for each config

    def predict(self, model: Any, config: Any, num_warps: Any, num_stages: Any) -> dict[str, Any]:
        """The facts of ``ResourceModel.predict`` (raising where it returns none: a missing or bad constexpr)."""
        values = config.constexprs
        m_name, m_constant = self.m
        m = int(values[m_name]) if m_name is not None else int(m_constant or 0)
        # ResourceModel.mma_path on NVIDIA without tcgen05
        if self.wgmma and m >= self.wgmma_m_multiple and m % self.wgmma_m_multiple == 0 and num_warps % 4 == 0:
            path = "wgmma"
        else:
            path = "mma_sync"
        # ResourceModel.buffers_bytes: every buffer's bytes, and the largest set live at one point
        terms = self.terms.get(path)
        if terms is None:
            terms = self.terms[path] = tuple((tuple(_dim(d) for d in t.dims), t.element_bits, t.stage_offset, t.count)
                                             for t in model.allocations(path))
        sizes = []
        for dims, bits, offset, count in terms:
            elements = 1
            for name, constant in dims:
                elements *= int(values[name]) if name is not None else int(constant or 0)
            sizes.append(elements * bits // 8 * (count if offset is None else max(1, num_stages + offset)))
        shared = ceiling = sum(sizes)
        if self.live_unpipelined if num_stages <= 1 else self.live:  # some buffers share space
            shared = model.buffers_bytes(path, values, num_stages)[0]
        if path in self.barriers:  # Hopper's TMA barriers: one per stage
            count, each = self.barriers[path]
            barriers = (min(count, max(1, num_stages)) + model.staged_barriers.get(path, 0) * max(1, num_stages)) * each
            shared += barriers
            ceiling += barriers
        n_name, n_constant = self.n
        n = int(values[n_name]) if n_name is not None else int(n_constant or 0)
        k_name, k_constant = self.k
        k = int(values[k_name]) if k_name is not None else int(k_constant or 0)
        dot = self.dot
        threads = self.warp_size * num_warps
        # rounded up like the compiled fact (a 16x16 tile over 8 64-lane waves still takes a register)
        accumulator = -(-(m * n * dot.acc_bits // 32) // threads) * True  # (in registers: not tcgen05)
        bits = self.bits.get(path)
        if bits is None:
            bits = self.bits[path] = dot.operand_bits(path)
        operands = (m * k + k * n) * bits // 32 // threads
        source_bits = self.source_bits
        if source_bits is None:
            source_bits = self.source_bits = dot.source_bits()
        return {
            "predicted": True,
            "origin": "predicted",
            "shared_bytes": shared,
            "shared_bytes_max": max(shared, ceiling, m * n * 4),
            "mma_path": path,
            "accumulator_registers_per_thread": accumulator,
            "operand_registers_per_thread": operands,
            "register_demand_per_thread": accumulator + operands,
            "dot_m": m,
            "dot_n": n,
            "dot_k": k,
            "dot_count": 1,
            "dot_operand_bits": source_bits,
            "dot_dims": self.dims.copy(),
        }
