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
  :meth:`close` or interpreter exit. Each job says which Triton cache it compiles with, so
  the probes (a private, cold cache) and the precompiles (Triton's own cache) share the
  workers;
- **the probe compiles**, by compile job: the resource model the perf model learns is fitted
  from the very compile results the early prune's was, when both phases choose the same
  probes (the cheapest configs of the list: the usual case), so the second fit costs no
  compile. A phase that chooses other probes compiles them, so each phase's model, and
  every verdict and estimate, is exactly what it was when each phase learned alone.

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

from .compilejob import CompileJob, CompileResult

#: Probe results kept per context (two or three per architecture and launch signature).
MAX_PROBE_RESULTS = 64


class ProbeResults(OrderedDict):
    """Probe compile results by :class:`CompileJob`, the oldest dropped past :data:`MAX_PROBE_RESULTS`."""

    def __setitem__(self, job: CompileJob, result: CompileResult) -> None:
        super().__setitem__(job, result)
        while len(self) > MAX_PROBE_RESULTS:
            self.popitem(last=False)


class AutotuneContext:
    """One compile pool and the probe compiles, shared by the phases of one tuner (see the module docstring).

    ``jobs`` caps the workers (default: the CPU count); ``timeout`` is the pool's default
    compile time limit in seconds (jobs carry their own).
    """

    def __init__(self, *, jobs: int | None = None, timeout: float = 30.0) -> None:
        self.jobs, self.timeout = jobs, timeout
        self.probe_results: ProbeResults = ProbeResults()
        self.pools_made = 0
        self._pool: Any = None
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def pool(self) -> Iterator[Any]:
        """The context's :class:`~kernelrules.pool.CompilePool`, held under the context's lock."""
        from .pool import CompilePool

        with self._lock:
            if self._pool is not None and not self._pool.owned():  # a forked child: the workers are the parent's
                self._pool.close()
                self._pool = None
            if self._pool is None:
                self._pool = CompilePool(max_workers=self.jobs, timeout=self.timeout, cache=None)
                self.pools_made += 1
            yield self._pool

    @property
    def workers(self) -> int:
        """How many compile workers the context's pool has running now."""
        pool = self._pool
        return 0 if pool is None or not pool.owned() else len(pool._workers)

    def close(self) -> None:
        """Stop the workers now (the next phase that needs one starts a new pool)."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __enter__(self) -> "AutotuneContext":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
