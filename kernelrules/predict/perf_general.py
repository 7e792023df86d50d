"""A performance model for any Triton kernel, for ranking configs at the config stage.

:mod:`kernelrules.predict.perf_model` ranks matmul-like kernels (one dot loop over K). This model
ranks every kernel from what is known without compiling the config: the problem's sizes,
its grid expression (``problem.grid`` of a tune space, evaluated with
:mod:`kernelrules.expr.safeexpr`), the bytes a launch must move (``problem.bytes``, or the
inputs and outputs), the FLOPs (``problem.flops``), and the resource model's predicted
registers and shared memory. Per config it computes, over the whole grid:

- **programs and waves**: ``P`` programs run ``SMs x blocks_per_sm`` at a time (blocks
  per SM from the occupancy calculator with the predicted registers, capped at the
  per-thread limit, and shared memory); ``waves = ceil(P / (SMs x blocks_per_sm))``;
- **latency** (memory-level parallelism): a program streams its share of the bytes one
  tile at a time, ``tile x element bytes`` in flight (a dot kernel: its operand tiles
  times ``num_stages - 1``); a thread holds at most ``inflight_elements`` of it in flight
  (wider tiles spill or serialise); each step costs one loaded memory latency, plus a
  fixed ``program_latencies`` per program (its first loads, reductions, the final store);
  waves run one after the other, so the last, partial wave costs as much as a full one;
  a tile larger than the data (``cdiv`` rounding up: masked lanes) counts only its filled
  share as in flight;
- **per thread**: a program's elements pass through its threads one after the other,
  ``thread_clocks`` each, a wave after the other: with fewer programs than the SMs hold
  (a decode shape, a row per program), more threads per program finish sooner even when
  the bytes in flight per step are the same;
- **DRAM**: the problem's bytes at a sustained fraction of the SKU's bandwidth;
- **L2 -> SM** (tiled dot kernels): every program re-reads its operand tiles: ``FLOPs x
  element bytes x (1/BLOCK_M + 1/BLOCK_N) / 2`` bytes in all, at
  ``l2_bytes_per_clock_per_sm`` into each SM: the busiest SM's programs set the time
  (``waves x programs per SM x`` a program's bytes), so a grid of fewer programs than SMs
  does not get the idle SMs' share;
- **DRAM re-reads past L2**: the resident programs' data (``min(P, slots) x bytes / P``)
  beyond ``l2_usable_fraction`` of the L2 no longer holds what a program reads twice (a
  row's second pass): ``l2_revisit`` of the bytes times the share that overflows come
  from DRAM again. (Which kernels revisit their data is not known at the config stage; the
  constant is the suite's average, so it penalises concurrency for every kernel alike.)
- **compute**: FLOPs at the tensor-core rate of the MMA path (wgmma with whole warpgroups
  and BLOCK_M a multiple of 64 on Hopper), a block with fewer warps than the SM has
  sub-partitions leaving some idle; for kernels without FLOPs, ``ops_per_element`` issue
  slots per element moved, plus ``ops_per_step`` per warp per tile step (the loop, the
  address arithmetic, the memory instructions, a reduction: a thread with one element per
  step pays them for one element; the masked lanes of a tile larger than the data issue
  too), at one warp instruction per sub-partition per clock;
- **spills**: predicted registers over the per-thread limit multiply the time by
  ``1 + spill_factor x excess / limit``.

The parts combine as a p-norm (``overlap_norm``): imperfect overlap. A config that cannot
launch gets 1000x, so it sorts last. The constants are one set per architecture, fitted
over the whole H200 suite by ``benchmarks/fit_perf_general.py`` (never per kernel) and
validated leave-one-family-out; docs/perf-model.md has the figures.

:func:`estimate_any` is the entry point the tools use: the matmul model where it can judge
the kernel (a problem with M, N, K and a dot tile), else this one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from ..analyzers.occupancy import OccupancyLimits, occupancy
from ..config import KernelConfig
from .problem_grid import exact_programs, number, programs as grid_programs, tile_fill

#: Constexprs that are not tile extents (their values do not size a tensor).
NOT_TILE = ("GROUP", "SPLIT", "NUM_SMS", "NUM_", "STAGES", "CAUSAL", "MUL_", "EVEN", "USE_", "HAS_", "IS_")
#: Bytes per element of a problem dtype (default 2).
DTYPE_BYTES = {"fp8": 1, "fp8e4nv": 1, "fp8e5": 1, "int8": 1, "i8": 1, "fp16": 2, "bf16": 2, "fp32": 4, "tf32": 4,
               "i32": 4, "int32": 4, "fp64": 8, "i64": 8}
#: Registers per thread when the resource model predicts none: a base plus 1.9 per element
#: of the tile a thread holds (kernels without a dot) or per unit of the resource model's
#: ``register_demand_per_thread`` (dot kernels). A ranking weight more than a count: least
#: squares over the H200 suite's spill-free compiles (``fit_perf_general.py --registers``)
#: give 27 + 1.1 x elements per thread and 43 + 0.7 x demand, but ranking with those was
#: worse for the static pick (docs/perf-model.md, 2026-12-02), so the coarser count stays.
#: The register model's own prediction (``register_demand``, which the resource model gives
#: for non-dot kernels) is closer to the compiled count, but ranking with it was worse on
#: the suite (held out, top 5 within 2% in 23 of 43 against 26), so it is not used here yet.
REGISTER_BASE = 26.0
REGISTER_PER_ELEMENT = 1.9
#: Factor for a config that cannot launch: sorts after every config that can.
UNLAUNCHABLE_FACTOR = 1000.0
#: Tensor-core rates relative to fp16 (NVIDIA datasheets), and mma.sync on Hopper (as in perf_model).
EIGHT_BIT_RATE_OF_FP16 = 2.0
TF32_RATE_OF_FP16 = 0.5
MMA_SYNC_RATE_ON_HOPPER = 0.6


@dataclass(frozen=True)
class Constants:
    """The tuned constants (one set per architecture; fitted, see the module docstring).

    - ``bandwidth_fraction``: sustained share of the datasheet DRAM bandwidth (a copy
      reaches about 0.85-0.9 on an H200);
    - ``latency_clocks``: a loaded DRAM round trip, in SM clocks;
    - ``inflight_elements``: the most elements one thread keeps in flight per step;
    - ``program_latencies``: fixed latencies per program (first load, reductions, store);
    - ``l2_bytes_per_clock_per_sm``: L2 -> SM bandwidth for re-read tiles;
    - ``sustained_peak``: share of the datasheet tensor-core peak a dot loop sustains;
    - ``ops_per_element``: issue slots per element moved, for kernels without FLOPs;
    - ``ops_per_step``: issue slots per warp per tile step (loop, addresses, the memory
      instructions themselves, a reduction), for kernels without FLOPs;
    - ``l2_revisit``: share of its bytes a program reads again (a row's second pass); it
      comes from L2 while the resident programs' data fits there, else from DRAM again;
    - ``l2_usable_fraction``: share of the L2 that holds those data;
    - ``spill_factor``: slowdown per unit of registers over the limit (excess / limit);
    - ``overlap_norm``: the p of the p-norm combining the parts;
    - ``thread_clocks``: clocks per element per thread along a program's serial path
      (kernels without FLOPs).
    """

    bandwidth_fraction: float = 0.85
    latency_clocks: float = 1500.0
    inflight_elements: float = 32.0
    program_latencies: float = 1.0
    l2_bytes_per_clock_per_sm: float = 48.0
    sustained_peak: float = 0.8
    ops_per_element: float = 4.0
    ops_per_step: float = 8.0
    l2_revisit: float = 0.0
    l2_usable_fraction: float = 0.5
    spill_factor: float = 4.0
    overlap_norm: float = 4.0
    thread_clocks: float = 0.0


#: Fitted constants by architecture (``benchmarks/fit_perf_general.py`` prints and writes
#: them to ``benchmarks/results/perf_general_fit.json``; copy them here when they change).
FITTED: dict[str, Constants] = {
    # H200 suite, 43 problems: the bandwidth fraction, the L2 rate and the usable L2 share sit at
    # their search bounds (only ratios move the ranking much), so read them as ranking weights,
    # not figures.
    "sm_90": Constants(bandwidth_fraction=0.5, latency_clocks=5100.0, inflight_elements=33.96, program_latencies=0.007745, l2_bytes_per_clock_per_sm=16.0, sustained_peak=0.4913, ops_per_element=13.6, ops_per_step=11.52, l2_revisit=1.008, l2_usable_fraction=0.1, spill_factor=0.595, overlap_norm=1.666, thread_clocks=8.0),
}


def constants_for(arch: Any) -> Constants:
    """The fitted constants of ``arch`` (an Arch): its own, else the nearest fitted one."""
    label = f"sm_{getattr(arch, 'sm', 90)}"
    if label in FITTED:
        return FITTED[label]
    return FITTED["sm_90"]  # the only measured architecture so far


@dataclass(frozen=True)
class Estimate:
    """One config's estimated run time (seconds over the whole grid) and its parts."""

    seconds: float
    parts: dict
    bound: str
    programs: int
    waves: int
    blocks_per_sm: int
    registers: float


def features(config: Any, arch: Any, problem: Mapping[str, Any], facts: Mapping[str, Any] | None = None,
             sku: str | None = None) -> dict[str, float]:
    """Everything :func:`seconds` needs about one config, constants aside (plain floats).

    ``problem`` is a tune space's problem section (sizes, ``dtype``, ``grid``, ``bytes``,
    ``flops``, ``inputs``/``outputs``); ``facts`` the resource model's predictions
    (``registers``, ``register_demand_per_thread``, ``shared_bytes``, ``dot_count`` ...).
    Raises ValueError without a grid.
    """
    from ..arch import load_arch
    from .perf_model import clock_hz, sku_figures

    config = KernelConfig.coerce(config)
    arch = load_arch(arch) if isinstance(arch, str) else arch
    gpu = sku_figures(arch, sku)
    facts = dict(facts or {})
    values = {k: v for k, v in problem.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    env = {**values, "NUM_SMS": int(gpu["sm_count"]), **config.constexprs}
    programs = grid_programs(problem.get("grid"), env)
    fill = min(1.0, exact_programs(problem.get("grid"), env) / programs) * tile_fill(config.constexprs, values)
    warps = int(config.num_warps or 4)
    stages = int(config.num_stages if config.num_stages is not None else 3)
    eb = DTYPE_BYTES.get(str(problem.get("dtype", "fp16")).lower(), 2)
    flops = number(problem.get("flops"), env) or 0.0
    nbytes = number(problem.get("bytes"), env)
    if nbytes is None:
        nbytes = _tensor_bytes(problem, env, eb)
    c = config.constexprs
    bm, bn = _first(c, ("BLOCK_M", "BLOCK_SIZE_M", "BM")), _first(c, ("BLOCK_N", "BLOCK_SIZE_N", "BN"))
    dot = bool(facts.get("dot_count")) or (flops > 0 and bm is not None and bn is not None)
    if dot:
        bk = _first(c, ("BLOCK_K", "BLOCK_SIZE_K", "BK", "HEAD_DIM", "BLOCK_D", "D")) or 32
        # the tile the kernel names first: the resource model's dot tile is one of the kernel's dots, and in an
        # attention kernel that is P @ V, whose N is HEAD_DIM (BLOCK_N would then not move the estimate at all)
        bm = int(bm if bm is not None else facts.get("dot_m"))
        bn = int(bn if bn is not None else facts.get("dot_n"))
        tile_load = float((bm + bn) * bk) * max(1, stages - 1)  # operand tiles in flight per program
        reread = flops * eb * (1.0 / bm + 1.0 / bn) / 2.0
        demand = bm * bn / (32.0 * warps) + (bm + bn) * bk * eb / 4.0 / (32.0 * warps)
        wgmma = bool(arch.features.get("wgmma")) and bm % 64 == 0 and warps % 4 == 0
        path = facts.get("mma_path") or ("wgmma" if wgmma else "mma_sync")
    else:
        tile_load = float(_tile(c))
        reread = 0.0
        demand = tile_load / (32.0 * warps)
        path = "none"
    if facts.get("registers"):  # compiled: the values ptxas spilled are the demand above the limit
        regs = float(facts["registers"]) + float(facts.get("spill_bytes") or 0) / 4.0
    else:
        d = facts.get("register_demand_per_thread")
        regs = REGISTER_BASE + REGISTER_PER_ELEMENT * float(d if d is not None else demand)
    limit = _register_limit(arch, warps)
    limits = _limits(arch)
    occ = occupancy(limits, num_warps=warps, registers_per_thread=int(min(regs, limit)),
                    shared_bytes=int(facts.get("shared_bytes") or 0))
    sms = int(gpu["sm_count"])
    bps = max(1, occ.active_blocks_per_sm)
    return {
        "programs": float(programs), "sms": float(sms), "blocks_per_sm": float(bps), "warps": float(warps),
        "dot": float(dot), "tile_load": tile_load, "element_bytes": float(eb),
        "threads_per_program": 32.0 * warps, "bytes": float(nbytes or 0.0), "reread_bytes": reread,
        "flops": flops, "tensor_flops_per_s": _tensor_rate(arch, gpu, path, str(problem.get("dtype", "fp16"))),
        "dram_bytes_per_s": float(gpu["dram_bandwidth_gbps"]) * 1e9,
        "l2_bytes": float(gpu.get("l2_bytes") or 0.0), "clock_hz": clock_hz(arch, gpu),
        "sub_partitions": float(arch.namespace().get("register_sub_partitions", 4)),
        "registers": regs, "register_limit": float(limit), "launchable": float(occ.launchable),
        "fill": fill,
    }


def seconds(f: Mapping[str, Any], k: Constants, parts: bool = False) -> Any:
    """Estimated seconds from :func:`features` (floats or numpy arrays, for fitting)."""
    P, sms, bps, warps = f["programs"], f["sms"], f["blocks_per_sm"], f["warps"]
    clock = f["clock_hz"]
    slots = sms * bps
    waves = np.ceil(P / slots)
    per_sm = np.minimum(bps, np.ceil(P / sms))  # programs sharing one SM in a wave
    dot = f["dot"] > 0
    # latency: each program streams its bytes one in-flight tile at a time
    tile = np.where(dot, f["tile_load"], f["tile_load"] * f["fill"])  # the masked lanes move nothing
    inflight = np.where(dot, tile, np.minimum(tile, k.inflight_elements * f["threads_per_program"]))
    moved = np.where(dot, f["reread_bytes"], f["bytes"])
    steps = moved / P / (inflight * f["element_bytes"])
    latency = waves * (np.maximum(steps, 1.0) + k.program_latencies) * k.latency_clocks / clock
    # L2 capacity: the data of the programs resident at once; past the usable L2, what a
    # program revisits comes from DRAM again
    footprint = np.minimum(P, slots) * f["bytes"] / P
    usable = f["l2_bytes"] * k.l2_usable_fraction
    overflow = np.where(footprint > usable, 1.0 - usable / np.maximum(footprint, 1.0), 0.0)
    dram = f["bytes"] * (1.0 + k.l2_revisit * overflow) / (f["dram_bytes_per_s"] * k.bandwidth_fraction)
    # L2 -> SM is a per-SM rate: an SM pulls its own programs' tiles, so the busiest SM sets the
    # time (with fewer programs than SMs, the idle SMs pull nothing)
    l2 = waves * per_sm * (f["reread_bytes"] / P) / (k.l2_bytes_per_clock_per_sm * clock)
    busy = np.minimum(1.0, per_sm * warps / f["sub_partitions"])
    tensor = waves * per_sm * (f["flops"] / P) * sms / (f["tensor_flops_per_s"] * k.sustained_peak * busy)
    elements = f["bytes"] / f["element_bytes"]
    # issue: per element, and per warp per tile step (a thread with few elements pays the
    # step's fixed instructions for few of them; masked lanes of an oversized tile issue too)
    tile_steps = np.maximum(f["bytes"] / P / (f["tile_load"] * f["element_bytes"]), 1.0)
    issue = np.where(dot, 0.0, waves * per_sm * ((elements / P) * k.ops_per_element / 32.0
                                                 + tile_steps * warps * k.ops_per_step)
                     / (f["sub_partitions"] * clock * busy))
    # per thread: a program's elements pass through its threads one after the other
    thread = np.where(dot, 0.0, waves * elements / P / f["threads_per_program"] * k.thread_clocks / clock)
    pieces = {"latency": latency, "dram": dram, "l2": l2, "compute": tensor + issue, "thread": thread}
    top = np.maximum.reduce([np.asarray(v, dtype=float) for v in pieces.values()])
    norm = k.overlap_norm
    total = top * sum((np.asarray(v, dtype=float) / top) ** norm for v in pieces.values()) ** (1.0 / norm)
    excess = np.maximum(0.0, f["registers"] - f["register_limit"]) / f["register_limit"]
    total = total * (1.0 + k.spill_factor * excess)
    total = np.where(f["launchable"] > 0, total, total * UNLAUNCHABLE_FACTOR)
    return (total, pieces, waves) if parts else total


def estimate(config: Any, arch: Any, problem: Mapping[str, Any], model: Any = None, sku: str | None = None,
             facts: Mapping[str, Any] | None = None, constants: Constants | None = None) -> Estimate:
    """Estimate one config's run time with the general model (any kernel with a grid).

    ``model`` is the kernel's ResourceModel (its predictions feed registers and shared
    memory); ``facts`` override them. Raises ValueError when the problem has no grid.
    """
    from ..arch import load_arch

    arch = load_arch(arch) if isinstance(arch, str) else arch
    config = KernelConfig.coerce(config)
    predicted = {}
    if model is not None:
        try:
            predicted = dict(model.predict(config))
        except Exception:  # noqa: BLE001 - no prediction: the model's own register estimate
            predicted = {}
    f = features(config, arch, problem, {**predicted, **(facts or {})}, sku=sku)
    k = constants or constants_for(arch)
    total, pieces, waves = seconds(f, k, parts=True)
    pieces = {n: float(v) for n, v in pieces.items()}
    return Estimate(seconds=float(total), parts=pieces, bound=max(pieces, key=pieces.get),
                    programs=int(f["programs"]), waves=int(waves), blocks_per_sm=int(f["blocks_per_sm"]),
                    registers=f["registers"])


def estimate_any(config: Any, arch: Any, problem: Mapping[str, Any], model: Any = None, sku: str | None = None,
                 facts: Mapping[str, Any] | None = None) -> float:
    """Estimated seconds: the matmul model (:func:`kernelrules.predict.perf_model.estimate`) where it
    can judge the kernel (sizes M, N, K and a dot tile), else the general model. Raises ValueError when neither can."""
    from .perf_model import estimate as matmul_estimate

    config = KernelConfig.coerce(config)
    if matmul_judges(config, problem):
        try:
            return float(matmul_estimate(config, arch, problem, model=model, sku=sku, facts=facts).seconds)
        except ValueError:
            pass
    return estimate(config, arch, problem, model=model, sku=sku, facts=facts).seconds


def matmul_judges(config: Any, problem: Mapping[str, Any]) -> bool:
    """Whether the matmul model takes the kernel: integer sizes M, N and K. (On the suite it
    ranks split-K and persistent GEMMs better by top 5 than this model does, though it
    ignores SPLIT_K and the persistent grid; see docs/perf-model.md.)"""
    return all(isinstance(problem.get(a), int) and not isinstance(problem.get(a), bool) for a in ("M", "N", "K"))


# -- helpers ---------------------------------------------------------------------------

def _tensor_bytes(problem: Mapping[str, Any], env: Mapping[str, Any], eb: int) -> float | None:
    """Inputs read once and outputs written once, from the problem's tensor shapes."""
    total = 0.0
    for group in ("inputs", "outputs"):
        for spec in (problem.get(group) or {}).values():
            shape, dtype = (spec, None) if isinstance(spec, list) else (spec.get("shape"), spec.get("dtype"))
            if not shape:
                continue
            count = 1.0
            for extent in shape:
                count *= number(extent, env) or 0.0
            total += count * DTYPE_BYTES.get(str(dtype).lower(), eb)
    return total or None


def _tile(constexprs: Mapping[str, Any]) -> int:
    """Elements of a program's tile: the product of the integer constexprs that size tensors."""
    tile = 1
    for name, value in constexprs.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 1:
            continue
        if any(name.upper().startswith(p) for p in NOT_TILE):
            continue
        tile *= value
    return tile


def _first(values: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    return next((values[n] for n in names if isinstance(values.get(n), int)), None)


def _tensor_rate(arch: Any, gpu: Mapping[str, Any], path: str, dtype: str) -> float:
    """Datasheet FLOP/s of the path and dtype (fp32 FMA when not on tensor cores)."""
    if path == "none":
        return float(gpu["fp32_tflops"]) * 1e12
    peak = float(gpu["fp16_tensor_tflops_dense"])
    dtype = dtype.lower()
    if dtype.startswith("fp8") or dtype in ("int8", "i8"):
        peak *= EIGHT_BIT_RATE_OF_FP16 if path != "mma_sync" else 1.0
    elif dtype in ("fp32", "tf32"):
        peak *= TF32_RATE_OF_FP16
    if path == "mma_sync" and arch.features.get("wgmma"):  # mma.sync where wgmma exists: Hopper
        peak *= MMA_SYNC_RATE_ON_HOPPER
    return peak * 1e12


@lru_cache(maxsize=32)
def _limits(arch: Any) -> OccupancyLimits:
    return OccupancyLimits.from_mapping(arch.namespace())


@lru_cache(maxsize=256)
def _register_limit(arch: Any, num_warps: int) -> int:
    """:func:`~kernelrules.predict.register_model.register_limit` of ``arch`` at ``num_warps``, once per pair (it
    flattens the whole profile each time)."""
    from .register_model import register_limit

    return register_limit(arch, num_warps)


def constants_dict(k: Constants) -> dict[str, float]:
    return asdict(k)


__all__ = ["Constants", "Estimate", "FITTED", "constants_for", "estimate", "estimate_any", "features", "seconds",
           "matmul_judges"]
