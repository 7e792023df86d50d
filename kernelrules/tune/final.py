"""The end of a ``kernelrules tune`` run: re-measure the best configs with the baseline, name the winner.

Search timings are taken minutes apart, while the GPU's clocks and temperature drift;
the final ranking therefore times the best few configs and the problem's baseline
(its reference implementation, e.g. torch.matmul) again, interleaved on one worker
(:func:`kernelrules.tune.timing.interleaved`), and ranks by the median over rounds.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from . import records as rec
from .problem import ProblemSpec
from .timing import interleaved


def call(worker: Any, request: tuple, poll: float = 0.5) -> dict:
    """One blocking request to a benchmark worker (which restarts itself on death or time-out)."""
    worker.ensure_ready()
    worker.send(request, "final")
    while True:
        if worker.conn.poll(poll):
            done = worker.handle()
            if done is not None:
                return done[1]
        done = worker.expire()
        if done is not None:
            return done[1]


def reference_label(spec: ProblemSpec) -> str | None:
    """What the baseline is, in words: the reference config, or the reference expression."""
    if spec.reference_config is not None:
        return "the kernel at the reference config (" + ", ".join(
            f"{k}={v}" for k, v in spec.reference_config.items()) + ")"
    return next(iter(spec.reference.values()), None)


def brief(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a trial record that a summary's table of best configs shows."""
    return {k: record.get(k) for k in ("trial", "config", "config_text", "ms", "tflops", "spread", "bottleneck")}


def final_rounds(records: Sequence[Mapping[str, Any]], spec: ProblemSpec, worker: Any, *, top_k: int, rounds: int,
                 interpret: bool) -> dict[str, Any] | None:
    """Time the ``top_k`` best configs and the baseline for ``rounds`` interleaved rounds; None if nothing was timed."""
    from .study import worker_id

    top = rec.best(list(records), top_k)
    if not top:
        return None
    candidates: list[Any] = [("time", r["config"]) for r in top] + [("baseline",)]

    def time_one(request: Any) -> float | None:
        result = call(worker, request)
        if result.get("status") != "ok":
            return None
        return float(result["timing"]["ms"])

    rounds = max(1, rounds)
    measured = interleaved(candidates, time_one, rounds)
    finals = []
    for i, r in enumerate(top):
        times = measured[i]
        if times:
            finals.append({"trial": r["trial"], "config": r["config"], "config_text": r.get("config_text"),
                           "ms": sorted(times)[len(times) // 2], "rounds_ms": times, "search_ms": r["ms"]})
    baseline_times = measured[len(top)]
    finals.sort(key=lambda f: f["ms"])
    return {"top": finals, "winner": finals[0] if finals else None, "rounds": rounds,
            "baseline_ms": sorted(baseline_times)[len(baseline_times) // 2] if baseline_times else None,
            "baseline": spec.baseline or ("harness" if spec.harness else reference_label(spec)),
            "device": worker.info.get("device"), "by": worker_id(), "interpret": interpret, "time": time.time()}
