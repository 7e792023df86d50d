"""Compile the configs Triton's autotuner is about to time, in parallel, into Triton's own cache.

Triton 3.6's autotuner compiles each config it times one after another, in the
launching process, on first use. Once the configs to time are known (after
``early_config_prune`` and ``perf_model``/``top_k``), kernelrules compiles them all at
once in its worker pool, with the launch's own specialisation and cache key
(docs/compilation.md, "Sharing Triton's cache with the JIT"), into the directory the
JIT reads. Each of the autotuner's compiles is then a cache hit. A compile that runs
past the time limit, or fails, is simply left to Triton (which reports it as it always
does), so precompiling never changes which configs are timed or what they measure.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

from .kernel_prune import KernelJudge, jit_function, kernel_object, launch_signature, log, resolve_arch


def triton_cache_dir() -> str:
    """The directory Triton's JIT reads compiled kernels from (``TRITON_CACHE_DIR`` or its default)."""
    try:
        from triton import knobs

        return str(knobs.cache.dir)
    except (ImportError, AttributeError):  # older Triton without knobs
        return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def interpreting() -> bool:
    """True under ``TRITON_INTERPRET=1``, where nothing is compiled."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def precompile(kernel: Any, configs: Sequence[Any], args: Mapping[str, Any], arch: Any = None, *,
               jobs: int | None = None, timeout: float = 30.0) -> int:
    """Compile ``configs`` of ``kernel`` for the launch ``args`` into Triton's cache; return how many compiled.

    ``arch`` defaults to the current GPU (``$KERNELRULES_ARCH`` first), which is the
    target whose cache entries the JIT will look up.
    """
    from .pool import CompilePool

    kernel = kernel_object(kernel)
    fn, target_arch = jit_function(kernel), resolve_arch(arch)
    signature, constexprs = launch_signature(fn, args)
    judge = KernelJudge(kernel, target_arch, signature, constexprs, heuristic_args=args)  # for prepare(): no compile
    try:
        compile_jobs = [judge.target.job(judge.prepare(c), target_arch, timeout) for c in configs]
    finally:
        judge.close()
    workers = min(len(compile_jobs), jobs or os.cpu_count() or 1)
    compiled = 0
    with CompilePool(max_workers=workers, timeout=timeout, cache=None, triton_cache_dir=triton_cache_dir()) as pool:
        for job, result in pool.run(compile_jobs):
            compiled += result.ok
            if not result.ok:
                log.info("kernelrules: precompile of %s: %s (left to Triton)", job.describe(), result.error_kind)
    return compiled


def precompile_before_timing(tuner: Any, *, jobs: int | None = None, timeout: float = 30.0) -> Any:
    """Make ``tuner`` (Triton's Autotuner) precompile the configs it keeps before timing them.

    Wraps the instance's ``prune_configs``, which Triton calls once per new tuning key
    with the final list. The target is the GPU that launches (``$KERNELRULES_ARCH``
    first), whatever architecture the rules judged for. Any problem becomes a warning
    and tuning goes on unchanged.
    """
    original = tuner.prune_configs

    def prune_configs(kwargs: dict, *rest: Any, **more: Any) -> list:
        kept = original(kwargs, *rest, **more)
        if len(kept) > 1 and not interpreting():
            try:
                precompile(tuner, kept, {**tuner.nargs, **kwargs}, None, jobs=jobs, timeout=timeout)
            except Exception as exc:  # never break the user's autotuning
                warnings.warn(f"kernelrules: precompile skipped ({type(exc).__name__}: {exc})", stacklevel=2)
        return kept

    tuner.prune_configs = prune_configs
    return tuner
