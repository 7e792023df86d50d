"""The static pick: the config the perf model ranks first among those the rules pass, with no timing.

    config = kernelrules.static_pick(matmul_kernel, configs, args, arch="hopper")

It is what a pinned ``kernelrules.autotune`` launches for a key its table does not list
when benchmarking is not allowed (``on_missing="static"``, ``$KERNELRULES_NO_BENCHMARK``,
CUDA-graph capture), and what a user can call to see it. Nothing in it measures time
or draws a random number, so every run and every rank makes the same choice:

1. the candidates are the configs kernelrules' early prune keeps for the architecture
   (:class:`kernelrules.adapters.triton_prune.EarlyPrune`, the config stage: the rules and the resource
   model's predictions; repaired configs in place of rejected ones with ``repair=True``),
   after the user's own ``early_config_prune`` when the tuner has one;
2. each is estimated by the tuner's perf model, else kernelrules' own
   (:func:`kernelrules.adapters.triton_perf.triton_perf_model`: the matmul model for kernels with
   integer arguments M, N and K);
3. the lowest estimate wins; ties, and configs the model cannot estimate (a kernel the
   model does not read gets the same neutral estimate for every config), keep the order
   of the config list, so the first candidate wins. Further down the ranking, a config that
   ties with an earlier one differing only in ``num_stages`` comes after every distinct
   config (:func:`kernelrules.predict.ranking.distinct_first`, as everywhere the tools rank).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Callable, Mapping, Sequence

log = logging.getLogger("kernelrules")


def rank(configs: Sequence[Any], named_args: Mapping[str, Any], launch_kwargs: Mapping[str, Any] | None = None, *,
         prune: Callable | None = None, model: Callable | None = None) -> list[tuple[Any, float]]:
    """``(config, estimate)`` of the candidates, best first (stable: ties keep the list order; a
    ``num_stages`` twin of an earlier config with the same estimate after every distinct config).

    ``prune`` is an ``early_config_prune`` callable and ``model`` a ``perf_model`` callable, called
    as Triton's autotuner calls them; an estimate that fails or is not a number counts as 0.0.
    """
    extra = dict(launch_kwargs or {})
    candidates = list(configs)
    if prune is not None:
        candidates = list(prune(candidates, dict(named_args), **extra)) or candidates
    scored = []
    for position, config in enumerate(candidates):
        estimate = 0.0
        if model is not None and len(candidates) > 1:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the model's "cannot estimate" warning: the list order decides
                    estimate = float(model(**{**named_args, **extra, **config.all_kwargs()}))
            except Exception as exc:  # noqa: BLE001 - a model that cannot estimate leaves the order alone
                log.info("kernelrules: static pick: no estimate for %s (%s)", config, exc)
            if estimate != estimate:  # NaN
                estimate = 0.0
        scored.append((estimate, position, config))
    scored.sort(key=lambda item: (item[0], item[1]))
    from ..config import KernelConfig
    from ..predict.ranking import distinct_first, twin_key

    pairs = [(estimate, (config, estimate)) for estimate, _position, config in scored]
    return distinct_first(pairs, identity=lambda pair: twin_key(KernelConfig.from_triton(pair[0])))


def static_pick(kernel: Any, configs: Sequence[Any], args: Mapping[str, Any] | Sequence[Any], *,
                arch: str | None = None, repair: bool = True, perf_model: Callable | None = None,
                launch_kwargs: Mapping[str, Any] | None = None) -> Any:
    """The static pick (see the module docstring) for a launch of ``kernel`` with ``args``.

    ``kernel`` is a JITFunction or a Triton wrapper; ``configs`` are ``triton.Config``
    objects; ``args`` the launch's arguments, by name or positional (tensors, CPU ones
    too, and numbers). ``arch`` is a profile name, else ``$KERNELRULES_ARCH``, else the
    current GPU. ``perf_model`` replaces kernelrules' model. Returns one of ``configs``
    (or, with ``repair``, the repair of one).
    """
    from .kernel_prune import jit_function
    from .triton_perf import triton_perf_model
    from .triton_prune import EarlyPrune

    if not configs:
        raise ValueError("static_pick needs at least one config")
    fn = jit_function(kernel)
    named = dict(args) if isinstance(args, Mapping) else dict(zip(fn.arg_names, args))
    model = perf_model if perf_model is not None else triton_perf_model(kernel, arch=arch)
    ranked = rank(configs, named, launch_kwargs, prune=EarlyPrune(kernel, arch=arch, repair=repair), model=model)
    return ranked[0][0]
