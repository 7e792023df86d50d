"""Compile the configs Triton's autotuner is about to time, in parallel, into Triton's own cache.

Triton 3.6's autotuner compiles each config it times one after another, in the
launching process, on first use. Once the configs to time are known (after
``early_config_prune`` and ``perf_model``/``top_k``), kernelrules compiles them all at
once in its worker pool, with the launch's own specialisation and cache key
(docs/compilation.md, "Sharing Triton's cache with the JIT"), into the directory the
JIT reads. Each of the autotuner's compiles is then a cache hit. A compile that runs
past the time limit, or fails, is simply left to Triton (which reports it as it always
does), so precompiling never changes which configs are timed or what they measure.

Inside a tuner (:func:`precompile_before_timing`) the compiles run in the background
while the autotuner times the configs compiled already
(:mod:`kernelrules.adapters.compile_ahead`); :func:`precompile` compiles and returns.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

from .kernel_prune import log, resolve_arch


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


def launching_arch() -> Any:
    """The architecture kernels will launch on ($KERNELRULES_ARCH, else the GPU), or None without one."""
    from ..errors import KernelrulesError

    try:
        return resolve_arch(None)
    except (KernelrulesError, ImportError, RuntimeError):
        return None


def precompile(kernel: Any, configs: Sequence[Any], args: Mapping[str, Any], arch: Any = None, *,
               jobs: int | None = None, timeout: float = 30.0, context: Any = None) -> int:
    """Compile ``configs`` of ``kernel`` for the launch ``args`` into Triton's cache; return how many compiled.

    ``arch`` defaults to the current GPU (``$KERNELRULES_ARCH`` first), which is the
    target whose cache entries the JIT will look up. ``context``, an
    :class:`~kernelrules.adapters.autotune_context.AutotuneContext`, compiles in its pool (whose
    workers may be running already, and stay; configs it compiled into Triton's cache
    already are not compiled again); without it a pool of up to ``jobs`` workers is
    started and stopped for the call.
    """
    from .compile_ahead import CompileAhead

    ahead = CompileAhead(context=context, jobs=jobs, timeout=timeout)
    ahead.start(kernel, configs, args, arch, triton_cache_dir(), background=False)
    return ahead.compiled


def precompile_before_timing(tuner: Any, *, jobs: int | None = None, timeout: float = 30.0,
                             context: Any = None) -> Any:
    """Make ``tuner`` (Triton's Autotuner) compile the configs it keeps while it times them.

    Wraps the instance's ``prune_configs``, which Triton calls once per new tuning key
    with the final list, and its ``_bench``: the configs not in Triton's cache yet are
    compiled in parallel in the background (:class:`~kernelrules.adapters.compile_ahead.CompileAhead`,
    ``tuner.kernelrules_compile_ahead``), the ones compiled already are timed first, and
    the benchmark of each config waits for that config's compile only; a config that differs
    only in ``num_stages`` from one timed already, on a kernel without a loop, reuses that
    timing (:meth:`~kernelrules.adapters.compile_ahead.CompileAhead.timed_twin`). A Triton without
    ``Autotuner._bench`` waits for all the compiles before timing. The target is the GPU
    that launches (``$KERNELRULES_ARCH`` first), whatever architecture the rules judged
    for; with neither, nothing is precompiled (nothing can launch). Any problem becomes a
    warning and tuning goes on unchanged. ``context`` is the tuner's
    :class:`~kernelrules.adapters.autotune_context.AutotuneContext` (``kernelrules.autotune``
    passes it): the compiles then run in its pool, and its compile-first early prune may
    leave the check of a repair to this precompile.
    """
    from .compile_ahead import CANNOT_LAUNCH, CompileAhead

    ahead = CompileAhead(context=context, jobs=jobs, timeout=timeout)
    tuner.kernelrules_compile_ahead = ahead
    original = tuner.prune_configs
    overlaps = callable(getattr(tuner, "_bench", None))
    if context is not None:
        context.checks_repairs_ahead = True

    def prune_configs(kwargs: dict, *rest: Any, **more: Any) -> list:
        kept = original(kwargs, *rest, **more)
        if not kept or interpreting():
            return kept
        target = launching_arch()
        if target is None:  # no GPU here and none named: nothing will launch, nothing to compile for
            log.info("kernelrules: precompile skipped: no GPU and no $KERNELRULES_ARCH")
            return kept
        try:
            ordered = ahead.start(tuner, kept, {**tuner.nargs, **kwargs}, target, triton_cache_dir())
            if not overlaps:  # no per-config benchmark hook: wait for them all, drop rejected repairs
                ahead.join()
                ordered = [c for c in ordered if ahead.ready(c)] or ordered
            return ordered
        except Exception as exc:  # never break the user's autotuning
            warnings.warn(f"kernelrules: precompile skipped ({type(exc).__name__}: {exc})", stacklevel=2)
            return kept

    tuner.prune_configs = prune_configs
    if overlaps:
        bench = tuner._bench

        def _bench(*args: Any, config: Any, **meta: Any) -> Any:
            if not ahead.ready(config):  # a repair the rules reject on its compiled facts
                return list(CANNOT_LAUNCH)
            twin = ahead.timed_twin(config)  # the same binary timed already (num_stages on a loop-free kernel)
            if twin is not None:
                return twin
            timing = bench(*args, config=config, **meta)
            ahead.record_timing(config, timing)
            return timing

        tuner._bench = _bench
    return tuner
