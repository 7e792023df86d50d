"""What the phases of one ``kernelrules.autotune`` tuner share: one compile pool and the probe compiles.

For every new tuning key, a tuner made with ``kernelrules.autotune(perf_model=True)`` runs
three phases before Triton times anything: the early prune (rules and the resource model,
learned from two or three probe compiles), the perf model (which learns the resource model
for its own estimates) and the precompile of the configs left to time. Each used to start
a compile pool of its own, and so its own worker processes, and the early prune and the
perf model each compiled the same probes. One :class:`AutotuneContext` per tuner, handed
to all three, keeps:

- **one compile pool**, made on first use; its workers start on demand (never more than
  there are jobs waiting: two or three for the probes, one per config to precompile, up
  to ``jobs`` or the CPU count) and stay for the next phase and the next tuning key, until
  they have been idle for ``idle_timeout`` seconds (60 by default: a training run that
  tuned at start-up does not keep a dozen idle processes that import Triton),
  :meth:`close` or interpreter exit; a tuning key met later starts a new pool. Each job
  says which Triton cache it compiles with, so the probes (a private, cold cache) and the
  precompiles (Triton's own cache) share the workers;
- **the probe compiles**, by compile job: the resource model the perf model learns is fitted
  from the very compile results the early prune's was, when both phases choose the same
  probes (the cheapest configs of the list: the usual case), so the second fit costs no
  compile. A phase that chooses other probes compiles them, so each phase's model, and
  every verdict and estimate, is exactly what it was when each phase learned alone.

- **rank first with ``perf_model=True, top_k=k``**: when the perf model can rank the
  launch's configs from their values alone (a matmul-like problem: integer sizes M, N and
  K), the early prune judges at the config stage and compiles nothing (no probes, no
  compile-first), the perf model ranks on the configs' values, and only the ``k`` configs
  left to time are compiled, by the precompile, which checks each on its compiled facts
  (:meth:`defer_check`) while the GPU times the others. A short list's compile round (worker
  start-up and the slowest of every config's cold compile) is the largest part of the fixed
  cost when only ``k`` of its configs are timed.

- **compile-first on a short list**: when the machine can compile every config of the
  list at once (no more configs than the pool's workers: ``jobs``, else the CPU count)
  for the GPU that launches, the early prune skips the probes and the resource model: it
  compiles every config the rules pass straight into Triton's cache, in parallel, and
  judges each on its compiled facts. One round of parallel compiles costs less than the
  probes' two rounds followed by the precompile's, and the facts are exact. The context
  keeps those facts (:meth:`remember_compiled`) so the perf model ranks on them and the
  precompile does not compile the same configs again. A rejected config's repair is
  not compiled there when the tuner precompiles: it is kept unchecked
  (:meth:`defer_check`), and the precompile compiles it only if it is left to
  time (``top_k`` may leave it out), while the GPU times the others, and checks it then.

The standalone APIs (``early_prune``, ``triton_perf_model``, ``precompile``) take a
``context`` (or a ``pool``) too; without one each keeps its own pool for the call, as
before.

Threads and processes: the phases use the pool under the context's lock, one at a time.
A pool belongs to the process that made it: in a child made with ``fork`` (a data-loader
worker, ``multiprocessing`` with the fork start method) the context lets go of the
parent's workers without stopping them and starts its own pool on first use, and the
child's exit never stops the parent's workers.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from typing import Any, Iterator

import dataclasses
import json
import os

from ..compile.compilejob import CompileJob, CompileResult

#: Probe results kept per context (two or three per architecture and launch signature).
MAX_PROBE_RESULTS = 64

#: Seconds a context's compile workers may stay idle before they are stopped.
IDLE_TIMEOUT = 60.0


def config_key(config: Any) -> str:
    """A Triton ``Config``'s values (its kwargs and launch options) as one canonical string."""
    values = config.all_kwargs() if hasattr(config, "all_kwargs") else dict(config)
    return json.dumps({k: v for k, v in values.items() if v is not None}, sort_keys=True, default=repr)


class ProbeResults(OrderedDict):
    """Probe compile results by :class:`CompileJob`, the oldest dropped past :data:`MAX_PROBE_RESULTS`."""

    def __setitem__(self, job: CompileJob, result: CompileResult) -> None:
        super().__setitem__(job, result)
        while len(self) > MAX_PROBE_RESULTS:
            self.popitem(last=False)


