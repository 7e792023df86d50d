"""An analytic performance model of a matmul-like Triton kernel, for ranking configs.

Triton's autotuner times every config it is given; with
``prune_configs_by={"perf_model": triton_perf_model(kernel), "top_k": k}``
(:mod:`kernelrules.adapters.triton_perf`, the adapter) it times only the ``k`` configs this model
estimates fastest. The model only has to *order* configs
well; its absolute seconds are a by-product (see docs/perf-model.md for how well it
orders them on a real H200).

What it models, per config, for one dot loop ``C[M, N] += A[M, K] @ B[K, N]`` tiled
``BLOCK_M x BLOCK_N x BLOCK_K`` (the tile shape, the MMA path and the shared memory come
from the kernel's :class:`~kernelrules.predict.resource_model.ResourceModel`):

- **waves**: ``tiles = ceil(M/BM) * ceil(N/BN)`` programs run ``SMs x blocks_per_sm`` at
  a time (blocks per SM from the occupancy calculator with predicted registers and
  shared memory); ``waves = ceil(tiles / (SMs x blocks_per_sm))``; with a ``SPLIT_K``
  constexpr of ``s`` (split-K), ``s`` programs share each tile, each over ``K / s``, and
  each adds its fp32 partial tile to C atomically (a read-modify-write in L2);
- per wave, the time each resource needs alone: the **tensor cores** (or the FMA units
  when the dot is not on them), the **operand feed** through shared memory (small
  per-warp tiles read more bytes per FLOP), **L2 -> SM and DRAM traffic** (DRAM reduced
  by L2 reuse between the programs of one wave, as grouped ordering arranges; spilled
  registers add traffic), and the **load latency** a block cannot hide with its pipeline
  depth; combined as a p-norm (imperfect overlap), plus one latency to fill the pipeline.
  L2 -> SM and DRAM are two parts of that p-norm, not the larger of them: on a
  memory-bound decode GEMM (fp8_gemm__skinny of the H200 suite, M = 16), ``BLOCK_N`` 128
  leaves 64 programs for 132 SMs, each pulling 1.8x the operand bytes of a ``BLOCK_N`` 64
  program through its SM; that time nears the DRAM time and the two do not overlap fully
  (measured 1.04x the best, against 1.00x for ``BLOCK_N`` 64).

Every constant below is named, with why it has its value; docs/perf-model.md says how
well the result orders the configs of a real H200 sweep, and where it is wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from ..analyzers.occupancy import OccupancyLimits, occupancy
from ..config import KernelConfig

#: TF32 (fp32 operands) and 8-bit tensor-core rates relative to fp16, as in NVIDIA's
#: A100/H100 datasheets (TF32 156 vs FP16 312 on an A100; FP8 1979 vs FP16 989 on an H100).
TF32_RATE_OF_FP16 = 0.5
EIGHT_BIT_RATE_OF_FP16 = 2.0
#: Bytes of L2 traffic per output element of a split-K program: an fp32 atomic add reads
#: and writes the element (4 + 4).
ATOMIC_OUTPUT_BYTES = 8

#: Registers per thread besides the accumulator: a base plus a share of the operand tiles.
#: Least squares over the 1098 spill-free sm_90 compiles of the H200 sweep gives 35.5 +
#: 0.73 x; these rounder values err by 12.9 registers on average (eval_perf_model.py).
REGISTER_BASE = 32
OPERAND_REGISTER_SHARE = 0.75

#: Factor for a config that cannot launch (no block fits): sorts after every config that
#: can, and stays finite for Triton's sort.
UNLAUNCHABLE_FACTOR = 1000.0

#: Triton's mma.sync instruction tile per warp (m16n8) and wgmma's rows per warpgroup.
MMA_SYNC_WARP_TILE = (16, 8)
WGMMA_ROWS = 64


@dataclass(frozen=True)
class Constants:
    """The model's five tuned constants (everything else is an architecture figure).

    - ``sustained_peak`` (0.8): the fraction of the datasheet tensor-core (or FMA) peak a
      well-fed kernel sustains; the sweep's cuBLAS reference ran 757 TFLOP/s on an H200
      rated 989 dense (0.77).
    - ``mma_sync_rate_on_hopper`` (0.6): Hopper's mma.sync (Triton's path on sm_90 below
      BLOCK_M 64 or under 4 warps) as a fraction of the wgmma rate: the warp-level
      instruction cannot keep Hopper's tensor cores busy. A judgement: on the sweep the
      largest spill-free tiles (64x64, 64x128, 128x64) give 0.76-0.86 (best mma.sync
      over best wgmma, same tile; smaller tiles are memory-bound either way), and refits
      prefer lower values.
    - ``l2_bytes_per_clock_per_sm`` (48): L2 -> SM bandwidth, times SMs and clock (12.5
      TB/s on an H200). Not in vendor documents; the sweep's fastest 64x64, 64x256 and
      128x64 tiles move 11.1-12.0 TB/s of operands.
    - ``load_latency_clocks`` (1500, 0.76 us at 1.98 GHz): the round trip of a k-step's
      loads under load. With ``num_stages - 1`` loads in flight a block waits at least
      latency / (num_stages - 1) per k-step; with one stage, the whole latency and then
      its compute. Two-stage configs are latency-bound on the sweep (128x128x64, 4 warps:
      511 TFLOP/s with 2 stages, 691 with 3).
    - ``overlap_norm`` (4): the resources overlap imperfectly: a wave takes the p-norm
      of the per-resource times (p = 1 would add them, p = infinity take the largest),
      so a near-tie between, say, memory and compute costs more than either alone.
    """

    sustained_peak: float = 0.8
    mma_sync_rate_on_hopper: float = 0.6
    l2_bytes_per_clock_per_sm: float = 48.0
    load_latency_clocks: float = 1500.0
    overlap_norm: float = 4.0


#: The constants estimate() uses unless given others.
DEFAULTS = Constants()

_BLOCK_NAMES = {"m": ("BLOCK_M", "BLOCK_SIZE_M", "BM"), "n": ("BLOCK_N", "BLOCK_SIZE_N", "BN"),
                "k": ("BLOCK_K", "BLOCK_SIZE_K", "BK")}
_GROUP_NAMES = ("GROUP_SIZE_M", "GROUP_M", "GROUP_SIZE")
_DTYPE_BITS = {"fp16": 16, "bf16": 16, "fp32": 32, "tf32": 32, "fp8": 8, "fp8e4nv": 8, "fp8e5": 8, "int8": 8, "i8": 8}


@dataclass(frozen=True)
class Estimate:
    """One config's estimated run time and where it goes (seconds over the whole grid)."""

    seconds: float
    compute_seconds: float  # tensor cores (or FMA units) alone
    feed_seconds: float  # shared-memory operand traffic alone
    memory_seconds: float  # the slower of L2 -> SM and DRAM traffic
    latency_seconds: float  # load latency not hidden by the pipeline, plus pipeline fills
    bound: str  # "compute", "feed", "l2", "dram", "latency" or "unlaunchable"
    waves: int
    tiles: int
    blocks_per_sm: int
    occupancy: float
    mma_path: str
    registers: int
    flops: float

    @property
    def tflops(self) -> float:
        """The estimated throughput, 2*M*N*K / seconds, in TFLOP/s."""
        return self.flops / self.seconds / 1e12


