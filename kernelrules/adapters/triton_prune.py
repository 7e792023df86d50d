"""The early prune: kernelrules' judgement in ``triton.autotune(prune_configs_by={"early_config_prune": ...})``.

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

``early_prune(..., context=...)`` shares a compile pool and the resource model's probe
compiles with a perf model and a precompile made with the same
:class:`~kernelrules.adapters.autotune_context.AutotuneContext`; without one, each call starts
and stops its own pool. :func:`kernelrules.autotune` (:mod:`kernelrules.adapters.triton_autotune`) wires it
into ``triton.autotune``.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Mapping, Sequence

from .autotune_context import AutotuneContext
from .kernel_prune import KernelJudge, jit_function, kernel_object, launch_signature, log, resolve_arch

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
        timed = self._ranked_first(configs, arch, args)
        first = None if timed else self._compile_first_cache(len(configs), arch)
        if self.context is not None:  # the perf model ranks this architecture's list from the configs' values
            (self.context.ranked_first.add if timed else self.context.ranked_first.discard)(arch.name)
        with contextlib.ExitStack() as stack:
            shared = {}
            if self.context is not None:
                shared = {"pool": stack.enter_context(self.context.pool()),
                          "probe_results": self.context.probe_results}
                # start while the rules load: the probes', the list's or (ranking first) the precompile's workers
                shared["pool"].start(timed or (len(configs) if first else PROBE_WORKERS))
            judge = stack.enter_context(KernelJudge(kernel, arch, signature, constexprs, heuristic_args=args,
                                                    compile=self.compile or first is not None,
                                                    triton_cache_dir=first, **shared))
            judged = [judge.prepare(c) for c in configs]
            judge.check(judged)
            later = (first is not None or timed is not None) and self.context.checks_repairs_ahead
            records = judge.judge(judged, probe=first is None and timed is None, verify_repairs=not later)
            if first is not None:
                self._remember(judge, arch, configs, judged, records)
            elif timed is not None:
                self._defer_checks(judge, arch, judged, records)
            result = build_result(arch.name, configs, records, judge.added_names, judge.notes)
        kept = self._decide(result)
        self._memo[key] = (configs, kept)
        return kept

    def _ranked_first(self, configs: list, arch: Any, args: Mapping[str, Any]) -> int | None:
        """How many configs the tuner will time when this list is ranked before anything compiles
        (:mod:`~kernelrules.adapters.autotune_context`), else None: ``perf_model=True`` with a ``top_k``
        below the list's length, a perf model that ranks this launch from the configs' values, a precompile
        to check the configs left, and the judged architecture the one that launches."""
        from .precompile import interpreting, launching_arch

        context = self.context
        if context is None or self.compile or not context.checks_repairs_ahead or interpreting():
            return None
        timed = context.configs_to_time(len(configs))
        if timed is None or context.ranks_from_values is None:
            return None
        target = launching_arch()
        if target is None or target.name != arch.name or not context.ranks_from_values(args, configs):
            return None
        return timed

    def _defer_checks(self, judge: Any, arch: Any, judged: list, records: list) -> None:
        """Ranking first: leave the compile and the compiled check of every kept config and repair to the
        precompile, which compiles only those left to time."""
        for prepared, record in zip(judged, records):
            config = record.verdict.repair if record.verdict.rejected else prepared
            if config is not None:
                self.context.defer_check(judge.target.job(config, arch, judge.timeout))

    def _compile_first_cache(self, count: int, arch: Any) -> str | None:
        """Triton's cache directory when this list is compiled first (see
        :mod:`~kernelrules.adapters.autotune_context`), else None: a tuner's context, a list no
        longer than its workers, and the judged architecture the one that launches."""
        from .precompile import interpreting, launching_arch, triton_cache_dir

        if self.context is None or not self.context.compiles_all_at_once(count) or interpreting():
            return None
        target = launching_arch()
        if target is None or target.name != arch.name:
            return None
        return triton_cache_dir()

    def _remember(self, judge: Any, arch: Any, configs: list, judged: list, records: list) -> None:
        """Keep the compiled facts of every config compiled into Triton's cache, for the perf model and the precompile."""
        from .autotune_context import config_key

        for original, prepared, record in zip(configs, judged, records):
            facts = record.facts or {}
            if facts.get("origin") == "compiled" and facts.get("compile_status") == "ok":
                self.context.remember_compiled(judge.target.job(prepared, arch, judge.timeout), arch.name,
                                               config_key(original), dict(facts))
            if record.verdict.repair is None:
                continue
            repair_job = judge.target.job(record.verdict.repair, arch, judge.timeout)
            if self.context.checks_repairs_ahead:  # not compiled yet: the precompile compiles and checks it
                self.context.defer_check(repair_job)
            else:  # kept only if its compile in the repairs stage passed
                self.context.remember_compiled(repair_job)

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
