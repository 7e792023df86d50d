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
    try:
        import torch

        major, minor = torch.cuda.get_device_capability()
        device_name = torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001
        raise KernelrulesError("no GPU found to take the architecture from", hint="pass --arch, or --interpret") from None
    family = f"sm_{major}{minor}"
    try:
        skus = list(load_arch(family).flat().get("skus") or [])
    except Exception:  # noqa: BLE001 - an unknown family: load_arch reports it
        return family
    return sku_for_device(device_name, skus) or family


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
