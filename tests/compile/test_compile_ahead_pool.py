"""Compiles ahead in the pool (kernelrules.compile.speculation) and the cache key's canonical options."""

from __future__ import annotations

import textwrap
import time
from collections import Counter

import pytest

from kernelrules.compile.cache import ResultCache, cache_key
from kernelrules.compile.compilejob import CompileJob, CompileResult
from kernelrules.compile.pool import CompilePool
from kernelrules.compile.speculation import Speculation

KERNEL = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
''')


@pytest.fixture(autouse=True)
def _private_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(KERNEL)
    return str(path)


def job(path: str, block: int, **options) -> CompileJob:
    return CompileJob(path, "scale", {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": block}, options, ("cuda", 90, 32))


def counting(pool: CompilePool) -> Counter:
    """Count the pool's dispatches: ``ahead`` (compiled ahead) and ``asked``, and each job's constexprs."""
    counts: Counter = Counter()
    dispatch = pool._dispatch

    def counted(worker, job_, key, shared_dir=None):
        counts["ahead" if pool._ahead.owns(job_) else "asked"] += 1
        counts[job_.constexprs["BLOCK"]] += 1
        return dispatch(worker, job_, key, shared_dir)

    pool._dispatch = counted
    return counts


# --------------------------------------------------------------------------- the bookkeeping


def test_speculation_queues_each_key_once_and_limits_the_running():
    a, b, c = object(), object(), object()
    ahead = Speculation(limit=1)
    ahead.add(a, "ka")
    ahead.add(a, "ka")
    ahead.add(b, "kb")
    assert list(ahead.queued) == ["ka", "kb"] and ahead.can_start()
    assert ahead.start_next() == (a, "ka")
    ahead.add(c, "ka")  # the same key is running: not queued again
    assert list(ahead.queued) == ["kb"] and ahead.is_running("ka") and ahead.owns(a) and not ahead.owns(c)
    assert not ahead.can_start()  # the limit is one running job nobody waits for
    ahead.claim("ka")  # a caller waits for it: it no longer counts against the limit
    assert ahead.can_start()
    assert ahead.finish(a) == "ka" and not ahead.is_running("ka") and not ahead.claimed
    ahead.withdraw("kb")
    assert not ahead.can_start() and not ahead.queued


# --------------------------------------------------------------------------- canonical options


def test_a_default_launch_option_given_or_not_is_one_cache_entry(kernel_file):
    plain = cache_key(job(kernel_file, 128), "src")
    assert cache_key(job(kernel_file, 128, num_stages=3, num_warps=4, num_ctas=1), "src") == plain
    assert cache_key(job(kernel_file, 128, num_stages=4), "src") != plain
    assert cache_key(job(kernel_file, 128, num_warps=8), "src") != plain
    on_amd = CompileJob(kernel_file, "scale", {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128}, {"num_stages": 2},
                        ("hip", "gfx942", 64))
    bare_amd = CompileJob(kernel_file, "scale", {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128}, {},
                          ("hip", "gfx942", 64))
    assert cache_key(on_amd, "src") == cache_key(bare_amd, "src")  # HIP's default is 2 stages


def test_a_config_naming_the_default_stages_reuses_the_compile(kernel_file, tmp_path):
    with CompilePool(max_workers=1, timeout=120, cache=ResultCache(tmp_path / "cache")) as pool:
        counts = counting(pool)
        [(_, first)] = list(pool.run([job(kernel_file, 128)]))
        [(_, again)] = list(pool.run([job(kernel_file, 128, num_stages=3)]))
    assert first.ok and again.ok and again.from_cache and counts["asked"] == 1


# --------------------------------------------------------------------------- the pool


def start_workers(pool: CompilePool) -> None:
    """Start every worker and wait until each has said it is ready."""
    pool.start(pool.max_workers)
    deadline = time.monotonic() + 120
    while not all(w.process.ready for w in pool._workers) and time.monotonic() < deadline:
        pool.compile_ahead(None)  # (reads the workers' ready messages)
        time.sleep(0.05)


def test_a_job_compiled_ahead_is_not_compiled_again(kernel_file, tmp_path):
    offered = [job(kernel_file, 64), job(kernel_file, 256)]
    with CompilePool(max_workers=2, timeout=120, cache=ResultCache(tmp_path / "cache")) as pool:
        counts = counting(pool)
        start_workers(pool)
        pool.compile_ahead(lambda: offered.pop(0) if offered else None)  # 64 starts ahead
        results = dict((j.constexprs["BLOCK"], r) for j, r in pool.run(
            [job(kernel_file, 128), job(kernel_file, 64), job(kernel_file, 256)]))  # equal jobs, new objects
    assert all(r.ok for r in results.values()) and set(results) == {64, 128, 256}
    assert (counts[64], counts[128], counts[256]) == (1, 1, 1), counts  # each compiled once, ahead or asked
    assert (counts["ahead"], counts["asked"]) == (1, 2)  # the run waited for 64's compile ahead


def test_compiles_ahead_never_take_every_worker(kernel_file, tmp_path):
    offered = [job(kernel_file, b) for b in (32, 64, 256, 512)]
    with CompilePool(max_workers=2, timeout=120, cache=ResultCache(tmp_path / "cache")) as pool:
        start_workers(pool)
        pool.compile_ahead(lambda: offered.pop(0) if offered else None)
        running = [w for w in pool._workers if w.job is not None]
        assert len(running) == 1 and pool._ahead.owns(running[0].job)  # one worker is left for asked jobs


def test_a_pool_without_a_cache_compiles_nothing_ahead(kernel_file):
    with CompilePool(max_workers=1, timeout=120) as pool:
        asked = []
        pool.compile_ahead(lambda: asked.append(1) or job(kernel_file, 64))
        assert asked == [] and not pool._workers


class _Cache:
    """A cache that answers nothing and keeps what is put."""

    def __init__(self):
        self.stored = {}

    def key(self, job_, *_):
        return f"key-{job_.constexprs['BLOCK']}"

    def get(self, key):
        return None

    def put(self, key, result):
        self.stored[key] = result


def test_a_caller_that_stops_early_loses_no_answer_of_a_compile_ahead(kernel_file):
    """Two answers in one wait: the asked job's and a compile ahead's. The caller stops after the
    first; the second must still be filed, else a later request of that job would wait forever."""
    cache = _Cache()
    pool = CompilePool(max_workers=2, timeout=120, cache=cache)
    ahead_job, asked_job = job(kernel_file, 64), job(kernel_file, 128)
    pool._ahead.add(ahead_job, "key-64")
    pool._ahead.start_next()
    pool._answer_early = lambda j, c, *_: (None, c.key(j))
    pool._fill_workers = lambda queue, shared_dir: queue.clear()
    batches = [[(asked_job, CompileResult(ok=True), "key-128"), (ahead_job, CompileResult(ok=True), "key-64")]]
    pool._wait = lambda: batches.pop(0) if batches else []
    for answered, _ in pool.run([asked_job]):
        assert answered is asked_job
        break
    assert not pool._ahead.is_running("key-64") and set(cache.stored) == {"key-64", "key-128"}
    pool.close()


# --------------------------------------------------------------------------- compile_now


def test_compile_now_sends_jobs_to_starting_workers_and_the_later_run_takes_their_results(tmp_path, kernel_file):
    """``tune`` sends its probe compiles while its compile workers still import Triton, then opens its study: each
    job waits in a starting worker's pipe, its time limit starting when the worker is ready, and the run that asks
    for the same jobs later compiles nothing again."""
    with CompilePool(max_workers=2, timeout=30, cache=ResultCache(tmp_path / "cache")) as pool:
        counts = counting(pool)
        pool.start(2)
        assert not any(w.process.ready for w in pool._workers)  # just started: importing Triton
        first = [job(kernel_file, 32), job(kernel_file, 64), job(kernel_file, 128)]
        assert pool.compile_now(first) == 2  # one per idle worker; the third is left to the run
        limits = [w.process.deadline - w.dispatched for w in pool._workers]
        assert all(limit > 30 for limit in limits)  # not ready: the start-up's time on top of the job's
        asked = [job(kernel_file, 32), job(kernel_file, 64), job(kernel_file, 128)]
        results = dict((j.constexprs["BLOCK"], r) for j, r in pool.run(asked))
        assert all(r.ok for r in results.values()) and set(results) == {32, 64, 128}
        assert counts["ahead"] == 2 and counts["asked"] == 1  # 32 and 64 compiled once, ahead; 128 when asked
        assert counts[32] == counts[64] == counts[128] == 1
        assert pool.compile_now([job(kernel_file, 32)]) == 0  # in the cache now: nothing to send


def test_answered_now_and_compiling_ahead_tell_without_waiting(tmp_path, kernel_file):
    """``tune``'s judging thread looks, without waiting, whether an early guess's compile is over
    (``answered_now``) and whether the probes still compile (``compiling_ahead``): a job compiling ahead is neither
    answered nor over, one never started is not compiling (the judging compiles it), and one that ended is
    answered with the result the later run takes, compiled once."""
    with CompilePool(max_workers=1, timeout=60, cache=ResultCache(tmp_path / "cache")) as pool:
        counts = counting(pool)
        probe, never = job(kernel_file, 32), job(kernel_file, 64)
        pool.start(1)
        assert pool.compile_now([probe, never]) == 1  # one worker: the second is never started
        assert pool.compiling_ahead([probe]) and pool.answered_now([probe, never]) == [None, None]
        assert not pool.compiling_ahead([never])
        deadline = time.monotonic() + 120
        while pool.compiling_ahead([probe]) and time.monotonic() < deadline:
            time.sleep(0.05)
        [answered, unstarted] = pool.answered_now([probe, never])
        assert answered is not None and answered.ok and unstarted is None
        assert not pool.compiling_ahead([probe, never])
        [(_, again)] = list(pool.run([job(kernel_file, 32)]))
        assert again.ok and counts[32] == 1 and counts[64] == 0
    without_cache = CompilePool(max_workers=1, timeout=60)
    assert without_cache.answered_now([probe]) == [None] and not without_cache.compiling_ahead([probe])
    without_cache.close()