def estimate(config: Any, arch: Any, problem: Mapping[str, Any], model: Any = None, sku: str | None = None,
             facts: Mapping[str, Any] | None = None, constants: Constants = DEFAULTS) -> Estimate:
    """Estimate one config's run time on ``arch`` (an Arch or a name) for ``problem`` (M, N, K, dtype).

    ``model`` is the kernel's ResourceModel (without one, the tile is read from
    constexprs named BLOCK_M/BLOCK_N/BLOCK_K); ``facts`` (e.g. compiled ones) override
    its predictions; ``sku`` picks the GPU when ``arch`` names none (default: the
    architecture's first SKU); ``constants`` replaces the tuned constants. Raises
    ValueError when the inputs do not determine a tile or a GPU.
    """
    from ..arch import load_arch

    config = KernelConfig.coerce(config)
    arch = load_arch(arch) if isinstance(arch, str) else arch
    gpu = sku_figures(arch, sku)
    f = {**(model.predict(config) if model is not None else _facts_from_names(config, arch)), **(facts or {})}
    if not all(isinstance(f.get(k), int) and f[k] > 0 for k in ("dot_m", "dot_n", "dot_k")):
        raise ValueError(f"no dot tile for {config} (no resource model prediction, no BLOCK_M/N/K)")
    m, n, k = problem_sizes(problem)
    warps = config.num_warps or 4
    # compiled registers stop at the limit; the values ptxas spilled are the demand above it
    regs = int(f.get("registers") or registers(f, warps)) + int(f.get("spill_bytes") or 0) // 4
    limits = _limits(arch)
    occ = occupancy(limits, num_warps=warps, registers_per_thread=min(regs, limits.max_registers_per_thread),
                    shared_bytes=int(f.get("shared_bytes") or 0))
    bps = max(1, occ.active_blocks_per_sm)
    split = split_k(config)
    tiles = math.ceil(m / f["dot_m"]) * math.ceil(n / f["dot_n"]) * split
    waves = math.ceil(tiles / (int(gpu["sm_count"]) * bps))
    k_slice = math.ceil(math.ceil(k / f["dot_k"]) / split) * f["dot_k"]  # a program's share of K
    # a lone partial wave spreads its programs over the SMs: no SM runs more than its share of them
    per_sm = bps if waves > 1 else min(bps, math.ceil(tiles / int(gpu["sm_count"])))
    parts, fill = _wave_parts(config, arch, gpu, f, (m, n, k_slice), _element_bytes(problem, f), per_sm, regs,
                              constants, _operand_dtype(problem, f), atomic=split > 1)
    bound = max(parts, key=parts.get)
    top = parts[bound]
    overlapped = top * sum((t / top) ** constants.overlap_norm for t in parts.values()) ** (1 / constants.overlap_norm)
    seconds = waves * (fill + overlapped)  # the first loads of a wave overlap nothing
    if not occ.launchable:
        seconds, bound = seconds * UNLAUNCHABLE_FACTOR, "unlaunchable"
    return Estimate(seconds=seconds, compute_seconds=waves * parts["compute"], feed_seconds=waves * parts["feed"],
                    memory_seconds=waves * max(parts["l2"], parts["dram"]), latency_seconds=waves * (parts["latency"] + fill),
                    bound=bound, waves=waves, tiles=tiles, blocks_per_sm=occ.active_blocks_per_sm,
                    occupancy=occ.occupancy, mma_path=f.get("mma_path") or "none", registers=regs,
                    flops=2.0 * m * n * k)


