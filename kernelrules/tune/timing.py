"""Honest timing: warm-up, the median of many runs, the spread, and repeats when it is noisy.

On a GPU a measurement is :func:`held_runs`: ``triton.testing.do_bench``'s loop (CUDA events
around every run, the L2 cache flushed before each one by zeroing a buffer larger than L2,
after a warm-up) with one change: after the flush the GPU waits ``HOLD_US`` on its own
(``torch.cuda._sleep``) before the start event. do_bench's start event is stamped as soon as
the flush ends; when a kernel runs a few microseconds the GPU can get there before the CPU
has issued the launch, and the run's time then holds part of the launch's CPU cost, which
varies with the CPU's load (a compile pool beside the timing). On the H200 the hold made
the ranking of microsecond kernels reproducible: pass-to-pass rank correlation 0.98-0.99
against 0.74-0.87 for do_bench, and equal (0.999) on a 134 us kernel
(``benchmarks/h200_timer_check.py``, docs/tune.md). From the run times we keep the median,
the quartiles, the *spread* ``(p75 - p25) / median`` and the median's *error*: the
half-width of its 95 % confidence interval from order statistics (distribution-free),
relative to the median. A measurement whose error is over ``max_error`` (1 %) is repeated
(up to ``attempts`` times) and the most precise attempt is kept, flagged ``noisy`` if it is
still over. The error, not the spread, decides: a microsecond kernel's runs spread 7-14 %
around their median on the H200 (event resolution and launch jitter), yet the median of a
few hundred runs is reproducible, and repeating on the spread measured every such config
three times over for no better ranking (``benchmarks/results/timer-check/``). When the
inputs fit in L2 the caller also rotates between several copies of them (see the worker).

Under ``TRITON_INTERPRET=1`` (``--interpret``) there is no GPU: a few runs are
timed once with ``time.perf_counter``; those timings are meaningless for tuning and every
output says so.

The final ranking re-measures the best few configs *interleaved* (round r times
every candidate once, in a rotated order) and ranks by the median over rounds, so a
slow drift of the GPU's clock or temperature is shared by all candidates.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

#: The largest relative 95 % half-width of a measurement's median before it is repeated.
MAX_ERROR = 0.01
#: The normal quantile of a two-sided 95 % interval.
Z95 = 1.96
#: The timers ``measure`` knows (``kernelrules tune --timer``).
TIMERS = ("held", "do_bench")
#: How long the GPU waits after each flush before the start event (longer than a launch's CPU cost).
HOLD_US = 150.0
#: The flush buffer when Triton's driver does not offer its own (do_bench's size).
FLUSH_BYTES = 256 * 1024 * 1024


@dataclass
class Measurement:
    """One timed config: milliseconds and how much they varied."""

    ms: float
    p25: float
    p75: float
    min: float
    max: float
    runs: int
    spread: float
    error: float = 0.0
    attempts: int = 1
    noisy: bool = False
    method: str = "held"
    medians: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _quantile(sorted_times: list[float], q: float) -> float:
    if len(sorted_times) == 1:
        return sorted_times[0]
    position = q * (len(sorted_times) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_times) - 1)
    return sorted_times[low] + (sorted_times[high] - sorted_times[low]) * (position - low)


def median_error(sorted_times: list[float]) -> float:
    """Half-width of the median's 95 % confidence interval, relative to the median.

    Distribution-free: the interval runs between the order statistics of ranks
    ``n/2 -+ 1.96 sqrt(n)/2`` (the normal approximation to the binomial), so it holds for
    skewed or quantized run times alike. Under a handful of runs it is the whole range."""
    n = len(sorted_times)
    median = statistics.median(sorted_times)
    if median <= 0:
        return 0.0
    half = Z95 * n ** 0.5 / 2
    low = max(0, int(n / 2 - half))
    high = min(n - 1, int(n / 2 + half + 0.999999))
    return (sorted_times[high] - sorted_times[low]) / 2 / median


def summarize(times: list[float], method: str = "held") -> Measurement:
    """Median, quartiles, spread and the median's error of run times (milliseconds)."""
    ordered = sorted(float(t) for t in times)
    median = statistics.median(ordered)
    p25, p75 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
    spread = (p75 - p25) / median if median > 0 else 0.0
    return Measurement(ms=median, p25=p25, p75=p75, min=ordered[0], max=ordered[-1], runs=len(ordered),
                       spread=spread, error=median_error(ordered), method=method, medians=[median])


