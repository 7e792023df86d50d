"""Triton's host modules for a compiled kernel, built by a compile worker before the first launch needs them.

Before a process can launch a kernel, Triton builds two small C extensions with the machine's
C compiler and caches them in ``TRITON_CACHE_DIR``: its CUDA helper (``cuda_utils``, once per
process) and a launcher for the kernel's signature (``__triton_launcher``, the same for every
config of a kernel, since its source depends on the argument types only). On the H200, with
empty caches, they were 0.25-0.36 s of a benchmark worker's warm-up and 0.19-0.23 s of its first
trial (``benchmarks/results/first_trial_profile_2026-12-04``), both on the way to a tune run's
first timing. Where the compile workers share a Triton cache with the process that will launch
(``kernelrules tune``'s study cache, ``kernelrules.autotune``'s precompile on the launching GPU),
the compile workers build both there, and the launching process imports them from the cache.

The launcher's source depends on the argument types only, which Triton knows before it compiles
(the ``ASTSource``'s signature), so the first compile of a signature in a cache starts building it
in a thread as the compile starts (:func:`start_launcher_build`): in a tune run, beside the probe
compiles sent as it starts, rather than after a compile's answer, when the benchmark worker's first
launch may already need it (on a 2-core CPU the launcher was in the cache from 0.08 s after the first
probe's answer to 1.86 s before it, ``benchmarks/results/launcher-ready-2026-12-05``). Kernels with
tensor-descriptor arguments, whose launcher also depends on how the compile lowered them, are built
after the compile (:func:`prebuild`).

Best effort: without a C compiler, the CUDA driver library or an NVIDIA target, nothing is built
and the launching process builds them as it would have. One worker per kernel signature and cache
builds them (a claim file in the cache's folder ``.kr-host-modules``, one folder however many kernels);
the rest find the claim and go on. A worker kept from one study to the next (``tune``'s session)
claims again in each study's cache.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Mapping

#: The folder of this module's claim files in a shared Triton cache directory (a file per launcher source).
CLAIM_DIR = ".kr-host-modules"
#: (cache directory, claim name) of the launchers this process has built or found claimed.
_seen: set[tuple[str, str]] = set()


def claim_name(src: Any, metadata: Any) -> str | None:
    """The claim file's name (in :data:`CLAIM_DIR`) for this kernel's launcher: what its source depends on (the
    argument types, the tensor descriptors' layout; none, ``[]`` and a missing one alike); None when ``src`` has no
    signature (another Triton). ``metadata`` may be None before the compile."""
    signature = getattr(src, "signature", None)
    if not isinstance(signature, dict):
        return None
    described = repr((sorted((str(k), repr(v)) for k, v in signature.items()),
                      repr(getattr(metadata, "tensordesc_meta", None) or None)))
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


def _first(cache_dir: str, name: str | None) -> bool:
    """Whether this process builds launcher ``name`` in ``cache_dir``: neither it nor another process claimed it."""
    if name is None or (cache_dir, name) in _seen:
        return False
    _seen.add((cache_dir, name))
    return _claim(cache_dir, name)


def _build(src: Any, metadata: Any) -> bool:
    """Build (or load) ``src``'s launcher (:func:`build_launcher`), then Triton's CUDA helper, into
    ``TRITON_CACHE_DIR``, each on its own; whether the launcher was built and loaded. The launcher first: a benchmark
    worker builds its CUDA helper in its warm-up, before the first trial, and a kept worker has it loaded. Triton
    writes a module into its cache before it loads it, so one that cannot load here (no GPU driver) is still there
    for the launching process."""
    built = build_launcher(src, metadata)
    try:
        from triton.backends.nvidia.driver import CudaUtils

        CudaUtils()  # not triton.runtime.driver.active, whose check imports torch
    except Exception:  # noqa: BLE001 - another Triton, no C compiler, no libcuda: the launching process builds it
        pass
    return built


def build_launcher(src: Any, metadata: Any = None) -> bool:
    """Build (or load from ``TRITON_CACHE_DIR``) the launcher of a kernel compiled from ``src`` (its ``metadata``;
    None before the compile, and then nothing for tensor-descriptor arguments, whose launcher depends on the
    compile), in this process whatever any claim says: also the launching process's own build
    (:mod:`kernelrules.tune.jit_warmup`), which its first launch waits for rather than build it again. Whether it
    was built; nothing for another Triton."""
    signature = getattr(src, "signature", None)
    if metadata is None and (not isinstance(signature, dict) or has_descriptors(signature)):
        return False
    try:
        from triton.backends.nvidia.driver import CudaLauncher
    except Exception:  # noqa: BLE001 - another Triton: the launch builds it
        return False
    try:
        CudaLauncher(src, _BeforeCompile() if metadata is None else metadata)
    except Exception:  # noqa: BLE001 - no C compiler, no libcuda: the launch builds it, and reports what fails
        return False
    return True


def prebuild(src: Any, metadata: Any, cache_dir: str) -> bool:
    """Build the CUDA helper and the launcher of a kernel compiled from ``src`` (with ``metadata``) into the Triton
    cache ``cache_dir`` (``TRITON_CACHE_DIR`` must name it); whether this call built or found them. Nothing for a
    target other than NVIDIA's, a launcher already claimed, or where Triton cannot build them here."""
    target = getattr(metadata, "target", None)
    if getattr(target, "backend", None) != "cuda" or not _first(cache_dir, claim_name(src, metadata)):
        return False
    return _build(src, metadata)


class _BeforeCompile:
    """The compiled kernel's metadata as a launcher's build reads it, before the kernel exists: no tensor
    descriptors (:func:`start_launcher_build` takes no kernel with them), and zero for the launch facts
    (scratch sizes, cluster flags) the launcher object keeps and the build discards."""

    tensordesc_meta = None

    def __getattr__(self, name: str) -> int:
        return 0


def has_descriptors(signature: Mapping[str, Any]) -> bool:
    """Whether a kernel signature has a tensor-descriptor argument (its launcher depends on the compile)."""
    return any("tensordesc" in str(value) for value in signature.values())


def start_launcher_build(src: Any, backend: str, cache_dir: str) -> threading.Thread | None:
    """As a compile of ``src`` for ``backend`` starts: build the kernel signature's launcher and Triton's CUDA helper
    into ``cache_dir`` (``TRITON_CACHE_DIR`` must name it) in a thread beside the compile; the thread, or None
    (another backend, tensor descriptors, a launcher claimed already). Join it before ``TRITON_CACHE_DIR`` or the
    temporary directory changes: the build writes there."""
    signature = getattr(src, "signature", None)
    if backend != "cuda" or not isinstance(signature, dict) or has_descriptors(signature):
        return None
    if not _first(cache_dir, claim_name(src, None)):
        return None
    thread = threading.Thread(target=_build, args=(src, _BeforeCompile()), name="kernelrules-launcher", daemon=True)
    thread.start()
    return thread


__all__ = ["CLAIM_DIR", "build_launcher", "claim_name", "has_descriptors", "prebuild", "start_launcher_build"]
