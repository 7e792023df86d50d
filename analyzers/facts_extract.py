"""One call from a compiled kernel's artifacts to the plain facts rules judge.

``extract(asm, metadata)`` reads ``asm`` (``CompiledKernel.asm``: ``ttir``,
``ttgir``, ``ptx``, ``cubin``; optionally ``ptxas_log``, the output of
``ptxas -v``; on AMD ``amdgcn``, read by :mod:`.amdgcn`) and ``metadata`` (``CompiledKernel.metadata`` as a dict) and returns a
JSON-ready dict. A fact that cannot be determined (artifact missing, tool missing)
is absent, never ``None``; expected failures are listed under ``analysis_errors``.
See docs/analyzers.md for every fact, its type and its source.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from . import amdgcn as amdgcn_reader
from . import cubin as cubin_reader
from . import ptx as ptx_reader
from . import sass
from .irgraph import ASYNC_LOAD_OPS, DOT_OPS, TMA_LOAD_OPS, DotInfo, IrGraph
from .mlir import MlirParseError, Operation, parse
from .mlir_text import dtype_bits
from .ptx import PtxListing

_MMA_PATHS = (("tcgen05_mma", "tcgen05"), ("wgmma", "wgmma"), ("mma_sync", "mma_sync"))
#: Dots that accumulate in tensor memory (Blackwell sm_100 tcgen05.mma).
TCGEN05_DOT_OPS = frozenset({"ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled"})
#: A loop op in TTIR text: the only ops the passes that read ``num_stages`` work on.
_LOOP = re.compile(r"\bscf\.(?:for|while)\b")
_TMA_OPS = TMA_LOAD_OPS | {"ttng.async_tma_copy_local_to_global", "ttng.async_tma_scatter",
                           "ttng.async_tma_reduce"}


def extract(asm: Mapping[str, Any], metadata: Mapping[str, Any], run_tools: bool = True,
            timeout: float = sass.DEFAULT_TIMEOUT, sass_histogram: bool = False) -> dict:
    """Facts of one compiled kernel; ``run_tools=False`` skips cuobjdump (SASS facts);
    ``sass_histogram=True`` always disassembles for the full opcode histogram."""
    facts: dict[str, Any] = {}
    errors: list[str] = []
    for fact, key in (("shared_bytes", "shared"), ("num_warps", "num_warps"), ("tensor_memory_columns", "tmem_size")):
        if isinstance(metadata.get(key), int):
            facts[fact] = metadata[key]
    if asm.get("ttgir") or asm.get("ttir"):
        _guard(errors, "ir", lambda: facts.update(ir_facts(asm.get("ttgir"), asm.get("ttir"), metadata)))
    if asm.get("ptx"):
        listing = ptx_reader.parse(asm["ptx"])
        facts.update(ptx_facts(listing))
        if "tensor_memory_columns" not in facts:  # metadata without tmem_size: read tcgen05.alloc
            columns = listing.tensor_memory_columns()
            facts["tensor_memory_columns"] = columns or 0
    if asm.get("amdgcn"):
        facts.update(amdgcn_reader.facts(amdgcn_reader.parse(asm["amdgcn"])))
    if run_tools and isinstance(asm.get("cubin"), (bytes, bytearray)):
        _guard(errors, "cubin", lambda: facts.update(sass_facts(bytes(asm["cubin"]), timeout, sass_histogram)))
    if asm.get("ptxas_log"):
        facts.update(ptxas_facts(asm["ptxas_log"], metadata.get("name")))
    if errors:
        facts["analysis_errors"] = errors
    return facts


def _guard(errors: list[str], what: str, step) -> None:
    """Run ``step``; an expected analyzer failure becomes a note instead of an exception."""
    try:
        step()
    except (MlirParseError, sass.ToolNotFound, sass.ToolFailed) as exc:
        errors.append(f"{what}: {exc}")


# ----------------------------------------------------------------------------- IR


def ir_facts(ttgir: str | None, ttir: str | None, metadata: Mapping[str, Any]) -> dict:
    """Facts from the IR graph: dots, pipelining, branches, shared layouts."""
    graph = IrGraph(parse(ttgir or ttir))
    dots = graph.dots()
    facts: dict[str, Any] = {
        "dot_count": _dot_count(ttir, dots),
        "dot_locations": _unique(str(d.location) for d in dots if d.location),
        "dots": [d.to_dict() for d in dots],
        "async_copies": len(graph.module.ops_named("ttg.async_copy_global_to_local")),
        "loop_count": loop_count(ttir or ttgir or ""),
        "tma": any(op.name in _TMA_OPS for op in graph.module.operations),
    }
    facts.update(_largest_dot(dots))
    if ttgir:
        facts.update(_layout_facts(graph, dots, metadata))
    branch = [d for d in dots if graph.dot_under_data_dependent_branch(d)]
    facts["dot_under_branch"] = bool(branch)
    facts["dot_under_branch_locations"] = _unique(str(d.location) for d in branch if d.location)
    return facts


def loop_count(ir: str) -> int:
    """``scf.for``/``scf.while`` loops in the IR text (TTIR when there is one: before the pipeliner).
    Without one, Triton's loop passes, the only ones that read ``num_stages``, have nothing to do."""
    return len(_LOOP.findall(ir))


