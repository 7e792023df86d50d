"""The facts record of one (kernel, config, architecture): from a compile, or predicted.

Compiled facts come from the analyzers (``kernelrules.analyzers.facts_extract``)
plus the occupancy calculator and a bank-conflict estimate for the shared layouts
Triton chose. A failed compile still gives facts (``compile_status``,
``compile_message``), so that the compile-error rules can speak. Predicted facts
(``kernelrules.predict.resource_model``) are merged under compiled ones: what the compile
does not say (which constexpr sets each dot dimension, for repairs) stays known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..analyzers import banks
from ..analyzers.facts_extract import extract
from ..analyzers.occupancy import OccupancyLimits, occupancy


def _located(result: Any) -> str:
    """The compiler's one-line message, with the source line it names."""
    message = (result.message or result.error_kind or "unknown error").strip()
    if result.error_line and f":{result.error_line}" not in message:
        where = f"{Path(result.error_path).name}:" if result.error_path else "line "
        message += f" (at {where}{result.error_line})"
    return message


def failed_compile_facts(result: Any, timeout: float | None) -> dict[str, Any]:
    """Facts of a compile that failed or ran out of time."""
    facts: dict[str, Any] = {
        "origin": "compiled",
        "predicted": False,
        "compile_status": "timeout" if result.error_kind == "timeout" else "error",
        "compile_message": _located(result),
        "compile_seconds": round(float(result.compile_seconds or 0.0), 3),
        # spec_error: kernelrules could not build the kernel (lint: needs-spec, not CMP001)
        "compile_error_kind": result.error_kind,
    }
    if timeout is not None:
        facts["compile_timeout"] = timeout
    if result.error_line:
        facts["compile_error_line"] = result.error_line
    return facts


def occupancy_facts(arch: Any, *, num_warps: int, registers: int, shared_bytes: int) -> dict[str, Any]:
    """Resident blocks and warps per SM and the limiting resource."""
    limits = OccupancyLimits.from_mapping(arch.flat())
    result = occupancy(limits, num_warps=num_warps, registers_per_thread=registers, shared_bytes=shared_bytes)
    facts = {
        "active_blocks_per_sm": result.active_blocks_per_sm,
        "active_warps_per_sm": result.active_warps_per_sm,
        "occupancy": round(result.occupancy, 4),
        "occupancy_limiter": result.limiter,
    }
    simds = arch.flat().get("simds_per_cu")
    if simds:  # AMD: the same arithmetic is AMD's occupancy formula; report it per SIMD as well
        facts["waves_per_simd"] = round(result.active_warps_per_sm / simds, 2)
    return facts


def bank_conflict_ways(shared_layouts: list[Mapping[str, Any]]) -> int | None:
    """Worst n-way conflict of an ldmatrix read of each 2-D 16-bit operand buffer.

    ldmatrix is how mma.sync operands leave shared memory; wgmma reads
    ``nvmma_shared`` buffers through descriptors in the layout they were made for,
    so those count as conflict-free.
    """
    worst = None
    for buffer in shared_layouts:
        shape = buffer.get("buffer_shape") or []
        layout = buffer.get("layout") or {}
        if buffer.get("barrier") or len(shape) != 2 or buffer.get("dtype") not in ("f16", "bf16"):
            continue
        if layout.get("kind") == "nvmma_shared":
            ways = 1
        else:
            rows, cols = shape
            if rows < 16 or cols < 16:
                continue
            access = banks.ldmatrix_x4_access((rows, cols), 2)
            ways = banks.bank_conflicts(layout, (rows, cols), 2, access).ways
        worst = ways if worst is None else max(worst, ways)
    return worst


def register_demand(facts: Mapping[str, Any], num_warps: int) -> dict[str, int]:
    """Accumulator plus operand-tile registers per thread of the largest dot (the compile-time predictor)."""
    m, n, k = facts.get("dot_m"), facts.get("dot_n"), facts.get("dot_k")
    acc = facts.get("accumulator_registers_per_thread")
    if not all(isinstance(v, int) for v in (m, n, k, acc)):
        return {}
    bits = facts.get("dot_operand_bits") or 16
    operand = (m * k + k * n) * bits // 32 // (32 * num_warps)
    return {"operand_registers_per_thread": operand, "register_demand_per_thread": acc + operand}


def compiled_facts(result: Any, arch: Any, *, num_warps: int, timeout: float | None = None,
                   predicted: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Facts of one compile result (ok or failed), over the predictions when given."""
    base = {k: v for k, v in (predicted or {}).items() if k in _KEPT_FROM_PREDICTION}
    if not result.ok:
        return {**base, **failed_compile_facts(result, timeout)}
    facts = dict(result.facts) if getattr(result, "facts", None) else extract(result.asm, result.metadata)
    facts.update(origin="compiled", predicted=False, compile_status="ok", compile_message="",
                 compile_seconds=round(float(result.compile_seconds or 0.0), 3))
    if timeout is not None:
        facts["compile_timeout"] = timeout
    if "registers" in facts and "shared_bytes" in facts:
        facts.update(occupancy_facts(arch, num_warps=num_warps, registers=facts["registers"],
                                     shared_bytes=facts["shared_bytes"]))
    ways = bank_conflict_ways(facts.get("shared_layouts", []))
    if ways is not None:
        facts["bank_conflict_ways"] = ways
    dots = facts.get("dots") or []
    if dots:
        largest = max(dots, key=lambda d: (d.get("m") or 0) * (d.get("n") or 0))
        facts.setdefault("dot_m", largest.get("m"))
        facts.setdefault("dot_n", largest.get("n"))
        facts.setdefault("dot_k", largest.get("k"))
        facts.update(register_demand(facts, num_warps))
    return {**base, **{k: v for k, v in facts.items() if v is not None}}


#: Predicted facts a compile does not replace: the mapping of dot dimensions to constexprs.
_KEPT_FROM_PREDICTION = ("dot_dims", "dot_operand_bits")
