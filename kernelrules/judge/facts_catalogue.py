"""Every fact a rule may read, declared once: its meaning, vendor, producer and where it is reported.

A fact is one entry of the ``facts.*`` namespace of rule expressions. Before this
table, a fact's name was written in three to five places (the namespace, prune's JSON
record, check-config's JSON and its one-line summary, the docs); now each list derives
from :data:`CATALOGUE`, docs/facts.md is generated from it, and a test checks that
every fact the analyzers, the facts record and the resource model produce is declared
here. To add a fact: produce it, add a row here, regenerate the docs
(``python -m kernelrules.lint.docgen docs``).

The table is ordered by topic; within it, reported facts keep the order of the JSON
records (``prune --format json``, ``check-config --format json``), so the outputs are
the same as before the table existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

#: Who produces a fact: ``status`` (how the facts were obtained: a prediction or a compile
#: and its outcome), ``compiled`` (the analyzers and the occupancy and bank models, from one
#: compile), ``predicted`` (the resource model only), ``both`` (compiled, and predicted
#: before a compile), ``judged`` (the judging core: from a second compile of the config, or from
#: the other configs judged with it).
STAGES = ("status", "compiled", "predicted", "both", "judged")
#: The targets that have a fact.
VENDORS = ("any", "nvidia", "amd")
#: Where a fact is reported besides Python: ``prune`` (the records of ``prune --format json``,
#: and therefore ``check-config --format json`` too) or ``check-config`` (only there).
REPORTS = ("prune", "check-config")


@dataclass(frozen=True)
class Fact:
    """One declared fact.

    ``summary`` is the fact's position in check-config's one-line text summary
    (``facts: origin=compiled, shared_bytes=...``); None when it is not shown there.
    """

    name: str
    doc: str
    vendor: str = "any"
    stage: str = "compiled"
    reported: Optional[str] = None
    summary: Optional[int] = None


CATALOGUE: tuple[Fact, ...] = (
    # where the facts come from
    Fact("origin", "'predicted' (resource model, no compile) or 'compiled'", stage="status", reported="prune",
         summary=1),
    Fact("predicted", "true when the facts come from the resource model rather than a compile", stage="status"),
    Fact("compile_status", "'ok', 'error' or 'timeout'", stage="status", reported="prune"),
    Fact("compile_message", "the compiler's message when the compile failed", stage="status", reported="prune",
         summary=11),
    Fact("compile_error_line", "source line of a compile error, when Triton names one", stage="status"),
    Fact("compile_error_kind", "why a compile failed: the compile worker's error kind ('timeout', 'spec_error' when "
         "kernelrules could not build the kernel, ...)", stage="status"),
    Fact("compile_seconds", "wall time of the compile", stage="status", reported="prune"),
    Fact("compile_timeout", "the time limit the compile ran under, seconds", stage="status"),
    # resources
    Fact("shared_bytes", "shared memory per block, bytes (Triton's metadata.shared; predicted: the pipeline buffers)",
         stage="both", reported="prune", summary=2),
    Fact("shared_bytes_max", "upper bound of the predicted shared memory (buffers or the epilogue's accumulator "
         "conversion)", stage="predicted", reported="prune"),
    Fact("static_shared_bytes", "static shared memory in the cubin (sm_90: the 1 KiB reserved section)"),
    Fact("registers", "registers per thread (cuobjdump resource usage)", reported="prune", summary=3),
    Fact("spill_bytes", "local memory bytes per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 4 x n_spills)",
         reported="prune", summary=5),
    Fact("stack_bytes", "per-thread stack frame bytes (cuobjdump STACK)", vendor="nvidia"),
    Fact("local_bytes", "per-thread local bytes besides the stack (cuobjdump LOCAL)", vendor="nvidia"),
    Fact("spill_stores", "bytes of local-memory stores (STL) in the machine code, or as ptxas reports them",
         vendor="nvidia"),
    Fact("spill_loads", "bytes of local-memory loads (LDL) in the machine code, or as ptxas reports them",
         vendor="nvidia"),
    Fact("register_demand", "predicted registers per thread a kernel without dots needs (base + slope x its live "
         "tensors' words per thread, fitted on its probes; may exceed the limit)", stage="predicted"),
    Fact("register_limit", "registers a thread may use at this num_warps: min(255, 65536 / (32 x num_warps)), or "
         "maxnreg", stage="predicted"),
    Fact("registers_predicted", "predicted registers per thread: register_demand capped at register_limit",
         stage="predicted"),
    Fact("spill_bytes_predicted", "predicted spill bytes per thread: 4 x (register_demand - register_limit), at "
         "least 0", stage="predicted"),
    Fact("tile_elements_per_thread", "elements per thread of the kernel's largest live tensor (predicted)",
         stage="predicted"),
    Fact("register_model_residual", "largest error of the register fit on the kernel's own probes, registers",
         stage="predicted"),
    Fact("num_warps", "warps per block the kernel was compiled for"),
    # the dot
    Fact("mma_path", "tensor-core path of the kernel's tl.dot: 'tcgen05' (sm_100), 'wgmma' (sm_90), 'mma_sync', "
         "'mfma' (AMD) or 'none'", stage="both", reported="prune", summary=7),
    Fact("mma_paths", "every tensor-core instruction family in the PTX, only when more than one is present",
         vendor="nvidia"),
    Fact("accumulator_registers_per_thread", "fp32 accumulator registers per thread of the largest tl.dot "
         "(0 on tcgen05: the accumulator lives in tensor memory)", stage="both", reported="prune"),
    Fact("pipelined", "whether loads feeding tl.dot were turned into asynchronous copies", vendor="nvidia",
         reported="prune"),
    Fact("dot_m", "M of the largest dot", stage="both", reported="prune"),
    Fact("dot_n", "N of the largest dot", stage="both", reported="prune"),
    Fact("dot_k", "K of the largest dot", stage="both", reported="prune"),
    Fact("tensor_memory_columns", "32-bit tensor-memory columns (of 128 lanes) the kernel allocates: Triton's "
         "metadata.tmem_size (sm_100; 0 on other NVIDIA targets); predicted: the tcgen05 accumulators",
         vendor="nvidia", stage="both"),
    Fact("dot_count", "number of dots in the kernel", stage="both"),
    Fact("loop_count", "scf.for / scf.while loops in the kernel's TTIR (none: num_stages changes nothing)"),
    Fact("stage_twins_before", "configs before this one in the list judged with it that differ from it only in "
         "num_stages and compiled", stage="judged"),
    Fact("dot_dims", "which constexpr sets each dimension of the largest dot: {m, n, k} -> name", stage="predicted"),
    Fact("dot_operand_bits", "bits per element of the largest dot's A operand", stage="both"),
    Fact("dot_fp32_fma", "a tl.dot lowered to scalar FMA (fp32 with input_precision='ieee')"),
    Fact("fp8_upcast", "fp8 dot operands converted to a wider type before the MMA"),
    Fact("operand_registers_per_thread", "32-bit registers per thread holding the largest dot's A and B tiles",
         stage="both"),
    Fact("register_demand_per_thread", "accumulator plus operand registers per thread: the predictor of ptxas "
         "blow-ups", stage="both"),
    Fact("dot_under_branch", "a tl.dot under a branch on loaded data inside its loop"),
    Fact("dots", "every dot with its shapes, dtypes, lowering and location"),
    Fact("dot_locations", "source locations of the dots"),
    Fact("dot_under_branch_locations", "source locations of dots under a data-dependent branch"),
    Fact("unpipelined_load_locations", "loads feeding a dot that were not pipelined", vendor="nvidia"),
    Fact("async_copies", "asynchronous global-to-shared copies in the IR"),
    Fact("tma", "TMA (bulk tensor) copies used"),
    Fact("shared_layouts", "every shared-memory buffer with shape, buffers and layout"),
    # occupancy
    Fact("active_blocks_per_sm", "resident blocks per SM by the occupancy calculator", reported="prune"),
    Fact("active_warps_per_sm", "resident warps per SM by the occupancy calculator", reported="prune", summary=8),
    Fact("occupancy", "active warps / maximum warps per SM", reported="prune"),
    Fact("occupancy_limiter", "what limits occupancy: 'registers', 'shared_memory', 'warps' or 'blocks'",
         reported="prune", summary=10),
    Fact("bank_conflict_ways", "worst predicted shared-memory bank conflict (1 = conflict-free)", vendor="nvidia",
         reported="prune"),
    # instructions and directives
    Fact("local_memory_ops", "LDL + STL instructions in the SASS", reported="prune"),
    Fact("sass_opcodes", "histogram of SASS opcodes (only from a full disassembly: extract(..., sass_histogram=True))",
         vendor="nvidia"),
    Fact("mma_instructions", "MMA instructions in the PTX with shape, types and count", vendor="nvidia"),
    Fact("instruction_counts", "headline instruction counts from PTX and SASS"),
    Fact("ptx_target", "the PTX .target (sm_90a on Hopper)", vendor="nvidia"),
    Fact("reqntid", "the PTX .reqntid directive", vendor="nvidia"),
    Fact("maxntid", "the PTX .maxntid directive", vendor="nvidia"),
    Fact("maxnreg", "the PTX .maxnreg directive", vendor="nvidia"),
    Fact("analysis_errors", "analyzer steps that could not run (missing tool, unparsable artifact)"),
    # AMD (gfx942): read from the amdgcn text by analyzers/amdgcn.py
    Fact("vgpr_count", "AMD: VGPRs per lane, arch VGPRs plus AGPRs (.vgpr_count; also 'registers')", vendor="amd"),
    Fact("arch_vgpr_count", "AMD: arch VGPRs per lane (; NumVgprs)", vendor="amd"),
    Fact("vgpr_need", "AMD: VGPRs per lane the kernel uses without its waves_per_eu cap (a compile without it)",
         vendor="amd", stage="judged", reported="check-config", summary=4),
    Fact("vgpr_spill_count", "AMD: VGPRs LLVM spilled to scratch (.vgpr_spill_count)", vendor="amd",
         reported="check-config", summary=6),
    Fact("scratch_bytes", "AMD: scratch (private segment) bytes per lane (.private_segment_fixed_size; also "
         "'spill_bytes')", vendor="amd", reported="check-config"),
    Fact("agpr_count", "AMD: accumulation VGPRs per lane (.agpr_count)", vendor="amd", reported="check-config"),
    Fact("sgpr_count", "AMD: scalar registers per wave (.sgpr_count)", vendor="amd"),
    Fact("sgpr_spill_count", "AMD: SGPRs spilled (.sgpr_spill_count)", vendor="amd"),
    Fact("max_flat_workgroup_size", "AMD: the workgroup size the code was compiled for (num_warps x 64)",
         vendor="amd"),
    Fact("llvm_occupancy_waves_per_simd", "AMD: LLVM's '; Occupancy:' comment, waves per SIMD by registers before "
         "workgroup granularity", vendor="amd"),
    Fact("waves_per_simd", "AMD: resident waves per SIMD by the occupancy arithmetic (active_warps_per_sm / 4)",
         vendor="amd", reported="check-config", summary=9),
    Fact("mfma_instructions", "AMD: v_mfma instructions in the amdgcn and their counts", vendor="amd"),
    Fact("mfma_count", "AMD: v_mfma instructions in the amdgcn", vendor="amd", reported="check-config"),
    Fact("fma_count", "AMD: plain vector FMA instructions (v_fma_*, v_fmac_*, v_pk_fma_*)", vendor="amd",
         reported="check-config"),
    Fact("lds_loads", "AMD: LDS read instructions (ds_read*)", vendor="amd"),
    Fact("lds_stores", "AMD: LDS write instructions (ds_write*)", vendor="amd"),
    Fact("spill_store_instructions", "AMD: scratch stores marked as spills", vendor="amd"),
    Fact("spill_load_instructions", "AMD: scratch loads marked as reloads", vendor="amd"),
)

#: Fact name -> meaning: the ``facts`` namespace of rule expressions.
FACTS: dict[str, str] = {fact.name: fact.doc for fact in CATALOGUE}

#: Facts copied into prune's JSON records (the rest stays available in Python).
REPORTED_FACTS: tuple[str, ...] = tuple(f.name for f in CATALOGUE if f.reported == "prune")

#: Facts of check-config's JSON: prune's, then the AMD ones only check-config reports.
CHECK_CONFIG_FACTS: tuple[str, ...] = REPORTED_FACTS + tuple(
    f.name for f in CATALOGUE if f.reported == "check-config")

#: Facts of check-config's one-line text summary, in the order shown.
SUMMARY_FACTS: tuple[str, ...] = tuple(
    f.name for f in sorted((f for f in CATALOGUE if f.summary is not None), key=lambda f: f.summary))


def markdown() -> str:
    """docs/facts.md: every declared fact with its meaning, vendor, producer and reports."""
    out = [
        "# Facts",
        "",
        "<!-- generated by `python -m kernelrules.lint.docgen docs` from kernelrules/judge/facts_catalogue.py; do not edit -->",
        "",
        "Every name a rule may read as `facts.NAME`. *stage*: `status` (a prediction or a compile, and its "
        "outcome), `compiled` (read from one compile), `predicted` (the resource model only), `both`, `judged` "
        "(from a second compile, or the other configs judged with it). *reported*: in `prune --format json` records (`prune`, also in check-config's "
        "JSON) or only in `check-config --format json`. See docs/analyzers.md for how each compiled fact is read.",
        "",
        "| fact | meaning | vendor | stage | reported |",
        "|---|---|---|---|---|",
    ]
    out += [f"| `{f.name}` | {f.doc} | {f.vendor} | {f.stage} | {f.reported or ''} |" for f in CATALOGUE]
    return "\n".join(out) + "\n"
