"""The analytic performance model inside Triton's autotuner: ``triton_perf_model`` for
``prune_configs_by["perf_model"]``.

    @triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
                     prune_configs_by={"perf_model": triton_perf_model(lambda: matmul_kernel), "top_k": 4})

Triton calls the model with the launch's arguments and one config's values; this adapter
reads the launch signature and the problem from them, learns the kernel's resource model
once per architecture and signature class (a few probe compiles through the judging core)
and asks the pure models (:mod:`kernelrules.predict.perf_model` for matmul-like kernels,
:mod:`kernelrules.predict.perf_general` for the rest) for the estimated seconds.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Mapping, Sequence

from ..config import KernelConfig
from .kernel_prune import jit_function, kernel_object, launch_signature, resolve_arch
from ..predict.perf_model import problem_sizes

#: What the callable returns when it cannot estimate: the same number for every config,
#: so Triton's stable sort keeps their order (and a config it cannot judge is timed).
NEUTRAL_ESTIMATE = 0.0
#: The factor on the estimate of a ``num_stages`` twin of a config estimated earlier with the same
#: time: Triton sorts by the values, so the twin comes after every distinct config (the order every
#: kernelrules ranking gives ties, :mod:`kernelrules.predict.ranking`) and before any config that
#: cannot launch (1000x, :data:`kernelrules.predict.perf_general.UNLAUNCHABLE_FACTOR`).
TWIN_FACTOR = 100.0

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class TritonPerfModel:
    """The callable for ``prune_configs_by["perf_model"]``; see :func:`triton_perf_model`."""

    def __init__(self, kernel: Any, arch: str | None = None, sku: str | None = None, problem: Any = None,
                 context: Any = None) -> None:
        self.kernel, self.arch, self.sku, self.problem, self.context = kernel, arch, sku, problem, context
        self._models: dict[Any, Any] = {}  # (arch, signature class) -> ResourceModel or None
        self._memo: dict[Any, float] = {}
        self._first_twin: dict[Any, tuple] = {}  # (memo scope, config without num_stages) -> (config key, estimate)
        self._warned = False

    def __call__(self, **kwargs: Any) -> float:
        try:
            return self._estimate(kwargs)
        except Exception as exc:  # never break the user's autotuning
            if not self._warned:
                self._warned = True
                warnings.warn(f"kernelrules: perf_model cannot estimate ({type(exc).__name__}: {exc}); configs it "
                              f"cannot judge get {NEUTRAL_ESTIMATE} and keep their order", stacklevel=2)
            return NEUTRAL_ESTIMATE

    def _estimate(self, kwargs: Mapping[str, Any]) -> float:
        fn, tuner_configs = _unwrap(self.kernel)
        arch = resolve_arch(self.arch)
        signature, constexprs = launch_signature(fn, kwargs)
        config = KernelConfig.from_dict({**constexprs, **{o: kwargs[o] for o in _LAUNCH_OPTIONS
                                                         if kwargs.get(o) is not None}})
        from ..predict.perf_general import estimate_any  # numpy: imported at the first estimate, not with the decorator

        problem = self._problem(kwargs, signature)
        if problem.get("grid") is None:
            problem_sizes(problem)  # before any probe compile; with a grid the general model takes any kernel
        shape_class = _shape_class(signature)
        memo_key = self._memo_key(arch, shape_class, problem, config)
        if memo_key not in self._memo:
            facts = self._compiled_facts(arch, kwargs, tuner_configs)
            if facts is not None:  # compiled by a compile-first early prune: exact facts, no probes
                self._memo[memo_key] = estimate_any(config, arch, problem, facts=facts, sku=self.sku)
            else:
                model = self._model(fn, arch, signature, shape_class, config, tuner_configs, constexprs)
                self._memo[memo_key] = estimate_any(config, arch, problem, model=model, sku=self.sku)
        return self._after_twins(memo_key[:3], config, self._memo[memo_key])

    def _after_twins(self, scope: tuple, config: KernelConfig, estimate: float) -> float:
        """``estimate``, or :data:`TWIN_FACTOR` times it for a ``num_stages`` twin of a config estimated
        earlier (in this launch's scope) with the same time. The first of the twins asked for keeps its
        value (Triton asks in the order of its config list), so the answer never changes for a config."""
        from ..predict.ranking import is_tie, twin_key

        first_key, first_estimate = self._first_twin.setdefault((scope, twin_key(config)), (config.key(), estimate))
        if first_key != config.key() and is_tie(first_estimate, estimate):
            return estimate * TWIN_FACTOR
        return estimate

    def ranks_from_values(self, kwargs: Mapping[str, Any], configs: Sequence[Any]) -> bool:
        """Whether this launch's ``configs`` (Triton ``Config`` objects) can be ranked from their values
        alone, before any compile: the matmul model's problem (integer sizes M, N and K) and an estimate
        of every config from its values. The general model needs compiled facts."""
        from ..predict.perf_general import estimate_any, matmul_judges

        try:
            fn, _ = _unwrap(self.kernel)
            signature, constexprs = launch_signature(fn, kwargs)
            problem = self._problem(kwargs, signature)
            if not matmul_judges(None, problem):
                return False
            arch, shape_class = resolve_arch(self.arch), _shape_class(signature)
            estimates = {}
            for candidate in configs:
                config = KernelConfig.from_triton(candidate).replace(constexprs)
                estimates[self._memo_key(arch, shape_class, problem, config)] = estimate_any(
                    config, arch, problem, facts={}, sku=self.sku)
        except Exception:  # noqa: BLE001 - cannot tell: compile first as before
            return False
        self._memo.update(estimates)  # the estimates Triton's perf_model calls ask for next (the same facts: none)
        return True

    def _problem(self, kwargs: Mapping[str, Any], signature: Mapping[str, Any]) -> dict:
        """The problem the estimates are for: the user's ``problem(args)``, else read from the arguments."""
        return dict(self.problem(kwargs)) if callable(self.problem) else _problem_from_args(kwargs, signature)

    @staticmethod
    def _memo_key(arch: Any, shape_class: tuple, problem: Mapping[str, Any], config: KernelConfig) -> tuple:
        return (arch.label, shape_class, repr(sorted(problem.items())), config.key())

    def _compiled_facts(self, arch: Any, kwargs: Mapping[str, Any], tuner_configs: list) -> dict | None:
        """The compiled facts the tuner's context holds for the config in ``kwargs``, if its list
        was compiled first; ``{}`` (estimate from the config's names) for a config of such a list
        that was not compiled (a repair), and for every config of a list ranked before compiling;
        None otherwise (learn the resource model)."""
        if self.context is not None and arch.name in self.context.ranked_first:
            return {}
        if self.context is None or not self.context.compiled_facts:
            return None
        from .autotune_context import config_key

        for candidate in tuner_configs:
            values = candidate.all_kwargs()
            if all(kwargs.get(k) == v for k, v in values.items() if v is not None):
                found = self.context.compiled_facts.get((arch.name, config_key(candidate)))
                if found is not None:
                    return found
        return {} if any(name == arch.name for name, _ in self.context.compiled_facts) else None

    def _model(self, fn: Any, arch: Any, signature: Mapping[str, Any], shape_class: tuple, config: KernelConfig,
               tuner_configs: list, constexprs: Mapping[str, Any]) -> Any:
        """The kernel's resource model for this architecture and signature, learned once
        (2-3 probe compiles on the CPU); None if it cannot be learned. With a context, in
        the tuner's shared pool, and the probes the early prune compiled are not compiled again."""
        key = (arch.name, shape_class)
        if key not in self._models:
            from ..judge.pipeline import ConfigJudge  # the judging core: imported at the first probe
            from ..compile.target import KernelTarget

            target = KernelTarget.for_jit_function(fn, signature)
            tuned = {k for c in tuner_configs for k in getattr(c, "kwargs", {})}
            fixed = {k: v for k, v in constexprs.items() if k not in tuned}  # set by the launch, not the configs
            candidates = [config] + [KernelConfig.from_triton(c).replace(fixed) for c in tuner_configs]
            if self.context is None:
                pruner = ConfigJudge(target, jobs=2)
                try:
                    self._models[key] = pruner.learn_model(candidates, arch)
                finally:
                    pruner.close()
            else:
                with self.context.pool() as pool:
                    pruner = ConfigJudge(target, pool=pool, probe_results=self.context.probe_results)
                    self._models[key] = pruner.learn_model(candidates, arch)
        return self._models[key]


def _shape_class(signature: Mapping[str, Any]) -> tuple:
    """The launch's signature as Triton specialises it: one resource model and memo per class."""
    return tuple(sorted((k, _specialisation(v)) for k, v in signature.items()))


def triton_perf_model(kernel: Any, arch: str | None = None, *, sku: str | None = None, problem: Any = None,
                      context: Any = None) -> Callable:
    """A ``perf_model`` for ``triton.autotune(prune_configs_by={"perf_model": ..., "top_k": k})``.

    Triton calls it as ``perf_model(**named_args, **kwargs, **config.all_kwargs())`` and
    times the ``k`` configs with the lowest result (estimated seconds). ``kernel`` is the
    JITFunction, an Autotuner/Heuristics wrapper or a zero-argument callable returning one
    (``lambda: matmul_kernel``). The architecture is ``arch``, else ``$KERNELRULES_ARCH``,
    else the current GPU; ``sku`` picks the GPU's figures (default: the first SKU of the
    architecture, or the one ``arch`` names, e.g. ``"h200"``). The problem is read from
    integer arguments named M, N, K and the dtype of the first pointer argument, unless
    ``problem(args) -> {"M", "N", "K", "dtype"}`` is given. Estimates come from
    :func:`kernelrules.predict.perf_general.estimate_any`: the matmul model for M, N, K, else, for
    any other kernel, the general model, when ``problem`` returns a ``grid`` (expressions
    over its sizes and the config's constexprs, as a tune space's ``problem.grid``) and
    ``bytes``. The resource model is learned
    once per architecture and signature class, estimates are cached, and any failure
    warns once and returns :data:`NEUTRAL_ESTIMATE`. ``context``, an
    :class:`~kernelrules.adapters.autotune_context.AutotuneContext` (``kernelrules.autotune``
    passes its tuner's), shares the compile pool and the probe compiles with the early
    prune; without it the model starts a pool of its own for its probes.
    """
    return TritonPerfModel(kernel, arch=arch, sku=sku, problem=problem, context=context)


def _unwrap(kernel: Any) -> tuple[Any, list]:
    """(the jit function, the configs of the autotuner around it) for a kernel, a wrapper or
    a zero-argument callable returning one."""
    obj, configs = kernel_object(kernel), []
    while hasattr(obj, "fn") and not inspect.isfunction(obj.fn) and not configs:
        configs = list(getattr(obj, "configs", None) or [])
        obj = obj.fn
    return jit_function(kernel), configs


def _problem_from_args(args: Mapping[str, Any], signature: Mapping[str, Any]) -> dict[str, Any]:
    """M, N, K from integer arguments of those names (any case) and the first pointer's dtype."""
    by_lower = {k.lower(): v for k, v in args.items()}
    problem = {}
    for axis in ("M", "N", "K"):
        value = args.get(axis, by_lower.get(axis.lower()))
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"no integer argument named {axis}; pass problem=lambda args: {{'M': ..., 'N': ..., "
                             f"'K': ..., 'dtype': ...}}")
        problem[axis] = value
    pointers = [v[1:] for v in signature.values() if isinstance(v, str) and v.startswith("*")]
    if pointers:
        problem["dtype"] = pointers[0]
    return problem


def _specialisation(value: Any) -> Any:
    """What a launch specialises on: an integer's divisibility by 16 (or being 1), else the value."""
    if isinstance(value, int) and not isinstance(value, bool):
        return 1 if value == 1 else ("i16" if value % 16 == 0 else "i")
    return value
