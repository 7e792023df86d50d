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
    # where the facts come from
    "origin": "'predicted' (resource model, no compile) or 'compiled'",
    "predicted": "true when the facts come from the resource model rather than a compile",
    "compile_status": "'ok', 'error' or 'timeout'",
    "compile_message": "the compiler's message when the compile failed",
    "compile_error_line": "source line of a compile error, when Triton names one",
    "compile_seconds": "wall time of the compile",
    "compile_timeout": "the time limit the compile ran under, seconds",
    # resources
    "shared_bytes": "shared memory per block, bytes (Triton's metadata.shared; predicted: the pipeline buffers)",
    "shared_bytes_max": "upper bound of the predicted shared memory (buffers or the epilogue's accumulator conversion)",
    "registers": "registers per thread (cuobjdump resource usage)",
    "spill_bytes": "local memory bytes per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 4 x n_spills)",
    "spill_stores": "bytes of spill stores reported by ptxas",
    "spill_loads": "bytes of spill loads reported by ptxas",
    "local_memory_ops": "LDL + STL instructions in the SASS",
    "register_demand": "predicted registers per thread a kernel without dots needs (base + slope x its live tensors' "
                       "words per thread, fitted on its probes; may exceed the limit)",
    "register_limit": "registers a thread may use at this num_warps: min(255, 65536 / (32 x num_warps)), or maxnreg",
    "registers_predicted": "predicted registers per thread: register_demand capped at register_limit",
    "spill_bytes_predicted": "predicted spill bytes per thread: 4 x (register_demand - register_limit), at least 0",
    "tile_elements_per_thread": "elements per thread of the kernel's largest live tensor (predicted)",
    "register_model_residual": "largest error of the register fit on the kernel's own probes, registers",
    "num_warps": "warps per block the kernel was compiled for",
    # the dot
    "mma_path": "tensor-core path of the kernel's tl.dot: 'tcgen05' (sm_100), 'wgmma' (sm_90), 'mma_sync', 'mfma' (AMD) "
                "or 'none'",
    "tensor_memory_columns": "32-bit tensor-memory columns (of 128 lanes) the kernel allocates: Triton's metadata.tmem_size "
                             "(sm_100; 0 on other NVIDIA targets); predicted: the tcgen05 accumulators",
    "dot_count": "number of dots in the kernel",
    "dot_m": "M of the largest dot",
    "dot_n": "N of the largest dot",
    "dot_k": "K of the largest dot",
    "dot_dims": "which constexpr sets each dimension of the largest dot: {m, n, k} -> name",
    "dot_operand_bits": "bits per element of the largest dot's A operand",
    "dot_fp32_fma": "a tl.dot lowered to scalar FMA (fp32 with input_precision='ieee')",
    "fp8_upcast": "fp8 dot operands converted to a wider type before the MMA",
    "accumulator_registers_per_thread": "fp32 accumulator registers per thread of the largest tl.dot "
                                        "(0 on tcgen05: the accumulator lives in tensor memory)",
    "operand_registers_per_thread": "32-bit registers per thread holding the largest dot's A and B tiles",
    "register_demand_per_thread": "accumulator plus operand registers per thread: the predictor of ptxas blow-ups",
    "pipelined": "whether loads feeding tl.dot were turned into asynchronous copies",
    "dot_under_branch": "a tl.dot under a branch on loaded data inside its loop",
    "bank_conflict_ways": "worst predicted shared-memory bank conflict (1 = conflict-free)",
    # occupancy
    "active_blocks_per_sm": "resident blocks per SM by the occupancy calculator",
    "active_warps_per_sm": "resident warps per SM by the occupancy calculator",
    "occupancy": "active warps / maximum warps per SM",
    "occupancy_limiter": "what limits occupancy: 'registers', 'shared_memory', 'warps' or 'blocks'",
    "sass_opcodes": "histogram of SASS opcodes",
    "stack_bytes": "per-thread stack frame bytes (cuobjdump STACK)",
    "local_bytes": "per-thread local bytes besides the stack (cuobjdump LOCAL)",
    "static_shared_bytes": "static shared memory in the cubin (sm_90: the 1 KiB reserved section)",
    "dots": "every dot with its shapes, dtypes, lowering and location",
    "dot_locations": "source locations of the dots",
    "async_copies": "asynchronous global-to-shared copies in the IR",
    "tma": "TMA (bulk tensor) copies used",
    "shared_layouts": "every shared-memory buffer with shape, buffers and layout",
    "mma_instructions": "MMA instructions in the PTX with shape, types and count",
    "ptx_target": "the PTX .target (sm_90a on Hopper)",
    "reqntid": "the PTX .reqntid directive",
    "unpipelined_load_locations": "loads feeding a dot that were not pipelined",
    "dot_under_branch_locations": "source locations of dots under a data-dependent branch",
    "analysis_errors": "analyzer steps that could not run (missing tool, unparsable artifact)",
    "instruction_counts": "headline instruction counts from PTX and SASS",
    # AMD (gfx942): read from the amdgcn text by analyzers/amdgcn.py
    "vgpr_count": "AMD: VGPRs per lane, arch VGPRs plus AGPRs (.vgpr_count; also 'registers')",
    "arch_vgpr_count": "AMD: arch VGPRs per lane (; NumVgprs)",
    "agpr_count": "AMD: accumulation VGPRs per lane (.agpr_count)",
    "vgpr_need": "AMD: VGPRs per lane the kernel uses without its waves_per_eu cap (a compile without it)",
    "vgpr_spill_count": "AMD: VGPRs LLVM spilled to scratch (.vgpr_spill_count)",
    "sgpr_count": "AMD: scalar registers per wave (.sgpr_count)",
    "sgpr_spill_count": "AMD: SGPRs spilled (.sgpr_spill_count)",
    "scratch_bytes": "AMD: scratch (private segment) bytes per lane (.private_segment_fixed_size; also 'spill_bytes')",
    "max_flat_workgroup_size": "AMD: the workgroup size the code was compiled for (num_warps x 64)",
    "llvm_occupancy_waves_per_simd": "AMD: LLVM's '; Occupancy:' comment, waves per SIMD by registers before workgroup granularity",
    "waves_per_simd": "AMD: resident waves per SIMD by the occupancy arithmetic (active_warps_per_sm / 4)",
    "mfma_instructions": "AMD: v_mfma instructions in the amdgcn and their counts",
    "mfma_count": "AMD: v_mfma instructions in the amdgcn",
    "fma_count": "AMD: plain vector FMA instructions (v_fma_*, v_fmac_*, v_pk_fma_*)",
    "lds_loads": "AMD: LDS read instructions (ds_read*)",
    "lds_stores": "AMD: LDS write instructions (ds_write*)",
    "spill_store_instructions": "AMD: scratch stores marked as spills",
    "spill_load_instructions": "AMD: scratch loads marked as reloads",
}

#: Kernel-level facts known without compiling (from the launch signature).
KERNEL: dict[str, str] = {
    "name": "the kernel's function name",
    "dtypes": "element dtypes of the kernel's pointer arguments, Triton spelling (fp16, bf16, fp8e4nv, ...)",
    "fp8_dtypes": "the fp8 dtypes among kernel.dtypes",
}

#: Namespace roots and the fields each allows (None: any field).
ROOTS_OPEN = ("config", "problem")
