"""Compiles a pool runs ahead of being asked, on workers its callers would leave idle.

A lint run judges kernels one at a time: while the main process resolves the next
kernel's launch, or while one worker compiles the single probe of a guess search, the
other workers wait. :meth:`kernelrules.compile.pool.CompilePool.compile_ahead` gives the
pool a source of jobs that a caller expects to ask for soon (the next kernels' first
configs); the pool compiles them only on a worker that no asked-for job needs, at most ``limit`` at a
time, so a compile ahead never delays a job that was asked for by more than one compile. Its
result goes into the pool's cache, where the later request finds it; a request for a job
still compiling ahead waits for that compile instead of starting the same one again.

This module is the bookkeeping only (which jobs wait, which run, under which cache key);
the pool dispatches and collects them like any other job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .compilejob import CompileJob


@dataclass
class Speculation:
    """The pool's jobs compiled ahead: queued by cache key, and those running (by ``id`` of the job)."""

    limit: int = 1
    queued: dict[str, CompileJob] = field(default_factory=dict)
    running: dict[int, str] = field(default_factory=dict)  # id(job) -> cache key
    claimed: set[str] = field(default_factory=set)  # keys of running jobs a caller now waits for

    def add(self, job: CompileJob, key: str) -> None:
        """Queue ``job`` unless a job of the same key is queued or running already."""
        if key not in self.queued and key not in self.running.values():
            self.queued[key] = job

    def withdraw(self, key: str) -> None:
        """Forget a queued job that a caller now asks for itself (it runs as an asked-for job)."""
        self.queued.pop(key, None)

    def is_running(self, key: str) -> bool:
        """Whether a job of this key is compiling ahead now."""
        return key in self.running.values()

    def claim(self, key: str) -> None:
        """A caller waits for the running job of ``key``: it is an asked-for compile now, and no longer
        counts against ``limit``."""
        self.claimed.add(key)

    def owns(self, job: CompileJob) -> bool:
        """Whether ``job`` (this very object) was started ahead."""
        return id(job) in self.running

    def can_start(self) -> bool:
        """Whether one more job may start ahead now."""
        return bool(self.queued) and len(set(self.running.values()) - self.claimed) < self.limit

    def start_now(self, job: CompileJob, key: str) -> None:
        """Count ``job`` as running ahead at once, outside the queue (:meth:`CompilePool.compile_now`)."""
        self.queued.pop(key, None)
        self.running[id(job)] = key

    def start_next(self) -> tuple[CompileJob, str]:
        """Take the oldest queued job and count it as running."""
        key = next(iter(self.queued))
        job = self.queued.pop(key)
        self.running[id(job)] = key
        return job, key

    def finish(self, job: CompileJob) -> str:
        """A job started ahead is over (answered, timed out or its worker died): its cache key."""
        key = self.running.pop(id(job))
        self.claimed.discard(key)
        return key

    def clear(self) -> None:
        """Forget everything (the pool is closing)."""
        self.queued.clear()
        self.running.clear()
        self.claimed.clear()
