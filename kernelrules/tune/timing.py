"""Honest timing: warm-up, the median of many runs, the spread, and repeats when it is noisy.

On a GPU a measurement is ``triton.testing.do_bench(fn, warmup, rep, return_mode="all")``:
CUDA events around every run, the L2 cache flushed before each one (do_bench zeroes a
buffer larger than L2), after a warm-up. From the run times we keep the median,
the quartiles and the *spread* ``(p75 - p25) / median``; a measurement whose spread
is over ``max_spread`` (5 %) is repeated (up to ``attempts`` times) and the least
noisy attempt is kept, flagged ``noisy`` if it is still over. When the inputs fit in
L2 the caller also rotates between several copies of them (see the worker).

Under ``TRITON_INTERPRET=1`` (``--interpret``) there is no GPU: a few runs are
timed with ``time.perf_counter``; those timings are meaningless for tuning and every
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

MAX_SPREAD = 0.05


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
    attempts: int = 1
    noisy: bool = False
    method: str = "do_bench"
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


def summarize(times: list[float], method: str = "do_bench") -> Measurement:
    """Median, quartiles and spread of run times (milliseconds)."""
    ordered = sorted(float(t) for t in times)
    median = statistics.median(ordered)
    p25, p75 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
    spread = (p75 - p25) / median if median > 0 else 0.0
    return Measurement(ms=median, p25=p25, p75=p75, min=ordered[0], max=ordered[-1], runs=len(ordered),
                       spread=spread, method=method, medians=[median])


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
            max_spread: float = MAX_SPREAD, attempts: int = 3, runs: int = 3,
            bench: Callable[..., list[float]] | None = None) -> Measurement:
    """Time ``fn``; repeat while the spread is over ``max_spread``; keep the least noisy attempt."""
    if interpret:
        return _attempts(lambda: wallclock(fn, runs), "wallclock", max_spread, attempts)
    if bench is None:
        from triton.testing import do_bench

        def bench(f: Callable[[], Any]) -> list[float]:
            return list(do_bench(f, warmup=warmup_ms, rep=rep_ms, return_mode="all"))
    return _attempts(lambda: bench(fn), "do_bench", max_spread, attempts)


def _attempts(run: Callable[[], list[float]], method: str, max_spread: float, attempts: int) -> Measurement:
    best: Measurement | None = None
    medians = []
    for attempt in range(1, max(1, attempts) + 1):
        current = summarize(run(), method)
        medians.append(current.ms)
        if best is None or current.spread < best.spread:
            best = current
        if current.spread <= max_spread:
            break
    assert best is not None
    best.attempts = len(medians)
    best.medians = medians
    best.noisy = best.spread > max_spread
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
