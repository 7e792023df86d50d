"""What a ``kernelrules tune`` run is for: the architecture, its SKU, the study's default name.

Kept apart from the search loop (:mod:`kernelrules.tune.driver`) because other tools ask
the same questions: which profile a device name is (``NVIDIA H200`` -> ``h200``), and
whether an Inductor kernel can be cross-compiled by the rules gate at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ..arch import load_arch
from ..errors import KernelrulesError
from .problem import ProblemSpec


def arch_name(arch: str | None, interpret: bool) -> str:
    """The architecture to judge for: ``arch``, else ``KERNELRULES_ARCH``, else the current GPU's SKU or family."""
    if arch:
        return arch
    if os.environ.get("KERNELRULES_ARCH"):
        return os.environ["KERNELRULES_ARCH"]
    if interpret:
        raise KernelrulesError("--interpret needs --arch (there is no GPU to ask)", hint="e.g. --arch hopper")
    found = cuda_device() or _torch_device()
    if found is None:
        raise KernelrulesError("no GPU found to take the architecture from", hint="pass --arch, or --interpret")
    device_name, (major, minor) = found
    family = f"sm_{major}{minor}"
    try:
        skus = list(load_arch(family).flat().get("skus") or [])
    except Exception:  # noqa: BLE001 - an unknown family: load_arch reports it
        return family
    return sku_for_device(device_name, skus) or family


#: ``CUdevice_attribute`` values of the CUDA driver API (cuda.h): the compute capability.
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def cuda_device(ordinal: int = 0, library: Any = None) -> tuple[str, tuple[int, int]] | None:
    """The name and compute capability of CUDA device ``ordinal`` (as ``CUDA_VISIBLE_DEVICES`` numbers it),
    asked of the CUDA driver library itself; None without one, or when it answers with an error.

    Not through torch: ``tune``'s driver launches nothing (its benchmark workers do), and it imported a CUDA
    build of torch and set up CUDA only to read the device's name, before starting any benchmark worker: on
    the H200 the workers started 4.0-5.2 s into each run (five suite problems of five families, 3f72e1d),
    against under 1 s for the same steps without that on a 2-core CPU. ``library`` is for tests (a stand-in
    with the driver API's functions).
    """
    import ctypes

    lib = library if library is not None else _cuda_library()
    if lib is None:
        return None
    try:
        device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        name = ctypes.create_string_buffer(256)
        calls = (lambda: lib.cuInit(0), lambda: lib.cuDeviceGet(ctypes.byref(device), ordinal),
                 lambda: lib.cuDeviceGetName(name, len(name), device),
                 lambda: lib.cuDeviceGetAttribute(ctypes.byref(major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                  device),
                 lambda: lib.cuDeviceGetAttribute(ctypes.byref(minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                  device))
        if any(call() != 0 for call in calls):  # CUDA_SUCCESS is 0; the first error stops the rest
            return None
    except Exception:  # noqa: BLE001 - a library without these functions: not a CUDA driver
        return None
    return name.value.decode(errors="replace"), (major.value, minor.value)


def _cuda_library() -> Any:
    """The CUDA driver library (``libcuda``), or None where it is not installed (no NVIDIA driver)."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _torch_device() -> tuple[str, tuple[int, int]] | None:
    """The current device's name and compute capability through torch (a machine whose CUDA driver
    library is not found by name, or a GPU torch reaches some other way); None without one."""
    try:
        import torch

        capability = torch.cuda.get_device_capability()
        return torch.cuda.get_device_name(), (int(capability[0]), int(capability[1]))
    except Exception:  # noqa: BLE001 - no torch, no GPU
        return None


def sku_for_device(device_name: str, skus: Sequence[str]) -> str | None:
    """The SKU profile a device name is (``NVIDIA H200`` -> ``h200``): every dash-separated part of the SKU
    appears in the name; the most specific match wins, and a tie (``H100 80GB HBM3``: SXM or PCIe?) is none."""
    name = device_name.lower().replace(" ", "").replace("-", "")
    scored = sorted(((sum(len(p) for p in sku.lower().split("-")), sku) for sku in skus
                     if all(part in name for part in sku.lower().split("-"))), reverse=True)
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    return scored[0][1]


def default_study_name(space: Any, spec: ProblemSpec, arch: Any, interpret: bool) -> str:
    """``<kernel>-<arch>-<sizes>[-interpret]``: one study per kernel, target and problem."""
    sizes = "-".join(f"{k}{v}" for k, v in spec.sizes.items())
    name = f"{space.kernel_name}-{arch.name}" + (f"-{sizes}" if sizes else "")
    return name + ("-interpret" if interpret else "")


def compiled_stage_blocked(space: Any) -> list[str]:
    """Names an Inductor kernel reads from imports the compile gate does not load (``triton_helpers``, ...).

    The compiled stage cross-compiles the kernel as kernelrules loads kernels (only
    ``triton`` and ``math`` imports kept, docs/compilation.md); an Inductor kernel calling
    ``triton_helpers.maximum`` or ``libdevice.*`` cannot compile that way, while the
    benchmark worker (which imports them) can run it.
    """
    from ..specify.inductor import inductor_kernel_info
    from ..discover.kernelreduce import read_kernel_source, reduce_module
    from ..discover.kernelsource import hash_reduced

    try:
        if inductor_kernel_info(space.kernel_path, space.kernel_name) is None:
            return []
        reduced = reduce_module(read_kernel_source(Path(space.kernel_path)), Path(space.kernel_path))
        return list(hash_reduced(reduced, space.kernel_name)[1])
    except Exception:  # noqa: BLE001 - the gate reports what it cannot load
        return []