class AutotuneContext:
    """One compile pool and the probe compiles, shared by the phases of one tuner (see the module docstring).

    ``jobs`` caps the workers (default: the CPU count); ``timeout`` is the pool's default
    compile time limit in seconds (jobs carry their own); ``idle_timeout`` stops the pool's
    workers after that many seconds unused (``None``: keep them until :meth:`close`).
    """

    def __init__(self, *, jobs: int | None = None, timeout: float = 30.0,
                 idle_timeout: float | None = IDLE_TIMEOUT) -> None:
        self.jobs, self.timeout, self.idle_timeout = jobs, timeout, idle_timeout
        self.probe_results: ProbeResults = ProbeResults()
        #: (architecture, config key) -> compiled facts of configs compiled into Triton's cache (compile-first).
        self.compiled_facts: dict[tuple[str, str], dict[str, Any]] = {}
        #: Compile jobs (without their time limit) already compiled into Triton's cache.
        self.compiled_jobs: set[CompileJob] = set()
        #: Whether the tuner compiles the configs it will time ahead of their benchmark and
        #: checks the configs in :attr:`unchecked` then (its precompile does).
        self.checks_repairs_ahead = False
        #: Compile jobs (without their time limit) of configs an early prune kept without compiling
        #: them (a compile-first prune's repairs; every config when ranking first): the precompile
        #: compiles each one that is left to time, checks it on its compiled facts, and the
        #: benchmark skips it if the rules reject it.
        self.unchecked: set[CompileJob] = set()
        #: ``top_k`` of a tuner whose perf model may rank the configs before any compile
        #: (``kernelrules.autotune(perf_model=True, top_k=k)``); None: never rank first.
        self.rank_first_top_k: int | float | None = None
        #: The perf model's answer to "can you rank this launch's configs from their values alone?"
        self.ranks_from_values: Any = None
        #: Architectures whose last list was ranked first: the perf model estimates from the configs' values.
        self.ranked_first: set[str] = set()
        self.pools_made = 0
        self._pool: Any = None
        self._lock = threading.RLock()
        self._idle_timer: threading.Timer | None = None
        self._uses = 0  # bumped by every use: an idle timer started before the last use does nothing

    @contextlib.contextmanager
    def pool(self) -> Iterator[Any]:
        """The context's :class:`~kernelrules.compile.pool.CompilePool`, held under the context's lock."""
        from ..compile.pool import CompilePool

        with self._lock:
            self._uses += 1
            self._cancel_idle_timer()
            if self._pool is not None and not self._pool.owned():  # a forked child: the workers are the parent's
                self._pool.close()
                self._pool = None
            if self._pool is None:
                self._pool = CompilePool(max_workers=self.jobs, timeout=self.timeout, cache=None)
                self.pools_made += 1
            try:
                yield self._pool
            finally:
                self._start_idle_timer()

    def _start_idle_timer(self) -> None:
        if self.idle_timeout is None or self._pool is None:
            return
        timer = threading.Timer(self.idle_timeout, self._close_if_idle, args=(self._uses,))
        timer.daemon = True  # never keeps the interpreter alive
        self._idle_timer = timer
        timer.start()

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _close_if_idle(self, uses: int) -> None:
        """The idle timer's end: stop the workers unless the pool was used since the timer started."""
        with self._lock:
            if uses == self._uses and self._pool is not None and self._pool.owned():
                self._pool.close()
                self._pool = None
                self._idle_timer = None

    @property
    def max_workers(self) -> int:
        """The most compile workers the context's pool may run at once."""
        return max(1, self.jobs or os.cpu_count() or 1)

    def compiles_all_at_once(self, count: int) -> bool:
        """Whether ``count`` configs fit in one round of parallel compiles (compile-first)."""
        return 0 < count <= self.max_workers

    def remember_compiled(self, job: CompileJob, arch: str | None = None, key: str | None = None,
                          facts: dict[str, Any] | None = None) -> None:
        """Keep a job compiled into Triton's cache, and the compiled facts of its config when known."""
        if arch is not None and key is not None and facts is not None:
            self.compiled_facts[(arch, key)] = facts
        self.compiled_jobs.add(dataclasses.replace(job, timeout=None))

    def defer_check(self, job: CompileJob) -> None:
        """Leave the check of a kept config's compile to the precompile (see :attr:`unchecked`)."""
        self.unchecked.add(dataclasses.replace(job, timeout=None))

    def check_deferred(self, job: CompileJob) -> bool:
        """Whether ``job`` is a config kept without its compile checked."""
        return dataclasses.replace(job, timeout=None) in self.unchecked

    def configs_to_time(self, count: int) -> int | None:
        """How many of ``count`` configs a ranking-first tuner times (Triton's ``top_k``: a count, or a
        fraction of the list), when that is fewer than all of them; None otherwise."""
        k = self.rank_first_top_k
        if k is None or isinstance(k, bool):
            return None
        k = int(count * k) if isinstance(k, float) and k <= 1.0 else int(k)
        return max(k, 1) if k < count else None

    def was_compiled(self, job: CompileJob) -> bool:
        """Whether ``job`` (whatever its time limit) was compiled into Triton's cache already."""
        return dataclasses.replace(job, timeout=None) in self.compiled_jobs

    @property
    def workers(self) -> int:
        """How many compile workers the context's pool has running now."""
        pool = self._pool
        return 0 if pool is None or not pool.owned() else len(pool._workers)

    def close(self) -> None:
        """Stop the workers now (the next phase that needs one starts a new pool)."""
        with self._lock:
            self._cancel_idle_timer()
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __enter__(self) -> "AutotuneContext":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