def _wave_parts(config: KernelConfig, arch: Any, gpu: Mapping[str, Any], f: Mapping[str, Any],
                mnk: tuple[int, int, int], elem: int, bps: int, regs: int, constants: Constants,
                dtype: str, atomic: bool = False) -> tuple[dict[str, float], float]:
    """Seconds one wave spends on each resource alone, and the pipeline fill (one load latency).

    Per SM, ``bps`` blocks share the tensor cores and shared memory; all SMs share L2 and
    DRAM. A block's own k-steps cannot go faster than its loads arrive: with ``d =
    num_stages - 1`` loads in flight, latency / d per k-step; with one stage, the whole
    latency plus its own compute. ``mnk``'s K is one program's share (split-K: ``K / s``);
    ``atomic``: each program adds an fp32 tile to C (read and written in L2) instead of storing it.
    """
    bm, bn, bk = f["dot_m"], f["dot_n"], f["dot_k"]
    m, n, k = mnk
    path, warps = f.get("mma_path") or "none", config.num_warps or 4
    stages = config.num_stages if config.num_stages is not None else 3
    flat = arch.namespace()
    sms, clock = int(gpu["sm_count"]), clock_hz(arch, gpu)
    slots, k_steps = sms * bps, math.ceil(k / bk)

    sub_partitions = int(flat.get("register_sub_partitions", 4))
    busy = min(1.0, bps * warps / sub_partitions)  # a warp feeds one sub-partition
    full_rate = _compute_rate(arch, gpu, path, dtype, constants) / sms
    block_work = 2.0 * bm * bn * bk * _wasted_width(bm, bn, warps, path)
    compute = bps * block_work / (full_rate * busy)
    own = block_work / (full_rate * min(1.0, warps / sub_partitions))  # one block's k-step on its own warps
    smem_rate = int(flat.get("shared_memory_banks", 32)) * int(flat.get("bank_width_bytes", 4)) * clock
    feed = bps * _feed_bytes(bm, bn, bk, elem, path, warps) / smem_rate
    spill = max(0, regs - int(flat.get("max_registers_per_thread", 255))) * 4 * 2 * 32 * warps  # store + reload
    l2_rate = constants.l2_bytes_per_clock_per_sm * sms * clock
    out = slots * bm * bn * (ATOMIC_OUTPUT_BYTES if atomic else elem)
    l2 = (k_steps * slots * ((bm + bn) * bk * elem + spill) + out) / l2_rate
    dram = (wave_dram_bytes(bm, bn, k, elem, tiles_m=math.ceil(m / bm), tiles_n=math.ceil(n / bn), slots=slots,
                            group=_group(config), l2_bytes=int(gpu["l2_bytes"])) + out) \
        / (float(gpu["dram_bandwidth_gbps"]) * 1e9)
    latency = constants.load_latency_clocks / clock
    chain = latency + own if stages <= 1 else latency / (stages - 1)
    parts = {"compute": k_steps * compute, "feed": k_steps * feed, "l2": l2, "dram": dram, "latency": k_steps * chain}
    return parts, latency


