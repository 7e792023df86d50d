"""The options, the candidates and the result of one ``kernelrules tune`` run, and its perf-model seeds.

Plain data and two small helpers the search loop (:mod:`kernelrules.tune.driver`) uses; kept apart
so the loop's module holds the loop. ``kernelrules.tune.driver`` re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..config import KernelConfig
from ..predict.ranking import distinct_first
from .gate import Judgement


@dataclass
class TuneOptions:
    """Everything ``kernelrules tune`` takes besides the space file."""

    arch: str | None = None
    trials: int | None = None
    time_budget: float | None = None
    #: Stop asking for candidates once a config times at or under this many milliseconds (a known target: the
    #: shipped config's time, a baseline); None: search the whole budget.
    stop_at_ms: float | None = None
    storage: str | None = None
    study_dir: str | None = None
    study_name: str | None = None
    gpus: list[str] | None = None
    interpret: bool = False
    seed: int | None = 0
    jobs: int | None = None
    compile_timeout: float = 60.0
    bench_timeout: float = 60.0
    sampler: str = "auto"
    stage: str = "compiled"
    startup_trials: int | None = None
    top_k: int = 5
    rounds: int = 5
    #: The perf model's best configs queued first in a new study. 16, not 8: replayed on the H200 suite's measured
    #: costs (seeds ranked by constants fitted without the problem's family), time to within 2% of the best fell from
    #: 38.8 s to 12.2 s on the slowest problem (moe_gemm__small), 8.2x -> 8.9x sooner than TPE (geomean, 42 problems)
    #: (docs/performance.md, "How many perf-model seeds")
    model_seeds: int = 16
    cache_dir: str | None = None
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    max_error: float = 0.01
    timer: str = "held"
    lookahead: int | None = None  # candidates in flight besides one per GPU (None: see Tuner._capacity)
    grace: float = 120.0
    max_duplicates: int = 200
    seeder: Callable[..., list] | None = None
    candidate_filter: Callable[[dict], str | None] | None = None  # another tuner's filter: a reason, or None
    on_record: Callable[[dict], None] | None = None
    on_progress: Callable[[dict], None] | None = None


@dataclass
class Candidate:
    trial: Any
    config: KernelConfig
    key: str
    judgement: Judgement | None = None
    #: When the loop asked for it and when it sent it to a benchmark worker, in seconds on the run's clock: a record's
    #: ``asked_s`` and ``sent_s`` (what waited between: the compile and its verdict, then a free worker).
    asked_s: float | None = None
    sent_s: float | None = None
    #: ``"perf_model"`` for a trial the perf model queued (its trial number follows the model's ranking), else None.
    seeded: str | None = None


def predicted_to_spill(judgement: Judgement | None) -> bool:
    """Whether the config stage predicts register spills (REG004, REG001): such a config is slow to
    compile and rarely the fastest, so it waits until nothing else is left to compile or time."""
    if judgement is None:
        return False
    spill = judgement.facts.get("spill_bytes_predicted")
    return (isinstance(spill, (int, float)) and spill > 0) or any(w.startswith("REG001 ") for w in judgement.warnings)


@dataclass
class TuneResult:
    """What a run produced: this run's records and the study's summary (plain JSON)."""

    records: list[dict]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def perf_model_seeds(configs: Sequence[KernelConfig], arch: Any, problem: Mapping[str, Any], count: int,
                     model: Any = None, facts: Callable[[KernelConfig], Mapping[str, Any] | None] | None = None,
                     ) -> list[KernelConfig]:
    """The ``count`` configs the perf model estimates fastest (none when it cannot judge them), each
    estimate's ``num_stages`` twins after every distinct config (:func:`distinct_first`).

    ``facts`` gives the facts the config stage judged a config on (None or empty where it has none): the resource
    model's predictions made already, which the estimate then reads instead of asking ``model`` again (the same
    estimate; a norm kernel's register predictions were half of its ranking's time)."""
    try:
        from ..predict.perf_general import estimate_any  # the matmul model for M, N, K kernels, else the general one
    except ImportError:
        return []
    scored = []
    for config in configs:
        known = (facts(config) if facts is not None else None) or None
        try:
            estimate = estimate_any(config, arch, problem, model=None if known else model, facts=known)
            scored.append((float(estimate), config))
        except Exception:  # noqa: BLE001 - no grid or sizes the models can read, or a config they cannot
            continue
    scored.sort(key=lambda pair: pair[0])
    return distinct_first(scored)[:count]


__all__ = ["Candidate", "TuneOptions", "TuneResult", "perf_model_seeds", "predicted_to_spill"]
