"""What a benchmark worker's first JIT launch computes once per process, done in its warm-up instead.

The warm-up (:meth:`kernelrules.tune.bench_process._Session.warm`) runs after the worker says "ready", while the
driver is still judging the space on a GPU machine; each step here would otherwise be part of the first trial.
Each is independent and optional: a failure is left to the first launch, which meets it again and reports it.
"""

from __future__ import annotations

from typing import Any, Iterable


def warm_triton() -> None:
    """The hash of Triton's sources and ``libtriton`` (``triton_key``, the start of every cache key: over 400 MB
    read in Triton 3.6) and the CUDA helper module (a C module, built on first use)."""
    try:
        from triton.runtime import cache

        cache.triton_key()
    except Exception:  # noqa: BLE001 - an older Triton, or none: the first launch computes what it needs
        pass
    try:
        from triton.runtime import driver

        driver.active.utils  # noqa: B018 - built on first use
    except Exception:  # noqa: BLE001 - no GPU: the first trial reports it
        pass


def warm_specializer(values: Iterable[Any]) -> bool:
    """The first launch's specialization of a tensor argument, made here on one of the problem's tensors: in
    Triton 3.6 it imports Triton's gluon modules (``triton.experimental.gluon``, to tell a gluon tensor descriptor
    from a tensor; 0.09-0.13 s of the first trial's check on the H200, ``benchmarks/first_trial_profile.py``).
    Whether a tensor was specialized."""
    tensor = next((v for v in values if hasattr(v, "data_ptr") and hasattr(v, "dtype")), None)
    if tensor is None:
        return False
    try:
        from triton.runtime.jit import mangle_type

        mangle_type(tensor)
    except Exception:  # noqa: BLE001 - another Triton: the first launch does what it needs
        return False
    return True


__all__ = ["warm_specializer", "warm_triton"]
