"""``kernelrules tune``: a search driver that benchmarks only the configs the rules pass.

    from kernelrules.tune import tune

    result = tune("examples/matmul.tune.yaml", arch="hopper", trials=200, gpus=["0", "1"])
    print(result.summary["winner"]["triton_config"])
    for record in result.records:          # one structured record per trial
        print(record["status"], record["config"], record["ms"], record["bottleneck"])

    results = tune_many(["gemm/small.tune.yaml", "gemm/large.tune.yaml"], arch="hopper", time_budget=60)

Modules, one job each: :mod:`.problem` (the space file's problem section),
:mod:`.safeexpr` (its expressions, never ``eval``-ed), :mod:`.launch` (building
inputs, launching, references; imported in the workers only), :mod:`.correctness`,
:mod:`.timing`, :mod:`.worker` (a benchmark process per GPU), :mod:`.gate` (the rules),
:mod:`.study` (Optuna: parameters, storage, claims, resume), :mod:`.feedback` (failure
classes, gaps, bottlenecks), :mod:`.records`, :mod:`.driver` (the loop), :mod:`.output`
and :mod:`.report` (HTML). See docs/tune.md.
"""

from __future__ import annotations

from typing import Any


def tune(space: Any, **options: Any) -> Any:
    """Run a tuning study; see :class:`kernelrules.tune.options.TuneOptions` for the options."""
    from .driver import tune as run

    return run(space, **options)


def tune_many(spaces: Any, **options: Any) -> Any:
    """Tune several spaces in turn with the same options, the benchmark and compile workers kept warm from one to the
    next; one result per space (:func:`kernelrules.tune.driver.tune_many`)."""
    from .driver import tune_many as run_many

    return run_many(spaces, **options)


__all__ = ["tune", "tune_many"]
