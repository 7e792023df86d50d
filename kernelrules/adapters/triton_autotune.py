"""Prune inside Triton's own autotuner: the ``kernelrules.autotune`` decorator.

    import kernelrules

    @kernelrules.autotune(configs=CONFIGS, key=["M", "N", "K"], arch="ada")
    @triton.jit
    def matmul_kernel(...): ...

is ``triton.autotune`` with kernelrules' early prune in ``prune_configs_by``
(:mod:`kernelrules.adapters.triton_prune`, whose ``early_prune`` also works on its own in a
plain ``triton.autotune``), kernelrules' perf model with ``perf_model=True``
(:mod:`kernelrules.adapters.triton_perf`), the precompile and the pinned table.

``kernelrules.autotune`` hands its early prune, its perf model and its precompile one
:class:`~kernelrules.adapters.autotune_context.AutotuneContext` (``tuner.kernelrules_context``):
one compile pool for the tuner, started on first use and stopped at interpreter exit
(or with ``tuner.kernelrules_context.close()``), and the resource model's probes
compiled once.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .autotune_context import AutotuneContext
from .triton_prune import compose, early_prune


def autotune(configs: Sequence[Any], key: Sequence[str], prune_configs_by: Mapping[str, Any] | None = None, *,
             arch: str | None = None, compile: bool = False, repair: bool = True,
             perf_model: Callable | bool | None = None, top_k: int | float | None = None,
             precompile: bool = True, pinned: Any = None, on_missing: str = "tune",
             **triton_autotune_kwargs: Any) -> Callable:
    """``triton.autotune`` with kernelrules' pruning: a drop-in decorator.

    ``configs``, ``key`` and ``prune_configs_by`` keep their places in ``triton.autotune``'s
    signature; kernelrules' own options are keyword-only, so no positional call changes meaning.

    Every launch with a new tuning key benchmarks only the configs kernelrules keeps for
    ``arch`` (repaired ones in place of rejected ones with ``repair=True``). A user's own
    ``prune_configs_by["early_config_prune"]`` runs first and kernelrules' on what it
    kept. ``perf_model=True`` ranks the survivors with kernelrules' analytic model
    (``kernelrules.adapters.triton_perf``), a callable is passed to Triton as is; ``top_k`` (how
    many to benchmark) goes to Triton too. With ``precompile=True`` the configs left to
    time are compiled in parallel into Triton's cache first (``kernelrules.adapters.precompile``),
    so the autotuner's own serial compiles are cache hits. Any other keyword goes to
    ``triton.autotune``.

    The three phases share one compile pool and the resource model's probe compiles
    (``tuner.kernelrules_context``, an :class:`~kernelrules.adapters.autotune_context.AutotuneContext`):
    its workers start on first use and stop after 60 s unused (``idle_timeout``), at
    interpreter exit, or at ``tuner.kernelrules_context.close()``.

    ``pinned`` (a table file, docs/pinned.md) launches the table's config for a listed
    architecture and key with no benchmark; ``on_missing`` says what an unlisted key gets:
    ``"tune"`` (benchmark as usual), ``"static"`` (the static pick: the perf model's best
    config that the rules pass, no timing) or ``"error"``. ``$KERNELRULES_NO_BENCHMARK=1``
    and CUDA-graph capture turn ``"tune"`` into ``"static"``, with or without a table
    (:mod:`kernelrules.adapters.pinned_launch`).
    """
    import triton

    from .pinned_launch import POLICIES

    if on_missing not in POLICIES:
        raise ValueError(f"on_missing must be one of {', '.join(POLICIES)}, not {on_missing!r}")
    if on_missing == "error" and pinned is None:
        raise ValueError("on_missing='error' needs a pinned table (pinned=FILE.json)")

    by = dict(prune_configs_by or {})
    if perf_model not in (None, False) and by.get("perf_model") is not None:
        raise TypeError("perf_model given twice: as an argument and in prune_configs_by")
    if top_k is not None:
        by["top_k"] = top_k

    def decorator(fn: Any) -> Any:
        context = AutotuneContext()
        ours = early_prune(fn, arch=arch, compile=compile, repair=repair, context=context)
        user = by.get("early_config_prune")
        options = {**by, "early_config_prune": ours if user is None else compose(user, ours)}
        if callable(perf_model):
            options["perf_model"] = perf_model
        tuner = triton.autotune(configs=list(configs), key=list(key), prune_configs_by=options,
                                **triton_autotune_kwargs)(fn)
        tuner.kernelrules_context = context
        if perf_model is True:  # built on the Autotuner itself, so the model sees the config list too
            from .triton_perf import triton_perf_model

            tuner.perf_model = triton_perf_model(tuner, arch=arch, context=context)
            if top_k is not None:  # rank from the configs' values, compile only the top_k (autotune_context)
                context.rank_first_top_k = top_k
                context.ranks_from_values = getattr(tuner.perf_model, "ranks_from_values", None)
        if precompile:
            from .precompile import precompile_before_timing

            precompile_before_timing(tuner, context=context)
        from .pinned_launch import make_pinned

        make_pinned(tuner, pinned, on_missing, arch, context, key)
        return tuner

    return decorator
