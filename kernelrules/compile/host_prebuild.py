"""Triton's host modules for a compiled kernel, built by a compile worker before the first launch needs them.

Before a process can launch a kernel, Triton builds two small C extensions with the machine's
C compiler and caches them in ``TRITON_CACHE_DIR``: its CUDA helper (``cuda_utils``, once per
process) and a launcher for the kernel's signature (``__triton_launcher``, the same for every
config of a kernel, since its source depends on the argument types only). On the H200, with
empty caches, they were 0.25-0.36 s of a benchmark worker's warm-up and 0.19-0.23 s of its first
trial (``benchmarks/results/first_trial_profile_2026-12-04``), both on the way to a tune run's
first timing. Where the compile workers share a Triton cache with the process that will launch
(``kernelrules tune``'s study cache, ``kernelrules.autotune``'s precompile on the launching GPU),
the worker that compiled a kernel builds both there right after answering, and the launching
process imports them from the cache.

Best effort: without a C compiler, the CUDA driver library or an NVIDIA target, nothing is built
and the launching process builds them as it would have. One worker per kernel signature and cache
builds them (a claim file in the cache's folder ``.kr-host-modules``, one folder however many kernels);
the rest find the claim and go on.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

#: The folder of this module's claim files in a shared Triton cache directory (a file per launcher source).
CLAIM_DIR = ".kr-host-modules"
#: Launchers this process has built or found claimed, by claim name.
_seen: set[str] = set()


def claim_name(src: Any, metadata: Any) -> str | None:
    """The claim file's name (in :data:`CLAIM_DIR`) for this kernel's launcher: what its source depends on (the argument types, the
    tensor descriptors' layout); None when ``src`` has no signature (another Triton)."""
    signature = getattr(src, "signature", None)
    if not isinstance(signature, dict):
        return None
    described = repr((sorted((str(k), repr(v)) for k, v in signature.items()),
                      repr(getattr(metadata, "tensordesc_meta", None))))
    return hashlib.sha256(described.encode()).hexdigest()[:24]


def _claim(cache_dir: str, name: str) -> bool:
    """Whether this process is the first to claim ``name`` in ``cache_dir`` (an exclusive create)."""
    claims = os.path.join(cache_dir, CLAIM_DIR)
    try:
        os.makedirs(claims, exist_ok=True)
        os.close(os.open(os.path.join(claims, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError:
        return False
    return True


def prebuild(src: Any, metadata: Any, cache_dir: str) -> bool:
    """Build the CUDA helper and the launcher of a kernel compiled from ``src`` (with ``metadata``) into the Triton
    cache ``cache_dir`` (``TRITON_CACHE_DIR`` must name it); whether this call built or found them. Nothing for a
    target other than NVIDIA's, a launcher already claimed, or where Triton cannot build them here."""
    target = getattr(metadata, "target", None)
    if getattr(target, "backend", None) != "cuda":
        return False
    name = claim_name(src, metadata)
    if name is None or name in _seen:
        return False
    _seen.add(name)
    if not _claim(cache_dir, name):
        return False
    try:
        from triton.backends.nvidia.driver import CudaLauncher, CudaUtils

        CudaUtils()  # not triton.runtime.driver.active, whose check imports torch
        CudaLauncher(src, metadata)
    except Exception:  # noqa: BLE001 - no C compiler, no libcuda, another Triton: the launch builds them
        return False
    return True


__all__ = ["CLAIM_DIR", "claim_name", "prebuild"]
