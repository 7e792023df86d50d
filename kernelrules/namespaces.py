"""The names rule expressions may use, per namespace, with what each means.

Rule files are checked against these at load so a typo such as
``facts.shard_bytes`` is an error naming the rule file, line and column, not a
rule that silently never fires. ``config`` and ``problem`` are open: any key a
kernel's config or problem defines may be named.
"""

from __future__ import annotations

#: Facts a compile (or a prediction) provides. A rule that names a fact that is
#: not known yet is deferred: it cannot judge at the config stage.
FACTS: dict[str, str] = {
    "shared_bytes": "shared memory per block, bytes (Triton's metadata.shared)",
    "registers": "registers per thread (ptxas / cuobjdump)",
    "spill_bytes": "local memory bytes per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 4 x n_spills)",
    "mma_path": "tensor-core path of the kernel's tl.dot: 'wgmma', 'mma_sync' or 'none'",
    "accumulator_registers_per_thread": "fp32 accumulator registers per thread of the largest tl.dot",
    "pipelined": "whether loads feeding tl.dot were turned into asynchronous copies",
    "active_blocks_per_sm": "resident blocks per SM by the occupancy calculator",
    "active_warps_per_sm": "resident warps per SM by the occupancy calculator",
    "occupancy": "active warps / maximum warps per SM",
    "occupancy_limiter": "what limits occupancy: 'registers', 'shared_memory', 'warps' or 'blocks'",
    "compile_seconds": "wall time of the compile",
    "predicted": "true when the facts come from the resource model rather than a compile",
}

#: Kernel-level facts known without compiling (from the launch signature).
KERNEL: dict[str, str] = {
    "name": "the kernel's function name",
    "dtypes": "element dtypes of the kernel's pointer arguments, Triton spelling (fp16, bf16, fp8e4nv, ...)",
    "fp8_dtypes": "the fp8 dtypes among kernel.dtypes",
}

#: Namespace roots and the fields each allows (None: any field).
ROOTS_OPEN = ("config", "problem")