def problem_sizes(problem: Mapping[str, Any]) -> tuple[int, int, int]:
    """M, N, K of a problem; ValueError unless they are positive integers."""
    sizes = tuple(problem.get(axis) for axis in ("M", "N", "K"))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        raise ValueError(f"problem sizes must be positive integers, got M, N, K = {sizes}")
    return sizes  # type: ignore[return-value]


def registers(facts: Mapping[str, Any], num_warps: int) -> int:
    """Predicted registers per thread: the accumulator, plus REGISTER_BASE and a share of the
    operand tiles (uncapped: above the 255 limit, the excess spills)."""
    acc = facts.get("accumulator_registers_per_thread")
    if acc is None:
        acc = facts["dot_m"] * facts["dot_n"] // (32 * num_warps)
    operand = facts.get("operand_registers_per_thread")
    if operand is None:
        bits = facts.get("dot_operand_bits") or 16
        operand = (facts["dot_m"] + facts["dot_n"]) * facts["dot_k"] * bits // 32 // (32 * num_warps)
    return int(acc + REGISTER_BASE + OPERAND_REGISTER_SHARE * operand)


def warp_tile(bm: int, bn: int, num_warps: int, path: str) -> tuple[float, float]:
    """The part of the output tile one warp (mma.sync) or one wgmma instruction covers.

    mma.sync: warps are split between M and N the way Triton's ``warpsPerTileV2`` does
    (double the M split while M has more m16 rows per warp than N has pairs of n8
    columns, and M rows remain; else double the N split). wgmma: warpgroups split M in
    64-row slices first, then N. A warp tile narrower than the instruction's n8 wastes
    the rest of it, which :func:`_feed_bytes` counts through the returned width.
    """
    if path == "wgmma":
        groups = max(1, num_warps // 4)
        along_m = min(groups, max(1, bm // WGMMA_ROWS))
        return float(WGMMA_ROWS), bn / (groups // along_m)
    wm, wn = MMA_SYNC_WARP_TILE
    split_m = split_n = 1
    while split_m * split_n < num_warps:
        if bm // wm // split_m >= bn // (wn * 2) // split_n and split_m < bm // wm:
            split_m *= 2
        else:
            split_n *= 2
    return bm / split_m, bn / split_n


def wave_dram_bytes(bm: int, bn: int, k: int, elem: int, *, tiles_m: int, tiles_n: int, slots: int, group: int,
                    l2_bytes: int) -> float:
    """A and B bytes one wave reads from DRAM: each distinct row panel of A and column panel
    of B once, if they fit in L2 together; otherwise every tile's own panels.

    With grouped ordering (``GROUP_SIZE_M`` rows of tiles visited column by column) the
    ``slots`` programs of a wave span ``min(group, tiles_m)`` tile rows and
    ``slots / rows`` tile columns; without it (group 1), whole rows of tiles.
    """
    rows = min(tiles_m, max(min(group, slots), math.ceil(slots / tiles_n)))
    cols = min(tiles_n, math.ceil(slots / rows))
    unique = (rows * bm + cols * bn) * k * elem
    if unique <= l2_bytes:
        return float(unique)
    return float(min(slots, tiles_m * tiles_n) * (bm + bn) * k * elem)


def _wasted_width(bm: int, bn: int, num_warps: int, path: str) -> float:
    """Executed over useful tensor-core work: a warp tile narrower than n8 still runs whole
    m16n8 instructions (1 when nothing is wasted)."""
    if path != "mma_sync":
        return 1.0
    return max(1.0, MMA_SYNC_WARP_TILE[1] / warp_tile(bm, bn, num_warps, path)[1])


def _feed_bytes(bm: int, bn: int, bk: int, elem: int, path: str, num_warps: int) -> float:
    """Shared-memory bytes of one block's k-step: the operand tiles written once (cp.async)
    and read by every warp (or wgmma slice) for its part of the output (an FMA dot's warps
    read their slices like mma.sync warps)."""
    wm, wn = warp_tile(bm, bn, num_warps, "wgmma" if path == "wgmma" else "mma_sync")
    pieces = (bm / wm) * max(1.0, bn / wn)  # warp tiles, or instruction slices (wgmma)
    read = pieces * (wm + max(wn, MMA_SYNC_WARP_TILE[1])) * bk * elem
    return float((bm + bn) * bk * elem + read)


def _compute_rate(arch: Any, gpu: Mapping[str, Any], path: str, dtype: str, constants: Constants) -> float:
    """Sustained FLOP/s of the whole GPU for this MMA path and operand dtype."""
    if path == "none":
        return float(gpu["fp32_tflops"]) * 1e12 * constants.sustained_peak
    peak = float(gpu.get(f"{dtype}_tensor_tflops_dense") or gpu["fp16_tensor_tflops_dense"])
    if dtype in ("fp32", "tf32"):
        peak = float(gpu["fp16_tensor_tflops_dense"]) * TF32_RATE_OF_FP16
    elif dtype == "int8" or (dtype == "fp8" and arch.features.get("fp8_tensor_cores") and path != "mma_sync"):
        peak = float(gpu["fp16_tensor_tflops_dense"]) * EIGHT_BIT_RATE_OF_FP16  # mma.sync upcasts fp8 to fp16
    if path == "mma_sync" and arch.features.get("wgmma"):  # mma.sync where wgmma exists: Hopper
        peak *= constants.mma_sync_rate_on_hopper
    return peak * 1e12 * constants.sustained_peak


@lru_cache(maxsize=32)
def _limits(arch: Any) -> OccupancyLimits:
    return OccupancyLimits.from_mapping(arch.namespace())


def sku_figures(arch: Any, sku: str | None) -> Mapping[str, Any]:
    """The SKU figures: ``sku`` if given, else the arch's own SKU, else its first one."""
    from ..arch import load_arch

    if sku:
        return load_arch(sku).sku_data or {}
    if arch.sku_data is not None:
        return arch.sku_data
    if not arch.skus:
        raise ValueError(f"{arch.name} has no SKU with peak figures; pass sku=")
    return load_arch(arch.skus[0]).sku_data or {}


def clock_hz(arch: Any, gpu: Mapping[str, Any]) -> float:
    """The SM clock: the SKU's boost clock, else that of another SKU of the same architecture."""
    from ..arch import load_arch

    clocks = (load_arch(s).sku_data.get("boost_clock_mhz") for s in arch.skus)
    mhz = gpu.get("boost_clock_mhz") or next((c for c in clocks if c), None)
    if not mhz:
        raise ValueError(f"no SM clock for {arch.name}")
    return float(mhz) * 1e6


def _first(values: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    return next((values[n] for n in names if isinstance(values.get(n), int)), None)


def _facts_from_names(config: KernelConfig, arch: Any) -> dict[str, Any]:
    """Tile, path and pipeline buffers from constexpr names, when there is no resource model
    (Triton 3.6's rules: wgmma where the profile has it (sm_90) for M a multiple of 64 and whole warpgroups;
    ``num_stages`` buffers with wgmma, ``num_stages - 1`` otherwise)."""
    values = config.constexprs
    bm, bn, bk = (_first(values, _BLOCK_NAMES[a]) for a in "mnk")
    if None in (bm, bn, bk):
        return {}
    warps, stages = config.num_warps or 4, config.num_stages if config.num_stages is not None else 3
    wgmma = bool(arch.features.get("wgmma")) and bm % WGMMA_ROWS == 0 and warps % 4 == 0
    buffers = max(1, stages if wgmma else stages - 1)
    return {"dot_m": bm, "dot_n": bn, "dot_k": bk, "mma_path": "wgmma" if wgmma else "mma_sync",
            "shared_bytes": buffers * (bm + bn) * bk * 2}


def split_k(config: KernelConfig) -> int:
    """The split-K factor: a ``SPLIT_K`` constexpr (programs per output tile), else 1."""
    value = config.constexprs.get("SPLIT_K")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


def _group(config: KernelConfig) -> int:
    return int(_first(config.constexprs, _GROUP_NAMES) or 1)


def _element_bytes(problem: Mapping[str, Any], facts: Mapping[str, Any]) -> int:
    bits = _DTYPE_BITS.get(str(problem.get("dtype", "")).lower()) or facts.get("dot_operand_bits") or 16
    return max(1, int(bits) // 8)


def _operand_dtype(problem: Mapping[str, Any], facts: Mapping[str, Any]) -> str:
    """fp16, bf16, fp32, fp8 or int8: the problem's dtype, else guessed from the operand bits."""
    dtype = str(problem.get("dtype", "")).lower()
    if dtype.startswith("fp8"):
        return "fp8"
    if dtype in ("bf16", "fp16", "fp32", "tf32", "int8"):
        return dtype
    return {8: "fp8", 16: "fp16", 32: "fp32"}.get(int(facts.get("dot_operand_bits") or 16), "fp16")
