"""What several ``kernelrules tune`` problems in one process share, and the benchmark workers' start and end.

:class:`TuneSession` keeps the benchmark workers and the gate's compile pool from one problem to the next
(:func:`kernelrules.tune.driver.tune_many`); :func:`spawn_workers` starts the workers before a tuner has loaded
its space, and :func:`shut_worker` / :func:`kill_unconfigured` end them. The tuner
(:mod:`kernelrules.tune.driver`) uses them and re-exports :class:`TuneSession`.
"""

from __future__ import annotations

from typing import Any, Sequence

from .options import TuneOptions


class TuneSession:
    """What :func:`~kernelrules.tune.driver.tune_many` keeps from one problem to the next: the benchmark workers
    (their torch, GPU context and Triton loaded; each takes the next problem with a ``load`` request) and the gate's
    compile pool (its workers up, Triton's source hash known)."""

    def __init__(self) -> None:
        self.workers: list = []
        self.pool: Any = None

    def close(self) -> None:
        """Stop the workers and close the pool."""
        for worker in self.workers:
            shut_worker(worker)
        self.workers = []
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def spawn_workers(options: TuneOptions) -> list:
    """One benchmark worker process per GPU (``--gpus``, else one), spawned without its settings: it imports torch
    while the driver loads the space and the architecture (:meth:`BenchWorker.spawn`)."""
    from .worker import BenchWorker

    workers = [BenchWorker(index, None, compile_timeout=options.compile_timeout, bench_timeout=options.bench_timeout)
               for index in range(len(options.gpus or ["0"]))]
    for worker in workers:
        worker.spawn()
    return workers


def shut_worker(worker: Any) -> None:
    """End a benchmark worker either way: stop one that said ready (it listens), kill one that never did."""
    if worker.info:
        worker.stop()
    else:
        worker.kill()


def kill_unconfigured(workers: Sequence[Any]) -> None:
    """Kill benchmark workers that never got their settings (a tuner that failed, or was never run)."""
    for worker in workers:
        if worker.settings is None:
            worker.kill()


__all__ = ["TuneSession", "kill_unconfigured", "shut_worker", "spawn_workers"]
