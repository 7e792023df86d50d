"""What a benchmark worker's first JIT launch computes once per process, done in its warm-up instead.

The warm-up (:meth:`kernelrules.tune.bench_process._Session.warm`) runs after the worker says "ready", while the
driver is still judging the space on a GPU machine; each step here would otherwise be part of the first trial.
Each is independent and optional: a failure is left to the first launch, which meets it again and reports it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Sequence


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


def start_launcher_builds(fn: Any, jobs: Sequence[Any]) -> list[threading.Thread]:
    """Triton's launcher for each launch signature in ``jobs`` (compile jobs of the space's signature and of its
    edge shapes' with one config: the launcher depends on the argument types, not on a config), built in a thread
    each, from ``fn``, the worker's kernel, as the problem starts. Its first launch otherwise builds it with the C
    compiler: 0.21-0.33 s of the first check of rope, row_sum, softmax and swiglu large in the H100 warm series
    (``benchmarks/results/suite/pairs-46d5be1-warm-h100``), whose first guesses were sent before the compile
    workers' own build (:mod:`kernelrules.compile.host_prebuild`) was in the cache. The first request waits for
    them (:func:`await_builds`). A job whose launcher cannot be built here is left to the launch."""
    from ..compile.compilejob import specialize_job
    from ..compile.host_prebuild import build_launcher

    def build(job: Any) -> None:
        try:
            build_launcher(specialize_job(fn, job).ast_source(fn))
        except Exception:  # noqa: BLE001 - best effort: the launch builds what is missing, and reports what fails
            pass

    threads = []
    for job in jobs:
        if job.target[0] != "cuda":
            continue
        thread = threading.Thread(target=build, args=(job,), name="kernelrules-launcher", daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def await_builds(threads: Sequence[threading.Thread], limit: float = 30.0) -> list[threading.Thread]:
    """Before a worker's first launch: wait for its launchers' builds (at most ``limit`` seconds in all), so the
    launch loads each launcher rather than build it again beside them; none left to wait for (an empty list)."""
    deadline = time.monotonic() + limit
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return []


__all__ = ["await_builds", "start_launcher_builds", "warm_specializer", "warm_triton"]