def _layout_facts(graph: IrGraph, dots: list[DotInfo], metadata: Mapping[str, Any]) -> dict:
    """Facts that need TTGIR (layouts chosen, pipeliner run)."""
    facts: dict[str, Any] = {
        "dot_fp32_fma": any(d.lowering == "fma" and _is_f32(d) for d in dots),
        "fp8_upcast": any(_fp8_upcast(graph, d) for d in dots),
        "shared_layouts": [b.to_dict() for b in graph.shared_layouts()],
    }
    looped = [d for d in dots if d.in_loop]
    nvidia = not (graph.module.target or "").startswith("hip")  # AMD pipelines without async copies
    if looped and nvidia:  # only a dot inside a loop has loads to pipeline
        facts["pipelined"] = all(graph.pipelined(d) for d in looped)
        late = [ld for d in looped for ld in _unpipelined_loads(graph, d)]
        facts["unpipelined_load_locations"] = _unique(str(ld.location) for ld in late if ld.location)
    accumulators = _accumulators_per_thread(graph, dots, metadata)
    if accumulators is not None:
        facts["accumulator_registers_per_thread"] = accumulators
    return facts


def _largest_dot(dots: list[DotInfo]) -> dict:
    """``dot_m``/``dot_n``/``dot_k`` and ``dot_operand_bits`` (A's element bits) of the
    dot with the largest M·N (then K)."""
    sized = [d for d in dots if all(d.mnk)]
    if not sized:
        return {}
    largest = max(sized, key=lambda d: (d.mnk[0] * d.mnk[1], d.mnk[2]))
    m, n, k = largest.mnk
    facts = {"dot_m": m, "dot_n": n, "dot_k": k}
    bits = dtype_bits(largest.a.dtype) if largest.a else None
    if bits:
        facts["dot_operand_bits"] = bits
    return facts


def _dot_count(ttir: str | None, dots: list[DotInfo]) -> int:
    """tl.dot calls after inlining: TTIR's dots (TTGIR may peel a loop and copy one). A TTIR that
    names no dot op has none: it is not parsed (most kernels; a parse is most of the analysis)."""
    if ttir and not any(name in ttir for name in DOT_OPS):
        return 0
    if ttir:
        try:
            return len(IrGraph(parse(ttir)).dots())
        except MlirParseError:
            pass
    return len({str(d.location) for d in dots}) if dots else 0


def _is_f32(dot: DotInfo) -> bool:
    return bool(dot.a and dot.b and dot.a.dtype == "f32" and dot.b.dtype == "f32")


def _loaded_dtype(graph: IrGraph, load: Operation) -> str | None:
    """Element type a load brings in: its result, or the buffer an async copy fills."""
    if load.result_types and load.result_types[0] is not None and load.result_types[0].kind != "other":
        if load.result_types[0].dtype != "!ttg.async.token":
            return load.result_types[0].dtype
    for value in load.operands:
        if value is not None and value.type is not None and value.type.kind == "memdesc":
            if value.type.dtype != "i64":
                return value.type.dtype
    return None


def _fp8_upcast(graph: IrGraph, dot: DotInfo) -> bool:
    """An fp8 load feeds the dot but the dot's operands are wider than 8 bits."""
    widths = [o.dtype for o in (dot.a, dot.b) if o is not None]
    if not widths or all((d or "").startswith("f8") for d in widths):
        return False
    return any((_loaded_dtype(graph, ld) or "").startswith("f8") for ld in graph.loads_feeding(dot))


