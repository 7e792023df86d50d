"""Read the AMDGCN assembly Triton's HIP backend emits (``CompiledKernel.asm["amdgcn"]``).

The text LLVM writes for an AMD target carries its own resource report, so no tool is
needed (the NVIDIA side runs cuobjdump):

* the code object metadata (``amdhsa.kernels`` YAML after ``.amdgpu_metadata``):
  ``.vgpr_count`` (arch VGPRs plus AGPRs, as the hardware allocates them from one
  unified file on gfx90a/gfx942), ``.agpr_count``, ``.vgpr_spill_count``,
  ``.sgpr_count``, ``.sgpr_spill_count``, ``.private_segment_fixed_size`` (scratch bytes
  per lane), ``.group_segment_fixed_size`` (static LDS; Triton's LDS is dynamic, so 0)
  and ``.max_flat_workgroup_size``;
* the ``; Kernel info:`` comments, of which ``; Occupancy: N`` is LLVM's waves per SIMD
  limited by registers (and static LDS), before the workgroup granularity;
* the instruction stream: MFMA (``v_mfma_*``), plain vector FMA (``v_fma_*``,
  ``v_fmac_*``, ``v_pk_fma_*``), LDS reads and writes (``ds_read*``/``ds_write*``,
  also spelled ``ds_load*``/``ds_store*``), global and buffer memory, and scratch
  (``scratch_*`` and ``buffer_*`` spill traffic marked "Spill"/"Reload").

:func:`parse` returns an :class:`AmdgcnListing`; :func:`facts` turns it into plain
facts named like the NVIDIA ones where they mean the same thing. Pure text
processing: this module imports nothing from the engine.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_METADATA_FIELDS = {
    "vgpr_count": r"\.vgpr_count:\s+(\d+)",
    "agpr_count": r"\.agpr_count:\s+(\d+)",
    "vgpr_spill_count": r"\.vgpr_spill_count:\s+(\d+)",
    "sgpr_count": r"\.sgpr_count:\s+(\d+)",
    "sgpr_spill_count": r"\.sgpr_spill_count:\s+(\d+)",
    "private_segment_fixed_size": r"\.private_segment_fixed_size:\s+(\d+)",
    "group_segment_fixed_size": r"\.group_segment_fixed_size:\s+(\d+)",
    "max_flat_workgroup_size": r"\.max_flat_workgroup_size:\s+(\d+)",
    "wavefront_size": r"\.wavefront_size:\s+(\d+)",
}

_COMMENT_FIELDS = {
    "occupancy": r";\s*Occupancy:\s*(\d+)",
    "total_vgprs": r";\s*TotalNumVgprs:\s*(\d+)",
    "num_vgprs": r";\s*NumVgprs:\s*(\d+)",
    "num_agprs": r";\s*NumAgprs:\s*(\d+)",
    "scratch_size": r";\s*ScratchSize:\s*(\d+)",
}

#: An instruction line: optional label-free indentation, then the mnemonic.
_INSTRUCTION = re.compile(r"^\s+([a-z][a-z0-9_]*)\b(.*)$")

#: Instruction classes counted for the facts (prefix -> class).
_CLASSES = (
    ("v_mfma_", "mfma"),
    ("v_smfmac_", "mfma"),
    ("v_pk_fma_", "fma"),
    ("v_fmac_", "fma"),
    ("v_fma_", "fma"),
    ("v_mad_f32", "fma"),
    ("v_mac_f32", "fma"),
    ("ds_read", "lds_load"),
    ("ds_load", "lds_load"),
    ("ds_write", "lds_store"),
    ("ds_store", "lds_store"),
    ("global_load", "global_load"),
    ("buffer_load", "global_load"),
    ("global_store", "global_store"),
    ("buffer_store", "global_store"),
    ("scratch_load", "scratch_load"),
    ("scratch_store", "scratch_store"),
    ("v_accvgpr_read", "agpr_read"),
    ("v_accvgpr_write", "agpr_write"),
)


@dataclass
class AmdgcnListing:
    """What one AMDGCN text says: resource fields, comments and an instruction histogram."""

    kernel: str | None = None
    resources: dict[str, int] = field(default_factory=dict)
    comments: dict[str, int] = field(default_factory=dict)
    opcodes: Counter = field(default_factory=Counter)
    classes: Counter = field(default_factory=Counter)
    spill_stores: int = 0
    spill_loads: int = 0

    def mfma(self) -> dict[str, int]:
        """MFMA mnemonics and their counts (``v_mfma_f32_32x32x8_f16``: 96)."""
        return {k: v for k, v in sorted(self.opcodes.items()) if k.startswith(("v_mfma_", "v_smfmac_"))}


def _last_int(pattern: str, text: str) -> int | None:
    found = re.findall(pattern, text)
    return int(found[-1]) if found else None


def parse(text: str) -> AmdgcnListing:
    """Parse AMDGCN assembly text (one kernel, as Triton emits it)."""
    listing = AmdgcnListing()
    name = re.search(r"\.amdhsa_kernel\s+([A-Za-z_][\w.$]*)", text)
    listing.kernel = name.group(1) if name else None
    for key, pattern in _METADATA_FIELDS.items():
        value = _last_int(pattern, text)
        if value is not None:
            listing.resources[key] = value
    for key, pattern in _COMMENT_FIELDS.items():
        value = _last_int(pattern, text)
        if value is not None:
            listing.comments[key] = value
    in_metadata = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(".amdgpu_metadata"):
            in_metadata = True
        elif stripped.startswith(".end_amdgpu_metadata"):
            in_metadata = False
        if in_metadata or not line[:1].isspace():
            continue
        match = _INSTRUCTION.match(line)
        if not match or stripped.startswith((".", ";")):
            continue
        mnemonic, rest = match.group(1), match.group(2)
        listing.opcodes[mnemonic] += 1
        for prefix, cls in _CLASSES:
            if mnemonic.startswith(prefix):
                listing.classes[cls] += 1
                break
        if "Spill" in rest and ("store" in mnemonic or "write" in mnemonic):
            listing.spill_stores += 1
        elif "Reload" in rest and ("load" in mnemonic or "read" in mnemonic):
            listing.spill_loads += 1
    return listing


def facts(listing: AmdgcnListing) -> dict[str, Any]:
    """Plain facts of one AMD kernel, named like the NVIDIA facts where they mean the same.

    ``registers`` is ``.vgpr_count``: arch VGPRs plus AGPRs, because gfx942 allocates
    both from one 512-entry file per SIMD lane and occupancy follows their sum
    (``; TotalNumVgprs``). ``spill_bytes`` is the scratch (private segment) size per
    lane. ``mma_path`` is ``mfma`` when any MFMA instruction is present, else ``none``.
    """
    res, com, cls = listing.resources, listing.comments, listing.classes
    out: dict[str, Any] = {}
    vgprs = res.get("vgpr_count", com.get("total_vgprs"))
    if vgprs is not None:
        out["registers"] = vgprs
        out["vgpr_count"] = vgprs
    agprs = res.get("agpr_count", com.get("num_agprs"))
    if agprs is not None:
        out["agpr_count"] = agprs
        if vgprs is not None:
            out["arch_vgpr_count"] = com.get("num_vgprs", vgprs - agprs)
    for key in ("vgpr_spill_count", "sgpr_count", "sgpr_spill_count", "max_flat_workgroup_size"):
        if key in res:
            out[key] = res[key]
    scratch = res.get("private_segment_fixed_size", com.get("scratch_size"))
    if scratch is not None:
        out["scratch_bytes"] = scratch
        out["spill_bytes"] = scratch
    if "group_segment_fixed_size" in res:
        out["static_shared_bytes"] = res["group_segment_fixed_size"]
    if "occupancy" in com:
        out["llvm_occupancy_waves_per_simd"] = com["occupancy"]
    mfma = listing.mfma()
    out.update({
        "mma_path": "mfma" if mfma else "none",
        "mfma_instructions": mfma,
        "mfma_count": cls.get("mfma", 0),
        "fma_count": cls.get("fma", 0),
        "lds_loads": cls.get("lds_load", 0),
        "lds_stores": cls.get("lds_store", 0),
        "local_memory_ops": cls.get("scratch_load", 0) + cls.get("scratch_store", 0),
        "spill_store_instructions": listing.spill_stores,
        "spill_load_instructions": listing.spill_loads,
        "instruction_counts": dict(sorted(cls.items())),
    })
    return out