def wallclock(fn: Callable[[], Any], runs: int = 3) -> list[float]:
    """Run times in ms with perf_counter (after one warm-up run): the interpreter's stand-in."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def measure(fn: Callable[[], Any], *, interpret: bool = False, warmup_ms: float = 25.0, rep_ms: float = 100.0,
            max_error: float = MAX_ERROR, attempts: int = 3, runs: int = 3,
            bench: Callable[..., list[float]] | None = None, timer: str = "held") -> Measurement:
    """Time ``fn``; repeat while the median's error is over ``max_error``; keep the most precise
    attempt. ``timer``: ``held`` (:func:`held_runs`) or ``do_bench`` (Triton's loop as it is).
    Interpreted (``interpret``) runs are timed once: their times mean nothing to repeat for."""
    if interpret:
        return _attempts(lambda: wallclock(fn, runs), "wallclock", max_error, 1)
    if timer not in TIMERS:
        raise ValueError(f"unknown timer {timer!r}: {' or '.join(TIMERS)}")
    if bench is None and timer == "do_bench":
        from triton.testing import do_bench

        def bench(f: Callable[[], Any]) -> list[float]:
            return list(do_bench(f, warmup=warmup_ms, rep=rep_ms, return_mode="all"))
    elif bench is None:
        def bench(f: Callable[[], Any]) -> list[float]:
            return held_runs(f, warmup_ms=warmup_ms, rep_ms=rep_ms)
    return _attempts(lambda: bench(fn), timer, max_error, attempts)


def held_runs(fn: Callable[[], Any], *, warmup_ms: float = 25.0, rep_ms: float = 100.0, hold_us: float = HOLD_US,
              torch: Any = None, hold_before_flush: bool = False) -> list[float]:
    """Run times in ms of ``fn`` on the current GPU: do_bench's loop with a GPU-side hold before each
    start event (see the module's docstring). About ``warmup_ms`` of warm-up runs, then as many timed
    runs as fit in ``rep_ms`` with their flush and hold (at least one). ``hold_before_flush`` holds
    first and flushes after, the variant ``benchmarks/h200_timer_check.py`` measured and found no better."""
    if torch is None:
        import torch
    cuda = torch.cuda
    flush, clear = _flush_buffer(torch)
    cycles = int(hold_us * 1e-6 * _clock_hz(torch))
    fn()
    cuda.synchronize()
    first, last = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    first.record()
    for _ in range(5):
        clear(flush)
        fn()
    last.record()
    cuda.synchronize()
    estimate = max(first.elapsed_time(last) / 5, 1e-6)  # one flush and one run, in ms
    for _ in range(max(1, int(warmup_ms / estimate))):
        fn()
    runs = max(1, int(rep_ms / (estimate + hold_us * 1e-3)))
    starts = [cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [cuda.Event(enable_timing=True) for _ in range(runs)]
    for start, end in zip(starts, ends):
        if hold_before_flush:
            cuda._sleep(cycles)
            clear(flush)
        else:
            clear(flush)
            cuda._sleep(cycles)
        start.record()
        fn()
        end.record()
    cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends)]


def _flush_buffer(torch: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The buffer that flushes L2 and how to clear it: Triton's own (do_bench's), else 256 MiB of zeros."""
    try:
        from triton import runtime

        driver = runtime.driver.active
        return driver.get_empty_cache_for_benchmark(), driver.clear_cache
    except Exception:  # noqa: BLE001 - an older or other Triton: the same flush by hand
        return torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda"), lambda buffer: buffer.zero_()


def _clock_hz(torch: Any) -> float:
    """The GPU's SM clock (the unit of ``torch.cuda._sleep``), 2 GHz where torch does not say."""
    try:
        return float(torch.cuda.get_device_properties(torch.cuda.current_device()).clock_rate) * 1e3 or 2e9
    except Exception:  # noqa: BLE001
        return 2e9


def _attempts(run: Callable[[], list[float]], method: str, max_error: float, attempts: int) -> Measurement:
    """Measure up to ``attempts`` times until the median's error is at most ``max_error``."""
    best: Measurement | None = None
    medians = []
    for attempt in range(1, max(1, attempts) + 1):
        current = summarize(run(), method)
        medians.append(current.ms)
        if best is None or current.error < best.error:
            best = current
        if current.error <= max_error:
            break
    assert best is not None
    best.attempts = len(medians)
    best.medians = medians
    best.noisy = best.error > max_error
    return best


def interleaved(candidates: list[Any], time_one: Callable[[Any], float | None], rounds: int) -> dict[int, list[float]]:
    """Time every candidate once per round, rotating the order; {index: [ms per round]}."""
    results: dict[int, list[float]] = {i: [] for i in range(len(candidates))}
    order = list(range(len(candidates)))
    for round_index in range(rounds):
        shift = round_index % max(1, len(order))
        for i in order[shift:] + order[:shift]:
            value = time_one(candidates[i])
            if value is not None:
                results[i].append(value)
    return results
