"""Theoretical occupancy of one Triton kernel on one NVIDIA SM.

This is a re-derivation, in Python, of the arithmetic in NVIDIA's occupancy
calculator header ``cuda_occupancy.h`` (CUDA 12.8; the Triton wheel ships it as
``triton/backends/nvidia/include/cuda_occupancy.h``). Each helper below names the
header function whose arithmetic it follows. Nothing is copied from the header;
the per-architecture numbers come from an architecture profile through
:class:`OccupancyLimits`, so the module is a pure function over plain numbers
and imports nothing from the rest of kernelrules.

The Triton view of a launch: a block is ``num_warps`` warps, every thread uses
``registers_per_thread`` registers (``CompiledKernel.n_regs``), the block takes
``shared_bytes`` of dynamic shared memory (``metadata.shared``) plus any static
shared memory of the cubin, and the kernel declares one block barrier.

About ``static_shared_bytes``: the 1 KiB static section ptxas adds to sm_90+
Triton cubins is tied to ``.nv.reservedSmem``; on an H200 it proved to be the
driver's reserved 1 KiB, not an extra static allocation (kernels with
``metadata.shared`` up to the full 232448 B opt-in launched; see
``docs/validation.md``). It is already counted through
``reserved_shared_memory_per_block``; pass 0 for it, and use
``static_shared_bytes`` only for genuine ``.shared`` variables.

Why over 400 lines: it mirrors cuda_occupancy.h, one function per limiter, so that it can be read
against that header line by line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal

#: What the header reports for "this resource does not limit occupancy" (INT_MAX).
UNLIMITED = 2**31 - 1

#: The dynamic shared memory a block may use without opting in (48 KiB). Triton's
#: ``loadBinary`` (``backends/nvidia/driver.c``) opts in only above this size.
DEFAULT_SHARED_MEMORY_PER_BLOCK = 49152

Limiter = Literal["registers", "shared_memory", "warps", "blocks", "barriers"]

#: Tie-break order for :attr:`Occupancy.limiter`: the first binding limit in this
#: order is reported (the header returns an unordered bit field instead).
LIMITER_ORDER: tuple[Limiter, ...] = ("registers", "shared_memory", "warps", "blocks", "barriers")


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True, kw_only=True)
class OccupancyLimits:
    """The per-compute-capability numbers the occupancy arithmetic needs.

    Field names are the flat architecture-profile keys (see
    :meth:`from_mapping`). The defaulted fields hold the same value on every
    NVIDIA architecture from sm_80 to sm_120 (``cudaOccRegAllocationGranularity``,
    ``cudaOccSubPartitionsPerMultiprocessor``, ``cudaOccSMemAllocationGranularity``
    and the driver's reserved shared memory per block).

    ``shared_memory_carveout_steps`` are the shared-memory sizes, in bytes, an SM
    can be configured to (``cudaOccAlignUpShmemSizeVoltaPlus``). When empty, the
    SM is treated as having a single configuration of ``shared_memory_per_sm``.
    ``block_barriers_per_sm`` (``cudaOccMaxBlocksPerSMBlockBarrierLimit``) is
    optional; Triton kernels declare one barrier, so it never binds on the
    profiled architectures, but it is reported when given.
    """

    warp_size: int = 32
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int = 1024
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256
    register_sub_partitions: int = 4
    shared_memory_per_sm: int
    shared_memory_per_block_optin: int
    shared_memory_per_block: int = DEFAULT_SHARED_MEMORY_PER_BLOCK
    reserved_shared_memory_per_block: int = 1024
    shared_memory_allocation_granularity: int = 128
    shared_memory_carveout_steps: tuple[int, ...] = field(default=())
    block_barriers_per_sm: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shared_memory_carveout_steps", tuple(self.shared_memory_carveout_steps))
        self._check_positive()
        self._check_carveout_steps()

    def _check_positive(self) -> None:
        """Reject non-integer, zero or negative sizes: every division below relies on them."""
        may_be_zero = {"reserved_shared_memory_per_block"}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("shared_memory_carveout_steps",) or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"OccupancyLimits.{f.name} must be an int, got {value!r}")
            if value < 0 or (value == 0 and f.name not in may_be_zero):
                raise ValueError(f"OccupancyLimits.{f.name} must be positive, got {value}")

    def _check_carveout_steps(self) -> None:
        """Steps must be ascending byte sizes whose largest is ``shared_memory_per_sm``."""
        steps = self.shared_memory_carveout_steps
        if not steps:
            return
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in steps):
            raise ValueError(f"shared_memory_carveout_steps must be non-negative ints, got {steps!r}")
        if list(steps) != sorted(set(steps)):
            raise ValueError(f"shared_memory_carveout_steps must be strictly ascending, got {steps!r}")
        if steps[-1] != self.shared_memory_per_sm:
            raise ValueError(
                f"the largest carveout step ({steps[-1]}) must equal shared_memory_per_sm ({self.shared_memory_per_sm})"
            )

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> OccupancyLimits:
        """Build limits from a flat dict keyed by the field names (an arch profile's ``flat()``).

        Unknown keys are ignored, so a whole flat profile can be passed. A value
        may also be a ``{"value": ..., "source": ...}`` entry as written in the
        profile YAML. ``max_warps_per_sm`` may be omitted when
        ``max_threads_per_sm`` is present.

        ``shared_memory_carveout_steps`` is a list of ints in bytes. If any
        *non-zero* step is below 1024 the list is taken to be in KiB and
        multiplied by 1024 (the 0 step is in both spellings, so it cannot decide).
        """
        flat = {key: _unwrap(value) for key, value in d.items()}
        if "max_warps_per_sm" not in flat and "max_threads_per_sm" in flat:
            flat["max_warps_per_sm"] = int(flat["max_threads_per_sm"]) // int(flat.get("warp_size", 32))
        if flat.get("shared_memory_carveout_steps") is not None:
            flat["shared_memory_carveout_steps"] = carveout_steps_in_bytes(flat["shared_memory_carveout_steps"])
        names = {f.name for f in fields(cls)}
        kwargs = {key: value for key, value in flat.items() if key in names and value is not None}
        missing = sorted(f.name for f in fields(cls) if f.name not in kwargs and _is_required(f))
        if missing:
            raise ValueError(f"occupancy limits are missing {', '.join(missing)}")
        return cls(**kwargs)


def _unwrap(value: Any) -> Any:
    """Return ``value["value"]`` for a profile ``{value, source}`` entry, else ``value``."""
    if isinstance(value, Mapping) and "value" in value:
        return value["value"]
    return value


def _is_required(f: Any) -> bool:
    """True for a dataclass field with no default."""
    return f.default is MISSING and f.default_factory is MISSING


def carveout_steps_in_bytes(steps: Any) -> tuple[int, ...]:
    """Return carveout steps in bytes; a list with a non-zero entry below 1024 is read as KiB."""
    values = [int(s) for s in steps]
    if any(0 < s < 1024 for s in values):
        return tuple(s * 1024 for s in values)
    return tuple(values)


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class Occupancy:
    """How many blocks and warps of one kernel fit on one SM, and what stops more.

    ``blocks_by_*`` are the per-resource limits of ``cudaOccResult``
    (``blockLimitRegs``, ``blockLimitSharedMem``, ``blockLimitWarps``,
    ``blockLimitBlocks``, ``blockLimitBarriers``); :data:`UNLIMITED` means the
    resource does not limit at all. ``limiter`` is the first of
    :data:`LIMITER_ORDER` whose limit equals the result; ``limiters`` lists them
    all. ``carveout_bytes`` is the shared-memory configuration of the SM that the
    calculation assumes, or 0 when a block cannot fit at all.
    """

    active_blocks_per_sm: int
    active_warps_per_sm: int
    occupancy: float
    limiter: Limiter
    limiters: tuple[Limiter, ...]
    blocks_by_registers: int
    blocks_by_shared_memory: int
    blocks_by_warps: int
    blocks_by_block_limit: int
    blocks_by_barriers: int
    registers_per_warp_allocated: int
    registers_per_block_allocated: int
    shared_per_block_allocated: int
    carveout_bytes: int
    launchable: bool
    reason: str

    @property
    def registers_used_per_sm(self) -> int:
        """Registers held by all active blocks."""
        return self.active_blocks_per_sm * self.registers_per_block_allocated

    @property
    def shared_used_per_sm(self) -> int:
        """Shared memory (with the reserved part and rounding) held by all active blocks."""
        return self.active_blocks_per_sm * self.shared_per_block_allocated


# --------------------------------------------------------------------------- arithmetic


def round_up(value: int, granularity: int) -> int:
    """Round ``value`` up to a multiple of ``granularity`` (the header's ``__occRoundUp``)."""
    return -(-value // granularity) * granularity


def registers_per_warp_allocated(limits: OccupancyLimits, registers_per_thread: int) -> int:
    """Registers one warp is given: ``regs * warp_size`` rounded up to the allocation unit.

    ``regsAllocatedPerWarp`` in ``cudaOccMaxBlocksPerSMRegsLimit``; the unit is
    ``cudaOccRegAllocationGranularity`` (256 registers).
    """
    return round_up(registers_per_thread * limits.warp_size, limits.register_allocation_unit)


def register_launch_problems(limits: OccupancyLimits, *, num_warps: int, registers_per_thread: int) -> list[str]:
    """Why one block cannot get its registers; empty when it can.

    The three checks of ``cudaOccMaxBlocksPerSMRegsLimit``: the per-thread
    maximum, the "hardware" check (the warp count rounded up to the number of
    sub-partitions, as the hardware assumes a block is spread over all of them)
    and the "software" check (the allocated registers of the block). Both
    block checks are stricter than ``registers_per_thread * threads``.
    """
    problems = []
    if registers_per_thread > limits.max_registers_per_thread:
        problems.append(
            f"{registers_per_thread} registers per thread > max_registers_per_thread {limits.max_registers_per_thread}"
        )
    per_warp = registers_per_warp_allocated(limits, registers_per_thread)
    assumed = per_warp * round_up(num_warps, limits.register_sub_partitions)
    allocated = per_warp * num_warps
    if max(assumed, allocated) > limits.registers_per_block:
        problems.append(
            f"{max(assumed, allocated)} registers per block (allocated, {per_warp} per warp) "
            f"> registers_per_block {limits.registers_per_block}"
        )
    return problems


def blocks_by_registers(limits: OccupancyLimits, *, num_warps: int, registers_per_thread: int) -> int:
    """Blocks per SM allowed by the register file (``cudaOccMaxBlocksPerSMRegsLimit``).

    Registers live in ``register_sub_partitions`` equal slices of the register
    file, and a warp's registers come from one slice, so the warps that fit are
    ``floor(slice / regs_per_warp) * sub_partitions``; blocks are those warps
    divided by the warps of a block. Partitioned global caching (sm_52 only) is
    not modelled.
    """
    if register_launch_problems(limits, num_warps=num_warps, registers_per_thread=registers_per_thread):
        return 0
    per_warp = registers_per_warp_allocated(limits, registers_per_thread)
    if per_warp == 0:
        return UNLIMITED
    warps_per_slice = (limits.registers_per_sm // limits.register_sub_partitions) // per_warp
    return warps_per_slice * limits.register_sub_partitions // num_warps


def blocks_by_warps(limits: OccupancyLimits, *, num_warps: int) -> int:
    """Blocks per SM allowed by the warp slots (``cudaOccMaxBlocksPerSMWarpsLimit``).

    0 when the block has more threads than ``max_threads_per_block``.
    """
    if num_warps * limits.warp_size > limits.max_threads_per_block:
        return 0
    return limits.max_warps_per_sm // num_warps


def shared_per_block_allocated(limits: OccupancyLimits, shared_bytes: int, static_shared_bytes: int = 0) -> int:
    """Shared memory one block takes from the SM: ``smemAllocatedPerCTA``.

    Dynamic plus static plus the driver's reserved bytes, rounded up to
    ``cudaOccSMemAllocationGranularity`` (``cudaOccMaxBlocksPerSMSmemLimit``).
    """
    total = shared_bytes + static_shared_bytes + limits.reserved_shared_memory_per_block
    return round_up(total, limits.shared_memory_allocation_granularity)


def max_dynamic_shared_bytes(limits: OccupancyLimits, shared_bytes: int, static_shared_bytes: int = 0) -> int:
    """The function's ``maxDynamicSharedSizeBytes`` after Triton loads it.

    Triton's ``loadBinary`` raises the attribute to ``optin - static`` only when
    ``shared > 48 KiB``; otherwise the driver default ``48 KiB - static`` stays.
    """
    if shared_bytes > limits.shared_memory_per_block:
        return limits.shared_memory_per_block_optin - static_shared_bytes
    return limits.shared_memory_per_block - static_shared_bytes


def shared_launch_problems(limits: OccupancyLimits, shared_bytes: int, static_shared_bytes: int = 0) -> list[str]:
    """Why one block cannot get its shared memory; empty when it can.

    Triton's own check (``CompiledKernel._init_handles``: ``metadata.shared >
    max_shared_mem`` raises ``OutOfResources``), then the two checks of
    ``cudaOccMaxBlocksPerSMSmemLimit``: the dynamic size against the function's
    ``maxDynamicSharedSizeBytes`` and the allocated size against
    ``cudaOccSMemPerBlock`` (the opt-in limit plus the reserved bytes).
    """
    problems = []
    if shared_bytes > limits.shared_memory_per_block_optin:
        problems.append(
            f"shared memory {shared_bytes} B > shared_memory_per_block_optin "
            f"{limits.shared_memory_per_block_optin} B (Triton raises OutOfResources)"
        )
    max_dynamic = max_dynamic_shared_bytes(limits, shared_bytes, static_shared_bytes)
    if shared_bytes > max_dynamic and not problems:
        opted_in = shared_bytes > limits.shared_memory_per_block
        why = "the opt-in limit" if opted_in else f"Triton opts in only above {limits.shared_memory_per_block} B"
        problems.append(
            f"dynamic shared memory {shared_bytes} B > {max_dynamic} B allowed for the function "
            f"({why}, minus {static_shared_bytes} B static)"
        )
    max_usage = static_shared_bytes + limits.reserved_shared_memory_per_block + max_dynamic
    per_block = (
        limits.shared_memory_per_block_optin
        if max_usage > limits.shared_memory_per_block
        else limits.shared_memory_per_block
    ) + limits.reserved_shared_memory_per_block
    allocated = shared_per_block_allocated(limits, shared_bytes, static_shared_bytes)
    if allocated > per_block and not problems:
        problems.append(f"allocated shared memory {allocated} B per block > {per_block} B")
    return problems


def align_up_to_carveout(limits: OccupancyLimits, nbytes: int) -> int | None:
    """The smallest carveout step holding ``nbytes`` (``cudaOccAlignUpShmemSizeVoltaPlus``).

    ``None`` when no step is large enough (the header's ``INVALID_INPUT``).
    """
    steps = limits.shared_memory_carveout_steps or (limits.shared_memory_per_sm,)
    for step in steps:
        if nbytes <= step:
            return step
    return None


def preferred_carveout(limits: OccupancyLimits, carveout_preference: int | None) -> int:
    """The SM shared-memory size the user's preference maps to (``cudaOccSMemPreferenceVoltaPlus``).

    ``carveout_preference`` is the CUDA carveout attribute, a percentage of
    ``shared_memory_per_sm`` (0 = max L1, 50 = half, 100 = max shared); ``None``
    is ``SHAREDMEM_CARVEOUT_DEFAULT``, which the header maps to the full
    ``shared_memory_per_sm``. The bytes are aligned up to a carveout step.
    """
    if carveout_preference is None:
        wanted = limits.shared_memory_per_sm
    else:
        wanted = carveout_preference * limits.shared_memory_per_sm // 100
    step = align_up_to_carveout(limits, wanted)
    return limits.shared_memory_per_sm if step is None else step


def carveout_for_block(limits: OccupancyLimits, allocated: int, carveout_preference: int | None) -> int:
    """The carveout the calculation assumes for blocks of ``allocated`` bytes.

    ``cudaOccMaxBlocksPerSMSmemLimit``: the preferred carveout is used as long
    as one block fits in it; otherwise the block's size is aligned up to the
    next step, so a preference can lower occupancy but never prevent a launch.
    """
    preferred = preferred_carveout(limits, carveout_preference)
    if preferred >= allocated:
        return preferred
    step = align_up_to_carveout(limits, allocated)
    return limits.shared_memory_per_sm if step is None else step


def blocks_by_shared_memory(limits: OccupancyLimits, allocated: int, carveout: int) -> int:
    """Blocks per SM allowed by shared memory: ``floor(carveout / allocated)``."""
    if allocated == 0:
        return UNLIMITED
    return carveout // allocated


def blocks_by_barriers(limits: OccupancyLimits, num_block_barriers: int = 1) -> int:
    """Blocks per SM allowed by block barriers (``cudaOccMaxBlocksPerSMBlockBarrierLimit``).

    :data:`UNLIMITED` when the profile gives no barrier count.
    """
    if limits.block_barriers_per_sm is None or num_block_barriers <= 0:
        return UNLIMITED
    return limits.block_barriers_per_sm // num_block_barriers


def binding_limiters(limits_by_name: Mapping[Limiter, int], active: int) -> tuple[Limiter, ...]:
    """The resources whose block limit equals the result, in :data:`LIMITER_ORDER`."""
    return tuple(name for name in LIMITER_ORDER if limits_by_name[name] == active)


# --------------------------------------------------------------------------- entry point


def _check_inputs(
    num_warps: int, registers_per_thread: int, shared_bytes: int, static_shared_bytes: int, carveout: int | None
) -> None:
    """Reject inputs the arithmetic has no meaning for."""
    if num_warps < 1:
        raise ValueError(f"num_warps must be at least 1, got {num_warps}")
    for name, value in (
        ("registers_per_thread", registers_per_thread),
        ("shared_bytes", shared_bytes),
        ("static_shared_bytes", static_shared_bytes),
    ):
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")
    if carveout is not None and not 0 <= carveout <= 100:
        raise ValueError(f"carveout_preference is a percentage 0..100 or None, got {carveout}")


def occupancy(
    limits: OccupancyLimits,
    *,
    num_warps: int,
    registers_per_thread: int,
    shared_bytes: int,
    static_shared_bytes: int = 0,
    carveout_preference: int | None = None,
) -> Occupancy:
    """Active blocks and warps per SM, following ``cudaOccMaxActiveBlocksPerMultiprocessor``.

    The result is the minimum of the register, shared-memory, warp-slot and
    block-slot limits (and the barrier limit when the profile gives one; with
    Triton's single barrier per block it never binds). ``launchable`` is False,
    with the reasons joined in ``reason``, when a single block cannot fit.
    """
    _check_inputs(num_warps, registers_per_thread, shared_bytes, static_shared_bytes, carveout_preference)
    reg_problems = register_launch_problems(limits, num_warps=num_warps, registers_per_thread=registers_per_thread)
    smem_problems = shared_launch_problems(limits, shared_bytes, static_shared_bytes)
    thread_problems = []
    if num_warps * limits.warp_size > limits.max_threads_per_block:
        thread_problems.append(
            f"{num_warps * limits.warp_size} threads per block > max_threads_per_block {limits.max_threads_per_block}"
        )

    allocated_smem = shared_per_block_allocated(limits, shared_bytes, static_shared_bytes)
    carveout = 0 if smem_problems else carveout_for_block(limits, allocated_smem, carveout_preference)
    per_resource: dict[Limiter, int] = {
        "registers": blocks_by_registers(limits, num_warps=num_warps, registers_per_thread=registers_per_thread),
        "shared_memory": 0 if smem_problems else blocks_by_shared_memory(limits, allocated_smem, carveout),
        "warps": blocks_by_warps(limits, num_warps=num_warps),
        "blocks": limits.max_blocks_per_sm,
        "barriers": blocks_by_barriers(limits),
    }
    active = min(per_resource.values())
    binding = binding_limiters(per_resource, active)
    per_warp = registers_per_warp_allocated(limits, registers_per_thread)
    problems = thread_problems + reg_problems + smem_problems
    if active == 0 and not problems:
        problems.append(f"no block fits: the {binding[0]} limit allows 0 blocks per SM")
    return Occupancy(
        active_blocks_per_sm=active,
        active_warps_per_sm=active * num_warps,
        occupancy=active * num_warps / limits.max_warps_per_sm,
        limiter=binding[0],
        limiters=binding,
        blocks_by_registers=per_resource["registers"],
        blocks_by_shared_memory=per_resource["shared_memory"],
        blocks_by_warps=per_resource["warps"],
        blocks_by_block_limit=per_resource["blocks"],
        blocks_by_barriers=per_resource["barriers"],
        registers_per_warp_allocated=per_warp,
        registers_per_block_allocated=per_warp * num_warps,
        shared_per_block_allocated=allocated_smem,
        carveout_bytes=carveout,
        launchable=active > 0 and not problems,
        reason="; ".join(problems),
    )
