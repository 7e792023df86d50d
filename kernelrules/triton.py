"""Prune inside Triton's own autotuner: ``kernelrules.autotune`` and ``early_prune``.

    import kernelrules

    @kernelrules.autotune(configs=CONFIGS, key=["M", "N", "K"], arch="ada")
    @triton.jit
    def matmul_kernel(...): ...

is ``triton.autotune`` with kernelrules' pruner in ``prune_configs_by``. The pruner on
its own, for a plain ``triton.autotune``::

    prune_configs_by={"early_config_prune": early_prune(lambda: matmul_kernel, arch="ada")}

Triton calls the pruner with the configs and the launch's arguments (``named_args``)
but not with the kernel, so the pruner is bound to the kernel it is given: a
``JITFunction``, an Autotuner/Heuristics wrapper, or a zero-argument callable returning
one (the kernel does not exist yet while its own decorator runs). It builds the launch
signature from ``named_args`` as the launch will (tensor dtypes, integer values:
16-divisible and 1 specialise), evaluates the ``@triton.heuristics`` under the
autotuner per config, judges every config for the architecture (``arch``, else
``$KERNELRULES_ARCH``, else the current GPU), and drops or repairs the ones that cannot
run or are structurally slow, logging one line per decision. It never returns an empty
list (Triton raises on that): if every config fails, it keeps the least bad one and
warns. Any problem of its own becomes a warning and the configs are kept.

``kernelrules.autotune`` hands its early prune, its perf model and its precompile one
:class:`~kernelrules.autotune_context.AutotuneContext` (``tuner.kernelrules_context``):
one compile pool for the tuner, started on first use and stopped at interpreter exit
(or with ``tuner.kernelrules_context.close()``), and the resource model's probes
compiled once. ``early_prune(..., context=...)`` shares one the same way; without one,
each call starts and stops its own pool.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Mapping, Sequence

from .autotune_context import AutotuneContext
from .errors import KernelrulesError
from .kernel_prune import KernelJudge, jit_function, kernel_object, launch_signature, log, resolve_arch

__all__ = ["EarlyPrune", "autotune", "early_prune", "launch_signature"]

#: Workers a shared pool starts at the beginning of an early prune: the resource model's
#: first probes are two compiles.
PROBE_WORKERS = 2


class EarlyPrune:
    """The callable handed to ``prune_configs_by["early_config_prune"]``; see the module docstring."""

    def __init__(self, kernel: Any, arch: str | None = None, compile: bool = False, repair: bool = True,
                 context: AutotuneContext | None = None) -> None:
        self.kernel, self.arch, self.compile, self.repair, self.context = kernel, arch, compile, repair, context
        self._memo: dict[Any, tuple[list, list]] = {}

    def __call__(self, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list:
        if not configs:
            return list(configs)
        try:
            return self._prune(list(configs), {**named_args, **kwargs})
        except Exception as exc:  # never break the user's autotuning
            warnings.warn(f"kernelrules: pruning skipped, all {len(configs)} configs kept ({type(exc).__name__}: {exc})",
                          stacklevel=2)
            return list(configs)

    def _prune(self, configs: list, args: Mapping[str, Any]) -> list:
        from .prune_api import build_result

        kernel = kernel_object(self.kernel)
        fn, arch = jit_function(kernel), resolve_arch(self.arch)
        signature, constexprs = launch_signature(fn, args)
        key = (arch.name, tuple(sorted(signature.items(), key=str)), tuple(sorted(constexprs.items(), key=str)),
               tuple(id(c) for c in configs))
        if key in self._memo:  # the memo holds the configs too, so their ids stay theirs
            return self._memo[key][1]
        with contextlib.ExitStack() as stack:
            shared = {}
            if self.context is not None:
                shared = {"pool": stack.enter_context(self.context.pool()),
                          "probe_results": self.context.probe_results}
                shared["pool"].start(PROBE_WORKERS)  # they start while the rules load and the configs are judged
            judge = stack.enter_context(KernelJudge(kernel, arch, signature, constexprs, heuristic_args=args,
                                                    compile=self.compile, **shared))
            judged = [judge.prepare(c) for c in configs]
            judge.check(judged)
            result = build_result(arch.name, configs, judge.judge(judged), judge.added_names, judge.notes)
        kept = self._decide(result)
        self._memo[key] = (configs, kept)
        return kept

    def _decide(self, result: Any) -> list:
        """The configs to benchmark: kept and repaired ones, else the least bad one (with a warning)."""
        for rejection in result.rejected:
            fate = f"repaired to {rejection.repair}" if self.repair and rejection.repair is not None else "dropped"
            log.info("kernelrules: %s %s (%s)", rejection.config, fate, ", ".join(rejection.codes))
        kept = result.candidates(repair=self.repair)
        if kept:
            return kept
        least_bad = min(result.rejected, key=lambda r: len(r.reasons))
        warnings.warn("kernelrules: every config is rejected; keeping the least bad one so autotuning can go on",
                      stacklevel=4)
        return [least_bad.config]


def early_prune(kernel: Any, arch: str | None = None, compile: bool = False, repair: bool = True, *,
                context: AutotuneContext | None = None) -> Callable:
    """A pruner for ``triton.autotune(prune_configs_by={"early_config_prune": ...})`` bound to ``kernel``.

    ``context`` shares a compile pool and the probe compiles with a perf model and a
    precompile made with the same one; without it each call uses a pool of its own.
    """
    return EarlyPrune(kernel, arch=arch, compile=compile, repair=repair, context=context)


def compose(first: Callable, second: Callable) -> Callable:
    """An ``early_config_prune`` running ``first`` (the user's) and then ``second`` on what it kept."""

    def early_config_prune(configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list:
        return second(first(configs, named_args, **kwargs), named_args, **kwargs)

    return early_config_prune


def analytic_perf_model(kernel: Any, arch: str | None, context: AutotuneContext | None = None) -> Callable:
    """kernelrules' own performance model for ``prune_configs_by["perf_model"]`` (imported on use)."""
    import importlib
    import inspect

    try:
        module = importlib.import_module("kernelrules.perf_model")
    except ModuleNotFoundError as exc:
        if exc.name != "kernelrules.perf_model":
            raise
        module = None
    if not hasattr(module, "triton_perf_model"):
        raise KernelrulesError("perf_model=True needs kernelrules.perf_model.triton_perf_model, which this "
                               "installation does not have", hint="pass a callable of your own as perf_model")
    shared = {"context": context} if "context" in inspect.signature(module.triton_perf_model).parameters else {}
    return module.triton_perf_model(kernel, arch=arch, **shared)


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
    (``kernelrules.perf_model``), a callable is passed to Triton as is; ``top_k`` (how
    many to benchmark) goes to Triton too. With ``precompile=True`` the configs left to
    time are compiled in parallel into Triton's cache first (``kernelrules.precompile``),
    so the autotuner's own serial compiles are cache hits. Any other keyword goes to
    ``triton.autotune``.

    The three phases share one compile pool and the resource model's probe compiles
    (``tuner.kernelrules_context``, an :class:`~kernelrules.autotune_context.AutotuneContext`):
    its workers start on first use and stop after 60 s unused (``idle_timeout``), at
    interpreter exit, or at ``tuner.kernelrules_context.close()``.

    ``pinned`` (a table file, docs/pinned.md) launches the table's config for a listed
    architecture and key with no benchmark; ``on_missing`` says what an unlisted key gets:
    ``"tune"`` (benchmark as usual), ``"static"`` (the static pick: the perf model's best
    config that the rules pass, no timing) or ``"error"``. ``$KERNELRULES_NO_BENCHMARK=1``
    and CUDA-graph capture turn ``"tune"`` into ``"static"``, with or without a table
    (:mod:`kernelrules.pinned_launch`).
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
            tuner.perf_model = analytic_perf_model(tuner, arch, context)
        if precompile:
            from .precompile import precompile_before_timing

            precompile_before_timing(tuner, context=context)
        from .pinned_launch import make_pinned

        make_pinned(tuner, pinned, on_missing, arch, context, key)
        return tuner

    return decorator
