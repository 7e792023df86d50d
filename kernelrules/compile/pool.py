"""Compile many jobs in persistent worker processes, each compile under a time limit.

Some configs take minutes to compile (a 256×256 tile with 4 warps spends them in
ptxas), and a crash in LLVM or ptxas must not take the analyzer down. So every
compile runs in a worker process:

* workers are started once and reused (Triton is imported once per worker), each
  as ``python -m kernelrules.compile.pool`` in **its own session / process group**
  (:class:`kernelrules.compile.workers.SupervisedProcess` starts, times and kills them);
* a job that runs past its time limit gets the whole group killed (``os.killpg``
  with SIGKILL, so ptxas children die too), a ``timeout`` result, and a fresh worker;
* a worker that dies gets an ``internal`` result for its job and is restarted;
* each worker compiles with a private, emptied ``TRITON_CACHE_DIR`` (and ``TMPDIR``)
  so compile times are cold and Triton's cache never hides a failure, unless the job
  is sent with a shared Triton cache directory (the pool's ``triton_cache_dir``, or
  ``run(..., triton_cache_dir=...)``): the choice is made per job, so one pool serves
  both (kernelrules.autotune's probes and its precompiles);
* a worker imports Triton and libtriton but not torch: the only thing in Triton's
  compile path that imports torch is its argument specializer, which uses it for a
  fast path for ``torch.Tensor`` arguments; workers only ever specialize stand-in
  pointers (:mod:`kernelrules.compile.specialize`), which take the generic ``data_ptr`` path
  with or without torch, so the specializer is initialised with torch hidden.

The parent talks to a worker (:mod:`kernelrules.compile.compile_worker`, the worker's side) over
pipes: length-prefixed pickles of ``(job_id, CompileJob, triton_cache_dir, views)`` on the
worker's stdin, ``(job_id, CompileResult)`` back on its stdout. The worker moves its own
stdout/stderr aside at start so that nothing Triton, LLVM or ptxas prints can corrupt that
channel; what a failing compile printed is returned in :attr:`CompileResult.log`.

Callers that know which jobs they will ask for next can offer them (:meth:`CompilePool.compile_ahead`):
those compile on workers no asked-for job needs (:mod:`kernelrules.compile.speculation`). A caller
that asks for jobs one at a time while others compile (``kernelrules tune``) hands them over through
a :class:`kernelrules.compile.feed.JobFeed` that one long ``run`` reads.

Why over 400 lines: the pool's whole protocol (start, hand out, collect, restart) reads best in one
place; the worker side is compile_worker.py and process supervision is workers.py.
"""

from __future__ import annotations

import os
import pickle
import selectors
import shutil
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

from .cache import binary_in
from .compile_worker import HEADER, READY, TRITON_KEY, frame, job_views, write_all
from .compilejob import CompileJob, CompileResult
from .feed import JobFeed
from .speculation import Speculation
from .stage_twins import StageTwins, eligible
from .triton_key import REPORT_ENV, ParentTritonKey
from .worker_env import worker_environment
from .workers import SupervisedProcess, WorkerLog

#: Called after each finished job: ``progress(done, total, job, result)``.
ProgressHook = Callable[[int, int, CompileJob, CompileResult], None]

#: How long a new worker may take to import Triton and say it is ready.
STARTUP_TIMEOUT = 120.0

#: Consecutive worker start failures after which the pool gives up on remaining jobs.
MAX_START_FAILURES = 3

#: Jobs a source of compiles ahead may offer, all answered from the cache, before one is queued.
PULLS = 8

#: ``run()``'s default for ``cache`` and ``triton_cache_dir``: the pool's own.
_POOL_DEFAULT: object = object()


@dataclass
class _Worker:
    """One compile worker: its supervised process, scratch directory, unread answer bytes and the job it runs."""

    process: SupervisedProcess
    scratch: str
    buffer: bytearray = field(default_factory=bytearray)
    job_id: int | None = None
    job: CompileJob | None = None
    dispatched: float = 0.0

    @property
    def proc(self) -> subprocess.Popen:
        return self.process.proc

    @property
    def fd(self) -> int:
        return self.proc.stdout.fileno()  # type: ignore[union-attr]


