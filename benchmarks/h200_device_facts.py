"""Read an NVIDIA GPU's limits from the driver and test Triton's shared-memory edge on sm_90.

Run on the GPU machine: ``python benchmarks/h200_device_facts.py [OUT_DIR]``.

1. Device attributes straight from ``cuDeviceGetAttribute`` (ctypes on libcuda),
   plus what PyTorch and Triton's driver report, so the architecture profiles can
   cite measured values.
2. The Hopper edge case: Triton checks ``metadata.shared`` against the full opt-in
   limit (232448 B), but the driver only grants ``opt-in - static`` of dynamic
   shared memory, and ptxas gives sm_90 Triton cubins a 1 KiB static section.
   We compile one small kernel that uses shared memory, then launch it with the
   dynamic size forced to values around the limit and record which launches work.
"""

from __future__ import annotations

import copy
import ctypes
import json
import os
import sys

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

ATTRIBUTES = {
    "max_threads_per_block": 1,
    "max_shared_memory_per_block": 8,
    "warp_size": 10,
    "max_registers_per_block": 12,
    "clock_rate_khz": 13,
    "multiprocessor_count": 16,
    "memory_clock_rate_khz": 36,
    "global_memory_bus_width_bits": 37,
    "l2_cache_size": 38,
    "max_threads_per_multiprocessor": 39,
    "compute_capability_major": 75,
    "compute_capability_minor": 76,
    "max_shared_memory_per_multiprocessor": 81,
    "max_registers_per_multiprocessor": 82,
    "max_shared_memory_per_block_optin": 97,
    "max_blocks_per_multiprocessor": 106,
    "reserved_shared_memory_per_block": 111,
}


def driver_attributes() -> dict[str, int]:
    """Every attribute above, read through the CUDA driver API."""
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    device = ctypes.c_int()
    assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
    out = {}
    for name, code in ATTRIBUTES.items():
        value = ctypes.c_int()
        rc = cuda.cuDeviceGetAttribute(ctypes.byref(value), code, device)
        out[name] = value.value if rc == 0 else f"error {rc}"
    return out


@triton.jit
def row_sum(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :])
    tl.store(y_ptr + cols, tl.sum(x, axis=0))


def shared_edge(capability: int) -> dict:
    """Launch one compiled kernel with forced dynamic shared sizes around the opt-in limit."""
    src = ASTSource(row_sum, {"x_ptr": "*fp32", "y_ptr": "*fp32", "R": "constexpr", "C": "constexpr"},
                    constexprs={"R": 64, "C": 64})
    base = triton.compile(src, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})
    x = torch.randn(64, 64, device="cuda")
    expected = x.sum(dim=0)
    optin = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
    results = {"compiled_shared": base.metadata.shared, "optin": optin, "launches": []}
    for size in sorted({49152, optin - 2048, optin - 1024 - 128, optin - 1024, optin - 1024 + 128, optin - 512, optin}):
        kernel = copy.copy(base)
        kernel.metadata = base.metadata._replace(shared=size)
        kernel.packed_metadata = (base.metadata.num_warps, base.metadata.num_ctas, size)
        kernel.module = kernel.function = kernel._run = None
        y = torch.full((64,), float("nan"), device="cuda")
        try:
            kernel[(1, 1, 1)](x, y, 64, 64)  # the launcher takes constexprs too
            torch.cuda.synchronize()
            ok = bool(torch.allclose(y, expected, atol=1e-4))
            results["launches"].append({"dynamic_shared": size, "launched": True, "correct": ok})
        except Exception as exc:  # record the failure class and message
            results["launches"].append({"dynamic_shared": size, "launched": False,
                                        "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            torch.cuda.synchronize()
    return results


def main() -> None:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
    props = torch.cuda.get_device_properties(0)
    facts = {
        "device_name": props.name,
        "triton_version": triton.__version__,
        "torch_version": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "driver_attributes": driver_attributes(),
        "torch_properties": {k: getattr(props, k) for k in dir(props)
                             if not k.startswith("_") and isinstance(getattr(props, k), (int, str, float))},
        "triton_device_properties": triton.runtime.driver.active.utils.get_device_properties(0),
    }
    major, minor = torch.cuda.get_device_capability(0)
    facts["shared_edge"] = shared_edge(major * 10 + minor)
    with open(os.path.join(out_dir, "device_facts.json"), "w") as fh:
        json.dump(facts, fh, indent=2, default=str)
    print(json.dumps(facts["driver_attributes"], indent=1))
    print(json.dumps(facts["shared_edge"], indent=1))
    print(facts["device_name"], facts["triton_version"], facts["torch_version"])


if __name__ == "__main__":
    main()
