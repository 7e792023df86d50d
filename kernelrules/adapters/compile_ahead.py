"""Compile the configs a Triton autotuner will time while it times them.

:func:`~kernelrules.adapters.precompile.precompile_before_timing` hands each new list of
configs to time (after ``early_config_prune``, ``perf_model`` and ``top_k``) to a
:class:`CompileAhead`: a background thread compiles, in the compile pool, every config
that is not in Triton's cache yet, straight into that cache, and the autotuner's
benchmark of one config waits for that config's compile only. The configs already
compiled (by a compile-first early prune) are handed back first, so the GPU times them
while the others compile: a config's compile never holds up the benchmark of another.

A config an early prune kept unchecked (a compile-first prune's repair, or any config of a list
ranked before compiling;
:meth:`~kernelrules.adapters.autotune_context.AutotuneContext.defer_check`) is
checked here on its compiled facts; if the rules reject it, its benchmark is skipped
and it gets the time Triton gives a config that cannot launch (infinite), so it is never
chosen. A compile of any other config that fails or runs past the limit is left to
Triton, which reports it as it always does: compiling ahead never changes what a timed
config measures.

Configs that differ only in ``num_stages`` on a kernel whose TTIR has no loop compile to
one binary (:mod:`kernelrules.compile.stage_twins`, rule PIP002). Once one of them is timed
and a compile here showed the loop-free TTIR, the others get its timing without a benchmark
(:meth:`CompileAhead.timed_twin`): the same kernel would be timed again, and only noise
could tell them apart.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any, Iterator, Mapping, Sequence

from ..compile.stage_twins import heuristics_read_num_stages, loop_free, takes_num_stages
from ..predict.ranking import twin_key
from .kernel_prune import KernelJudge, jit_function, kernel_object, launch_signature, log, resolve_arch

#: What Triton's ``Autotuner._bench`` returns for a config that cannot launch.
CANNOT_LAUNCH = [float("inf"), float("inf"), float("inf")]


class CompileAhead:
    """One tuner's compiles ahead of its benchmarks (see the module docstring).

    ``context`` (the tuner's :class:`~kernelrules.adapters.autotune_context.AutotuneContext`)
    lends its pool; without one, each list gets a pool of up to ``jobs`` workers, stopped
    when its compiles are done. ``timeout`` is each compile's limit in seconds.
    """

    def __init__(self, *, context: Any = None, jobs: int | None = None, timeout: float = 30.0) -> None:
        self.context, self.jobs, self.timeout = context, jobs, timeout
        self._done: dict[int, threading.Event] = {}  # id(config) -> set once its compile is over
        self._rejected: set[int] = set()
        self._configs: list = []  # the list handed back, so the ids above stay theirs
        self._twin_key: dict[int, tuple] = {}  # id(config) -> the config without num_stages
        self._loop_free: set[tuple] = set()  # twin keys whose compile here showed a TTIR without a loop
        self._timed: dict[tuple, Any] = {}  # twin key -> the benchmark of its first timed config
        self._thread: threading.Thread | None = None
        #: Configs of the last list in Triton's cache: compiled before, or by these compiles so far.
        self.compiled = 0

    def start(self, kernel: Any, configs: Sequence[Any], args: Mapping[str, Any], arch: Any, cache_dir: str, *,
              background: bool = True) -> list:
        """Start compiling those of ``configs`` not compiled yet into ``cache_dir`` for the launch
        ``args`` on ``arch``; return ``configs`` with the ones compiled already first.
        ``background=False`` compiles them before returning, and an error of the pool is raised."""
        self.join()
        kernel = kernel_object(kernel)
        target_arch = resolve_arch(arch)
        signature, constexprs = launch_signature(jit_function(kernel), args)
        judge = KernelJudge(kernel, target_arch, signature, constexprs, heuristic_args=args, pool=_NO_POOL)
        prepared = [judge.prepare(c) for c in configs]
        binds = (takes_num_stages(getattr(jit_function(kernel), "params", None) or [])  # then no stage twins
                 or heuristics_read_num_stages(kernel))
        self._twin_key = {} if binds else {id(c): twin_key(p) for c, p in zip(configs, prepared)}
        self._loop_free, self._timed = set(), {}
        jobs = [judge.target.job(p, target_arch, self.timeout) for p in prepared]
        compiled = [self.context is not None and self.context.was_compiled(job) for job in jobs]
        waiting = [i for i, done in enumerate(compiled) if not done]
        self._configs = [configs[i] for i, done in enumerate(compiled) if done] + [configs[i] for i in waiting]
        self._done = {id(configs[i]): threading.Event() for i in waiting}
        self._rejected = set()
        self.compiled = len(configs) - len(waiting)
        work = [(configs[i], prepared[i], jobs[i]) for i in waiting]
        if work and not background:
            self._compile(judge, work, cache_dir, strict=True)
        elif work:
            self._thread = threading.Thread(target=self._compile, args=(judge, work, cache_dir),
                                            name="kernelrules-compile-ahead", daemon=True)
            self._thread.start()
        return list(self._configs)

    def ready(self, config: Any) -> bool:
        """Wait for ``config``'s compile (if it has one under way); False if the rules reject it."""
        event = self._done.get(id(config))
        if event is not None and not event.wait(4 * self.timeout + 60):
            log.info("kernelrules: the compile ahead of %s is late; left to Triton", config)
        return id(config) not in self._rejected

    def timed_twin(self, config: Any) -> Any:
        """The benchmark of a config timed before ``config`` that differs from it only in ``num_stages``,
        when a compile here showed their kernel has no loop (one binary); None otherwise."""
        key = self._twin_key.get(id(config))
        if key is None or key not in self._loop_free or key not in self._timed:
            return None
        log.info("kernelrules: %s differs only in num_stages from a config timed already, on a kernel with no "
                 "loop (the same binary); its timing is reused", config)
        return list(self._timed[key])

    def record_timing(self, config: Any, timing: Any) -> None:
        """Remember ``config``'s benchmark for its ``num_stages`` twins (the first one timed)."""
        key = self._twin_key.get(id(config))
        if key is not None:
            self._timed.setdefault(key, timing)

    def join(self) -> None:
        """Wait for every compile under way."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _compile(self, judge: KernelJudge, work: list, cache_dir: str, strict: bool = False) -> None:
        """Compile each waiting config, check the unchecked repairs, and signal each one (the thread's
        work; ``strict`` raises what goes wrong instead of warning)."""
        by_job: dict[int, list[tuple[Any, Any]]] = {}
        for config, prepared, job in work:
            by_job.setdefault(id(job), []).append((config, prepared))
        try:
            with self._pool(len(work)) as pool:
                for job, result in pool.run([job for _, _, job in work], cache=None, triton_cache_dir=cache_dir):
                    unchecked = self.context is not None and self.context.check_deferred(job)
                    self.compiled += result.ok * len(by_job.get(id(job), ()))
                    for config, prepared in by_job.get(id(job), ()):
                        if loop_free(result) and id(config) in self._twin_key:
                            self._loop_free.add(self._twin_key[id(config)])
                        if unchecked and not judge.passes_compiled(prepared, result):
                            self._rejected.add(id(config))
                            log.info("kernelrules: %s rejected on its compiled facts; not timed", config)
                        elif not result.ok:
                            log.info("kernelrules: precompile of %s: %s (left to Triton)", job.describe(),
                                     result.error_kind)
                        self._done[id(config)].set()
        except Exception as exc:  # never break the user's autotuning: Triton compiles what is left
            if strict:
                raise
            warnings.warn(f"kernelrules: compiling ahead stopped ({type(exc).__name__}: {exc})", stacklevel=1)
        finally:
            for event in self._done.values():
                event.set()

    @contextlib.contextmanager
    def _pool(self, count: int) -> Iterator[Any]:
        """The context's pool (held under its lock while the thread compiles), else a pool of its own."""
        if self.context is not None:
            with self.context.pool() as pool:
                yield pool
            return
        import os

        from ..compile.pool import CompilePool

        workers = min(count, self.jobs or os.cpu_count() or 1)
        with CompilePool(max_workers=workers, timeout=self.timeout, cache=None) as pool:
            yield pool


class _NoPool:
    """Stands for a compile pool in a :class:`KernelJudge` that only prepares and checks configs."""

    def close(self) -> None:  # pragma: no cover - a judge never closes a pool it was lent
        pass


_NO_POOL = _NoPool()