def _stop_workers(workers: list[_Worker], owner: int | None = None) -> None:
    """Kill every worker and remove its scratch directory (also run at interpreter exit).

    Nothing is done in a process other than ``owner``: a child forked from the pool's
    process exits without killing its parent's workers.
    """
    if owner is not None and os.getpid() != owner:
        return
    for worker in workers:  # all signalled first: their exits overlap
        worker.process.send_kill()
    for worker in workers:
        worker.process.close()
        shutil.rmtree(worker.scratch, ignore_errors=True)
    workers.clear()


class CompilePool:
    """Run :class:`CompileJob` s in persistent worker processes with a per-job time limit.

    ``timeout`` is the default limit in seconds (a job's own ``timeout`` wins).
    ``cache`` is a :class:`kernelrules.compile.cache.ResultCache` (or None): hits are returned
    without compiling and successful or deterministic failures are stored.
    ``triton_cache_dir`` shares one Triton cache between workers instead of the
    default private, emptied one. Both are defaults that :meth:`run` can override per
    call, so one pool (and its started workers) can serve callers that want either.
    Workers are started on demand, never more than there are jobs waiting, up to
    ``max_workers``. Use as a context manager, or call :meth:`close` (at interpreter
    exit the workers are stopped anyway).

    ``remember_timeouts``: a job that ran past its time limit is answered with that timeout
    when the same job (same cache key and limit) comes again to this pool, instead of
    spending the limit once more. Timeouts depend on the load, so they are never written to
    the disk cache; a pool that lives for one lint run remembers them for that run only
    (a guess search's probe of a kernel's first config, then the judging of that config).

    A pool belongs to the process that created it: in a child made with ``fork`` it
    starts no job and stops no worker (the workers are the parent's); see
    :meth:`owned`.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        timeout: float = 30.0,
        *,
        cache: object | None = None,
        triton_cache_dir: str | None = None,
        progress: ProgressHook | None = None,
        remember_timeouts: bool = False,
    ) -> None:
        self.max_workers = max(1, max_workers or os.cpu_count() or 1)
        self.timeout = timeout
        self.cache = cache
        self.triton_cache_dir = triton_cache_dir
        self.progress = progress
        self._workers: list[_Worker] = []
        self._selector = selectors.DefaultSelector()
        self._next_id = 0
        self._start_failures = 0
        self._start_error = ""
        self._keys: dict[int, str | None] = {}
        self._owner = os.getpid()
        #: (cache key, time limit) -> the timeout a job of this pool met, when ``remember_timeouts`` is set.
        self._timed_out: dict[tuple[str, float], CompileResult] | None = {} if remember_timeouts else None
        self._triton_key = ParentTritonKey()
        #: Called with the Triton key once a worker reported it (:meth:`report_triton_key`); runs in the pool's thread.
        self.on_triton_key: Callable[[tuple[str, str]], None] | None = None
        self._key_reporter = False  # whether the next worker started is asked to report the key
        #: Jobs compiled ahead (:meth:`compile_ahead`): at most one worker fewer than the pool has, and at least one.
        self._ahead = Speculation(limit=max(1, self.max_workers - 1))
        self._ahead_source: Callable[[], CompileJob | None] | None = None
        #: Configs of a loop-free kernel that differ only in num_stages compile once (kernelrules.compile.stage_twins).
        self._twins = StageTwins()
        self._twin_of: dict[str, str] = {}  # cache key -> the key of its stage-twin group, for eligible jobs
        self._answer_keys: dict[CompileJob, str | None] = {}  # the cache keys :meth:`answered_now` computed
        self._finalizer = weakref.finalize(self, _stop_workers, self._workers, self._owner)

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> "CompilePool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop all workers (killing any compile still running); in a forked child, only let go of them."""
        self._ahead.clear()
        self._ahead_source = None
        if not self.owned():
            self._forget_workers()
            return
        for worker in list(self._workers):  # all signalled first: their exits overlap
            worker.process.send_kill()
        for worker in list(self._workers):
            self._retire(worker)
        self._finalizer()

    def start(self, count: int) -> None:
        """Start workers now, up to ``count`` in all (and ``max_workers``), without waiting for them:
        they import Triton while the caller prepares the jobs it will run."""
        if not self.owned():
            return
        while len(self._workers) < min(count, self.max_workers):
            self._spawn()

    def report_triton_key(self, callback: Callable[[tuple[str, str]], None] | None = None) -> None:
        """Ask the next worker started to compute Triton's source hash once it is ready and report it (unless this
        process computes it already), for the jobs' messages and for ``callback``, called once it is read."""
        self.on_triton_key = callback
        self._key_reporter = True

    def triton_key(self) -> tuple[str, str] | None:
        """Triton's source hash with its installation, once known (never waits): computed by this process's
        background thread, or reported by a worker (:meth:`report_triton_key`); what the compile workers get with
        their jobs, for others to share too (:mod:`kernelrules.compile.triton_key`)."""
        return self._triton_key.value

    def owned(self) -> bool:
        """Whether this process created the pool (False in a child forked from its creator)."""
        return os.getpid() == self._owner

    def compiles_ahead(self) -> bool:
        """Whether the pool can compile ahead and tell what it compiled without waiting: it is this process's and
        has a cache (:meth:`compile_ahead`, :meth:`compile_now`, :meth:`answered_now`, :meth:`compiling_ahead`)."""
        return self.owned() and self.cache is not None

    def _forget_workers(self) -> None:
        """In a forked child: close this process's copies of the parent's worker pipes, kill nothing."""
        for worker in self._workers:
            worker.process.release_pipes()
        self._workers.clear()
        self._finalizer.detach()

    def _spawn(self) -> _Worker:
        """Start a worker in a new session, with its private Triton cache and temp dir."""
        self._triton_key.start()  # computed while the workers import Triton (kernelrules.compile.triton_key)
        scratch = tempfile.mkdtemp(prefix="kernelrules-worker-")
        # Only what a cross-compile reads (kernelrules.compile.worker_env): no credentials reach Triton or ptxas.
        env = worker_environment(TMPDIR=scratch, KERNELRULES_WORKER_SCRATCH=scratch,
                                 TRITON_CACHE_DIR=scratch)  # the cache is set per job
        env.pop("TRITON_INTERPRET", None)  # workers cross-compile; a traced or tested command may interpret
        if self._key_reporter and self._triton_key.value is None and not self._triton_key.started:
            env[REPORT_ENV] = "1"  # one worker: it hashes while it waits for its first job (the others get its key)
            self._key_reporter = False
        process = SupervisedProcess.start(
            "kernelrules.compile.pool", env=env, log=WorkerLog(os.path.join(scratch, "worker-stderr.log")),
            startup_timeout=STARTUP_TIMEOUT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            cwd=scratch,  # not the user's directory: a source checkout there must not shadow the installed package
        )
        worker = _Worker(process=process, scratch=scratch)
        os.set_blocking(worker.fd, False)
        self._selector.register(worker.fd, selectors.EVENT_READ, worker)
        self._workers.append(worker)
        return worker

    def _retire(self, worker: _Worker) -> None:
        """Kill a worker and forget it."""
        try:
            self._selector.unregister(worker.fd)
        except (KeyError, ValueError, OSError):
            pass
        worker.process.close()
        shutil.rmtree(worker.scratch, ignore_errors=True)
        if worker in self._workers:
            self._workers.remove(worker)

    # ----------------------------------------------------------------- running

    def compile_ahead(self, source: Callable[[], CompileJob | None] | None) -> None:
        """Compile jobs ahead, into the pool's cache, on workers no asked-for job needs
        (:mod:`kernelrules.compile.speculation`): whenever a worker would be idle, ``source()``
        is asked for the next job (None: none now). A later :meth:`run` of the same job finds the
        result there, or waits for the compile still running. Jobs already in the cache are
        skipped; a pool without a cache compiles nothing ahead. ``None`` stops asking. Between
        runs, this call also files finished compiles and starts the next."""
        if not self.compiles_ahead():
            return
        self._ahead_source = source
        self._collect_ahead()
        self._fill_workers([], self.triton_cache_dir)

    def compile_now(self, jobs: Iterable[CompileJob]) -> int:
        """Start ``jobs`` ahead at once, one per idle worker, ready or not (a job sent to a starting worker waits in
        its pipe, and its time limit starts when the worker is ready): compiles a caller will ask for after other
        work of its own (``tune``'s probe compiles, while its study opens). Their results go into the pool's
        cache, where the caller's :meth:`run` finds them or waits for them. Jobs answered by the cache or running
        already are skipped. How many started."""
        if not self.compiles_ahead():
            return 0
        idle = [w for w in self._workers if w.job is None]
        started = 0
        for job in jobs:
            if not idle:
                break
            answered, key = self._answer_early(job, self.cache, self.triton_cache_dir)
            if answered is not None or key is None or self._ahead.is_running(key) or key in self._keys.values():
                continue
            self._ahead.start_now(job, key)
            self._dispatch(idle.pop(0), job, key, self.triton_cache_dir)
            started += 1
        return started

    def answered_now(self, jobs: Sequence[CompileJob]) -> list[CompileResult | None]:
        """Each job's result where the pool has it now (cached, or compiled ahead and over), without waiting: None
        for one compiling, queued or never started, and for every job of a pool without a cache. Between runs
        only: it files the compiles ahead that are over and starts the next, as :meth:`compile_ahead` does. A job's
        cache key is computed once (4 ms a job for an attention kernel on a 2-core CPU: the kernel's specialization)."""
        if not self.compiles_ahead():
            return [None] * len(jobs)
        self._collect_ahead()
        self._fill_workers([], self.triton_cache_dir)
        found: list[CompileResult | None] = []
        for job in jobs:
            if self._running_ahead(job):
                found.append(None)
                continue
            answered, key = self._answer_early(job, self.cache, self.triton_cache_dir)
            self._answer_keys[job] = key
            found.append(answered)
        return found

    def compiling_ahead(self, jobs: Sequence[CompileJob]) -> bool:
        """Whether any of ``jobs`` is compiling ahead now (between runs: it files the compiles ahead that are over
        first); a job never started is not."""
        if not self.compiles_ahead():
            return False
        self._collect_ahead()
        for job in jobs:
            if job not in self._answer_keys:
                self._answer_keys[job] = self._answer_early(job, self.cache, self.triton_cache_dir)[1]
            if self._running_ahead(job):
                return True
        return False

    def _running_ahead(self, job: CompileJob) -> bool:
        """Whether ``job``, its cache key known (:attr:`_answer_keys`), is compiling ahead now."""
        key = self._answer_keys.get(job)
        return bool(key) and self._ahead.is_running(key)

    def _pull_ahead(self) -> None:
        """Queue one more job to compile ahead when a worker could take it and none is queued."""
        if self._ahead_source is None or self._ahead.queued:
            return
        if len(self._workers) >= self.max_workers and not any(w.process.ready and w.job is None
                                                               for w in self._workers):
            return
        for _ in range(PULLS):
            job = self._ahead_source()
            if job is None:
                return
            answered, key = self._answer_early(job, self.cache, self.triton_cache_dir)
            if answered is None and key is not None and key not in self._keys.values():  # not compiling now
                self._ahead.add(job, key)
                return

    def _collect_ahead(self) -> None:
        """Between runs, file the answers of compiles ahead that are over, without waiting, so their
        workers are free again (between runs every job on a worker was started ahead)."""
        finished = [item for selector_key, _ in self._selector.select(timeout=0)
                    for item in self._read(selector_key.data)] + self._expire()
        for job, result, _key in finished:
            if self._ahead.owns(job):
                self._finish_ahead(job, result, {}, [])

    def run(self, jobs: Iterable[CompileJob] | JobFeed, progress: ProgressHook | None = None, *,
            cache: object | None = _POOL_DEFAULT,
            triton_cache_dir: str | None = _POOL_DEFAULT) -> Iterator[tuple[CompileJob, CompileResult]]:  # type: ignore[assignment]
        """Yield ``(job, result)`` for every job, in the order they finish.

        ``jobs`` is a list known up front, or a :class:`kernelrules.compile.feed.JobFeed` another
        thread puts jobs into while this runs: each is started as soon as a worker is free, and
        the run ends when the feed is closed and every job taken is answered.
        Cache hits and jobs whose spec is invalid are answered without a worker.
        Never hangs: every compile has a deadline and every worker death is reported.
        ``cache`` and ``triton_cache_dir`` replace the pool's own for these jobs.
        """
        if not self.owned():
            raise RuntimeError("this CompilePool belongs to the process this one was forked from; make a new one")
        hook = progress or self.progress
        cache = self.cache if cache is _POOL_DEFAULT else cache
        shared_dir = self.triton_cache_dir if triton_cache_dir is _POOL_DEFAULT else triton_cache_dir
        self._start_failures = 0
        self._collect_ahead()  # what came between runs (a worker's READY, a reported Triton key) before dispatching
        feed = jobs if isinstance(jobs, JobFeed) else None
        pending = [] if feed is not None else list(jobs)  # type: ignore[arg-type]
        total, done = len(pending), 0
        queue: list[tuple[CompileJob, str | None]] = []
        awaiting: dict[str, list[CompileJob]] = {}  # cache key -> asked-for jobs a compile ahead will answer
        if feed is not None:
            self._selector.register(feed.signal.fileno(), selectors.EVENT_READ, feed)

        def more() -> bool:
            return bool(queue or awaiting or self._asked_busy() or (feed is not None and feed.open))

        def report(job: CompileJob, result: CompileResult) -> tuple[CompileJob, CompileResult]:
            nonlocal done
            done += 1
            self._report(hook, done, total, job, result)
            return job, result

        try:
            for job, result in self._intake(pending, cache, shared_dir, queue, awaiting):
                yield report(job, result)
            while more() and not (feed is not None and feed.abandoned):
                # Every answer of the batch is filed before the first is yielded: a caller may stop iterating
                # at any yield, and an answer to a compile ahead must never be lost (a later run waits for it).
                answered: list[tuple[CompileJob, CompileResult]] = []
                if feed is not None:
                    taken = feed.take()
                    total += len(taken)
                    answered += self._intake(taken, cache, shared_dir, queue, awaiting)
                answered += self._answer_twins(queue, cache)
                if more():  # (else stage twins answered every job left)
                    self._fill_workers(queue, shared_dir)
                    answered += self._file(self._wait(), cache, awaiting, queue)
                for job, result in answered:
                    yield report(job, result)
                if self._start_failures >= MAX_START_FAILURES:
                    for job, _key in queue:
                        yield report(job, CompileResult.failure(
                            "internal", "compile workers fail to start", self._start_error or "no output"))
                    queue.clear()
        finally:
            if feed is not None:
                self._selector.unregister(feed.signal.fileno())
            for worker in list(self._workers):
                if worker.job is not None and not self._ahead.owns(worker.job):  # abandoned mid-run: stale
                    self._retire(worker)

    def _intake(self, jobs: list[CompileJob], cache: object | None, shared_dir: str | None,
                queue: list[tuple[CompileJob, str | None]],
                awaiting: dict[str, list[CompileJob]]) -> list[tuple[CompileJob, CompileResult]]:
        """Answer what needs no worker (cache hits, spec errors, known timeouts), attach jobs a compile ahead
        will answer, queue the rest; return the answered."""
        answered = []
        for job in jobs:
            result, key = self._answer_early(job, cache, shared_dir)
            if result is not None:
                answered.append((job, result))
            elif key is not None and cache is self.cache and self._ahead.is_running(key):
                awaiting.setdefault(key, []).append(job)
                self._ahead.claim(key)
            else:
                if key is not None:
                    self._ahead.withdraw(key)
                queue.append((job, key))
        return answered

    def _file(self, finished: list[tuple[CompileJob, CompileResult, str | None]], cache: object | None,
              awaiting: dict[str, list[CompileJob]],
              queue: list[tuple[CompileJob, str | None]]) -> list[tuple[CompileJob, CompileResult]]:
        """File finished compiles (cache, remembered timeouts, stage twins); return the asked-for jobs they answer."""
        answered: list[tuple[CompileJob, CompileResult]] = []
        for job, result, key in finished:
            if self._ahead.owns(job):
                answered += [(asked, result) for asked in self._finish_ahead(job, result, awaiting, queue)]
                continue
            self._record(cache, job, key, result)
            answered.append((job, result))
        return answered

    def _record(self, cache: object | None, job: CompileJob, key: str | None, result: CompileResult) -> None:
        """What every finished compile leaves behind: its cache entry, a remembered timeout, what it says of
        its stage twins."""
        self._store(cache, key, result)
        self._remember_timeout(job, key, result)
        self._twins.learn(job, self._twin_of.get(key or ""), result)

    def _asked_busy(self) -> bool:
        """Whether a worker compiles a job that was asked for (not one compiled ahead)."""
        return any(w.job is not None and not self._ahead.owns(w.job) for w in self._workers)

    def _finish_ahead(self, job: CompileJob, result: CompileResult, awaiting: dict[str, list[CompileJob]],
                      queue: list[tuple[CompileJob, str | None]]) -> list[CompileJob]:
        """File the result of a job compiled ahead in the pool's cache; return the asked-for jobs it answers.
        When its worker died, those jobs are queued to compile again instead."""
        key = self._ahead.finish(job)
        self._record(self.cache, job, key, result)
        asked = awaiting.pop(key, [])
        if result.error_kind == "internal":
            queue.extend((a, key) for a in asked)
            return []
        return asked

    def _answer_early(self, job: CompileJob, cache: object | None,
                      shared_dir: str | None = None) -> tuple[CompileResult | None, str | None]:
        """A cached result, a stage twin's (``shared_dir``: the Triton cache the job would fill), or a spec
        error found while computing the cache key."""
        if cache is None:
            return None, None
        from .compilejob import prepare, prepare_failure
        from ..errors import KernelSourceError, SignatureSpecError

        import warnings

        start = time.perf_counter()
        try:
            with warnings.catch_warnings():  # Triton's specialiser may import torch, which can warn
                warnings.simplefilter("ignore")
                handle, spec = prepare(job)
        except (KernelSourceError, SignatureSpecError) as exc:
            result = prepare_failure(exc)
            result.compile_seconds = time.perf_counter() - start
            return result, None
        except Exception:  # noqa: BLE001 - let the worker compile and classify it, uncached
            return None, None
        key = cache.key(job, handle.source_hash, spec)  # type: ignore[attr-defined]
        if self._timed_out is not None and (key, self._limit(job)) in self._timed_out:
            return self._timed_out[(key, self._limit(job))], key
        if eligible(job, handle, shared_dir):
            from .cache import cache_key

            self._twin_of[key] = cache_key(job, handle.source_hash, spec, twin=True)
        cached = cache.get(key)  # type: ignore[attr-defined]
        if cached is not None and shared_dir and not binary_in(cached, shared_dir):
            cached = None  # the facts are known, the binary is not where the launch looks: compile it there
        return (cached if cached is not None else self._twin_answer(job, key, cache)), key

    def _twin_answer(self, job: CompileJob, key: str | None, cache: object | None) -> CompileResult | None:
        """The result a compiled stage twin gives ``job``, stored under the job's own key; None without one."""
        result = self._twins.answer(job, self._twin_of.get(key or ""))
        if result is not None:
            self._store(cache, key, result)
        return result

    def _answer_twins(self, queue: list[tuple[CompileJob, str | None]],
                      cache: object | None) -> list[tuple[CompileJob, CompileResult]]:
        """Take the queued jobs a stage twin has answered since they were queued out of the queue (stored
        under their own keys); return them with their results."""
        answered = []
        for entry in list(queue):
            result = self._twin_answer(*entry, cache)
            if result is not None:
                queue.remove(entry)
                answered.append((entry[0], result))
        return answered

    def _limit(self, job: CompileJob) -> float:
        """The time limit ``job`` runs under."""
        return job.timeout if job.timeout is not None else self.timeout

    def _remember_timeout(self, job: CompileJob, key: str | None, result: CompileResult) -> None:
        """Keep a timed-out job's result for the rest of this pool's life (``remember_timeouts``)."""
        if self._timed_out is not None and key is not None and result.error_kind == "timeout":
            self._timed_out[(key, self._limit(job))] = result

    @staticmethod
    def _store(cache: object | None, key: str | None, result: CompileResult) -> None:
        """Put a result in the cache when it does not depend on the machine's load."""
        if cache is not None and key is not None:
            cache.put(key, result)  # type: ignore[attr-defined]

    @staticmethod
    def _report(hook: ProgressHook | None, done: int, total: int, job: CompileJob, result: CompileResult) -> None:
        """Call the progress hook, if any."""
        if hook is not None:
            hook(done, total, job, result)

    def _fill_workers(self, queue: list[tuple[CompileJob, str | None]], shared_dir: str | None) -> None:
        """Start workers up to the limit (no more than there are jobs) and give each ready, idle one a job:
        the first queued job that no stage twin in flight may answer, else one to compile ahead."""
        if next(self._dispatchable(queue), None) is None:
            self._pull_ahead()
        wanted = len(queue) + self._busy() + (1 if self._ahead.can_start() else 0)
        while (queue or self._ahead.can_start()) and len(self._workers) < min(self.max_workers, wanted):
            self._spawn()
        for worker in self._workers:
            if not worker.process.ready or worker.job is not None:
                continue
            entry = next(self._dispatchable(queue), None)
            if entry is not None:
                queue.remove(entry)
                self._dispatch(worker, *entry, shared_dir)
            elif self._ahead.can_start():  # an idle worker nothing asked for: compile ahead
                job, key = self._ahead.start_next()
                self._dispatch(worker, job, key, self.triton_cache_dir)

    def _dispatchable(self, queue: list[tuple[CompileJob, str | None]]) -> Iterator[tuple[CompileJob, str | None]]:
        """The queued jobs that may start now, in order: not those held for a stage twin compiling now."""
        in_flight = {self._twin_of.get(self._keys.get(w.job_id) or "") for w in self._workers if w.job is not None}
        in_flight.discard(None)
        return (entry for entry in queue
                if not self._twins.hold(entry[0], self._twin_of.get(entry[1] or ""), in_flight))  # type: ignore[arg-type]

    def _busy(self) -> int:
        """How many workers are compiling now."""
        return sum(1 for w in self._workers if w.job is not None)

    def _dispatch(self, worker: _Worker, job: CompileJob, key: str | None, shared_dir: str | None = None) -> None:
        """Send one job to an idle worker and start its clock (``shared_dir``: the Triton cache it may use)."""
        self._next_id += 1
        message = frame((self._next_id, job, shared_dir, job_views(job), self._triton_key.value))  # before the clock starts
        worker.job_id, worker.job = self._next_id, job
        self._keys[self._next_id] = key
        limit = self._limit(job)
        worker.dispatched = time.monotonic()
        if not worker.process.ready:  # it reads the job once Triton is imported: its limit starts then (_read)
            limit += STARTUP_TIMEOUT
        worker.process.arm(limit, now=worker.dispatched)
        try:
            write_all(worker.proc.stdin.fileno(), message)  # type: ignore[union-attr]
        except OSError:
            pass  # the worker died; _wait sees its end of file

    def _wait(self) -> list[tuple[CompileJob, CompileResult, str | None]]:
        """Wait for the next answer, end of file or deadline; return the finished jobs."""
        now = time.monotonic()
        deadlines = [w.process.deadline if w.job is not None else w.process.startup_deadline
                     for w in self._workers if w.job is not None or not w.process.ready]
        wait = max(0.0, min(deadlines) - now) if deadlines else 1.0
        finished: list[tuple[CompileJob, CompileResult, str | None]] = []
        for selector_key, _ in self._selector.select(timeout=min(wait, 5.0)):
            if isinstance(selector_key.data, _Worker):  # (else a feed's signal: new jobs, taken by the caller)
                finished.extend(self._read(selector_key.data))
        finished.extend(self._expire())
        return finished

    def _read(self, worker: _Worker) -> list[tuple[CompileJob, CompileResult, str | None]]:
        """Read what a worker sent; handle its messages or its death."""
        try:
            chunk = os.read(worker.fd, 1 << 20)
        except BlockingIOError:
            return []
        except OSError:
            chunk = b""
        if not chunk:
            return self._on_death(worker)
        worker.buffer.extend(chunk)
        finished = []
        while len(worker.buffer) >= HEADER.size:
            size = HEADER.unpack_from(worker.buffer)[0]
            if len(worker.buffer) < HEADER.size + size:
                break
            payload = bytes(worker.buffer[HEADER.size:HEADER.size + size])
            del worker.buffer[:HEADER.size + size]
            tag, value = pickle.loads(payload)
            if tag == READY:
                worker.process.ready = True
                self._start_failures = 0
                if worker.job is not None:  # sent before it was ready (compile_now): its clock starts now
                    worker.dispatched = time.monotonic()
                    worker.process.arm(self._limit(worker.job), now=worker.dispatched)
            elif tag == TRITON_KEY:
                if self._triton_key.adopt(value) and self.on_triton_key is not None:
                    self.on_triton_key(value)
            elif tag == worker.job_id and worker.job is not None:
                finished.append((worker.job, value, self._keys.pop(tag, None)))
                worker.job_id, worker.job = None, None
        return finished

    def _on_death(self, worker: _Worker) -> list[tuple[CompileJob, CompileResult, str | None]]:
        """A worker closed its pipe: report its job as ``internal`` and forget it."""
        job, job_id = worker.job, worker.job_id
        if not worker.process.ready:
            self._note_start_failure(worker)
        self._retire(worker)
        death = worker.process.death()
        if job is None:
            return []
        self._keys.pop(job_id, None)
        how = f"killed by signal {death.signal}" if death.signal is not None else f"exit code {death.returncode}"
        result = CompileResult.failure("internal", f"compile worker died ({how}) while compiling {job.describe()}")
        result.compile_seconds = time.monotonic() - worker.dispatched
        return [(job, result, None)]

    def _note_start_failure(self, worker: _Worker) -> None:
        """Count a worker that never became ready and keep what it printed (an import error)."""
        self._start_failures += 1
        self._start_error = worker.process.log_tail(4000)

    def _expire(self) -> list[tuple[CompileJob, CompileResult, str | None]]:
        """Kill workers past their deadline (job time limit, or start-up limit)."""
        now = time.monotonic()
        finished = []
        for worker in list(self._workers):
            if worker.job is not None and worker.process.past_deadline(now):
                job, elapsed = worker.job, now - worker.dispatched
                key = self._keys.pop(worker.job_id, None)  # (the disk cache never stores a timeout)
                self._retire(worker)
                limit = worker.process.deadline - worker.dispatched
                result = CompileResult.failure(
                    "timeout", f"compile took longer than {limit:g} s: {job.describe()}", compile_seconds=elapsed
                )
                finished.append((job, result, key))
            elif worker.process.startup_expired(now):
                self._note_start_failure(worker)
                self._retire(worker)
        return finished


def compile_all(
    jobs: Iterable[CompileJob], *, max_workers: int | None = None, timeout: float = 30.0, cache: object | None = None
) -> list[tuple[CompileJob, CompileResult]]:
    """Compile ``jobs`` in a temporary pool; return ``(job, result)`` pairs in finishing order."""
    with CompilePool(max_workers=max_workers, timeout=timeout, cache=cache) as pool:
        return list(pool.run(jobs))


if __name__ == "__main__":  # a worker: the module name is the one the pool has always started
    from .compile_worker import main

    main()
