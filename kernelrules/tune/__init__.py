"""``kernelrules tune``: a search driver that benchmarks only the configs the rules pass.

    from kernelrules.tune import tune

    result = tune("examples/matmul.tune.yaml", arch="hopper", trials=200, gpus=["0", "1"])
    print(result.summary["winner"]["triton_config"])
    for record in result.records:          # one structured record per trial
        print(record["status"], record["config"], record["ms"], record["bottleneck"])

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


__all__ = ["tune"]