def _unpipelined_loads(graph: IrGraph, dot: DotInfo) -> list[Operation]:
    """Loads feeding a dot from inside its loop that stayed synchronous."""
    loop = graph.enclosing_loop(dot.op)
    return [ld for ld in graph.loads_feeding(dot)
            if loop in ld.ancestors() and ld.name not in ASYNC_LOAD_OPS]


def _accumulators_per_thread(graph: IrGraph, dots: list[DotInfo], metadata: Mapping[str, Any]) -> int | None:
    """M·N / (threads per warp · warps) for the largest dot (fp32 accumulator registers).

    A tcgen05 dot (sm_100) accumulates in tensor memory, not in registers: it counts 0.
    """
    warps = metadata.get("num_warps") or graph.module.num_warps
    lanes = metadata.get("warp_size") or graph.module.threads_per_warp or 32
    if dots and all(d.op.name in TCGEN05_DOT_OPS for d in dots):
        return 0
    sizes = [m * n for m, n, _ in (d.mnk for d in dots if d.op.name not in TCGEN05_DOT_OPS) if m and n]
    if not sizes or not warps:
        return None
    return -(-max(sizes) // (lanes * warps))


def _unique(items) -> list:
    """Items in first-seen order, without repeats."""
    return list(dict.fromkeys(items))


# ----------------------------------------------------------------------------- PTX and SASS


def ptx_facts(listing: PtxListing) -> dict:
    """Tensor-core path and instruction mix from the PTX."""
    classes = listing.class_counts()
    paths = [name for key, name in _MMA_PATHS if classes.get(key)]
    facts: dict[str, Any] = {
        "mma_path": paths[0] if paths else "none",
        "mma_instructions": listing.mma(),
        "instruction_counts": dict(sorted(classes.items())),
    }
    if len(paths) > 1:
        facts["mma_paths"] = paths
    if listing.target:
        facts["ptx_target"] = listing.target
    for key in ("maxnreg", "reqntid", "maxntid"):
        value = getattr(listing, key)
        if value is not None:
            facts[key] = list(value) if isinstance(value, tuple) else value
    return facts


def sass_facts(cubin: bytes, timeout: float = sass.DEFAULT_TIMEOUT, histogram: bool = False) -> dict:
    """Registers and spills from cuobjdump's resource usage (about 2 ms). A kernel that uses local
    memory gets its LDL/STL counted in the machine code (:mod:`kernelrules.analyzers.cubin`, a few ms);
    the SASS disassembly (0.4 to 0.8 s for a large kernel) runs only when asked for (``histogram``,
    the only source of ``sass_opcodes``) or for a cubin that reader does not know."""
    usage = sass.parse_resource_usage(sass.dump_resource_usage(cubin, timeout))
    facts: dict[str, Any] = {}
    main = max(usage.values(), key=lambda u: u.registers) if usage else None
    if main is not None:
        # Triton cubins hold one kernel function; take the one with most registers otherwise.
        facts.update({"registers": main.registers, "spill_bytes": main.stack + main.local,
                      "stack_bytes": main.stack, "local_bytes": main.local, "static_shared_bytes": main.shared})
    if main is not None and not histogram and main.stack + main.local == 0:
        facts.update({"local_memory_ops": 0, "spill_stores": 0, "spill_loads": 0})
        return facts
    access = None if histogram else cubin_reader.local_memory_access(cubin)
    if access is not None:
        facts.update(dict(zip(("local_memory_ops", "spill_stores", "spill_loads"), access)))
        return facts
    functions = sass.parse_sass(sass.dump_sass(cubin, timeout))
    counts = sass.opcode_histogram(functions)
    stores, loads = sass.local_memory_bytes(functions)
    facts.update({
        "sass_opcodes": dict(sorted(counts.items())),
        "local_memory_ops": counts.get("LDL", 0) + counts.get("STL", 0),
        "spill_stores": stores,
        "spill_loads": loads,
    })
    return facts


def ptxas_facts(log: str, name: str | None) -> dict:
    """Spill store/load bytes as ``ptxas -v`` reports them (when a log was kept)."""
    info = sass.parse_ptxas_info(log)
    entry = info.get(name) if name in info else next(iter(info.values()), None)
    if not entry:
        return {}
    return {key: entry[key] for key in ("spill_stores", "spill_loads") if key in entry}
