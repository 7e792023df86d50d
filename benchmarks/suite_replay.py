"""Replay tuning strategies on the suite's measured per-config costs: time to a config within 2% of the best.

    python benchmarks/suite_replay.py [--seeds 5] [--families gemm,softmax] [--sweep-truth] [--out PATH]
        [--model-seeds N] [--held-out benchmarks/results/perf_model_fit.json]

Every strategy proposes configs of a problem's space one at a time; a proposal costs
what the GPU measured for that config, charged on one clock (no parallelism,
for every strategy alike). Run times, and the best that "within 2%" is measured from,
are the suite's truth (``suite_truth.py``: the held re-timing for the microsecond
problems, the sweep's ``do_bench`` elsewhere; ``--sweep-truth``: the sweep's alone);
compile times, launch failures and correctness are the sweep's:

* a compile: the config's cold compile time (the longest the sweep recorded for the same
  config across the family's shapes: a later shape may have hit the Triton cache);
* a timing: ``BENCH_FIXED_S`` (Triton's ``do_bench`` warm-up and repetitions, 25 + 100 ms,
  plus the correctness check) plus ``BENCH_RUNS`` launches of the config's own time;
  a config the re-timing did not time costs its compile and ``BENCH_FIXED_S`` and never
  counts as within 2% (its sweep time is on the other timer);
* a launch failure costs its compile; a config rejected by kernelrules' config stage
  costs nothing (microseconds); one rejected at the compiled stage costs its compile.

Strategies (Optuna 4, seeded; the median over ``--seeds`` seeds):

* ``autotune``: Triton's autotuner over the whole space: every config compiled and timed,
  the choice known only at the end (its time is the whole sweep's cost);
* ``random``: configs in a random order, raw space;
* ``tpe``: Optuna's multivariate TPE on the raw space (launch failures infeasible);
* ``kernelrules``: what ``kernelrules tune`` does: the perf model's best configs (``model_seeds``, 16) that
  pass the config stage first, then Sobol points and multivariate TPE (its ``auto``
  sampler, deduplicated as tune's is: no config proposed twice) through the rules gate
  (config stage, then compiled stage).

The perf model ranks with the committed constants, fitted on every family (in sample); ``--held-out`` ranks each
problem the general model judges with the constants fitted without its family instead (the matmul model has no
fitted constants). ``--model-seeds`` replays another seed count than ``tune``'s default.

A repeated proposal costs nothing and is not counted; a strategy stops at the first
timed config within 2% of the best, or after ``3 x`` the space's size in proposals
(*not reached*). Writes ``benchmarks/results/suite/replay.json`` (``truth`` names the truth used).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_truth  # noqa: E402  (the sweep's records, held times where re-timed)
from suite_report import RESULTS, good, key, load  # noqa: E402
from kernelrules.tune.options import TuneOptions  # noqa: E402

BENCH_FIXED_S = 0.15
BENCH_RUNS = 30
MODEL_SEEDS = TuneOptions().model_seeds  # tune's default
STARTUP_TRIALS = 12
STRATEGIES = ("autotune", "random", "tpe", "kernelrules")


class Costs:
    """What each config of one problem costs and gives, from the sweep and the judge."""

    def __init__(self, data: dict, cold: dict[str, float]) -> None:
        self.records = {key(r["config"]): r for r in data["configs"]}
        verdicts = {key(r["config"]): r for r in (data["judge"] or {}).get("records", [])}
        self.config_reject = {k: verdicts.get(k, {}).get("verdict") == "reject" for k in self.records}
        self.compiled_reject = {k: self.config_reject[k] or r["compile"].get("verdict") == "reject"
                                for k, r in self.records.items()}
        self.estimate = {k: verdicts.get(k, {}).get("perf_model_s") for k in self.records}
        self.cold = cold
        timed = [r["timing"]["ms"] for r in data["configs"] if good(r)]
        self.best = min(timed) if timed else None

    def compile_s(self, k: str) -> float:
        return self.cold.get(k, self.records[k]["compile"].get("seconds", 0.0))

    def run(self, k: str) -> tuple[float, float | None]:
        """(seconds the config costs when compiled and timed, its ms or None if it cannot serve)."""
        r = self.records[k]
        cost = self.compile_s(k)
        if r.get("untimed"):  # timed by the sweep only: not compared on the held timer
            return cost + BENCH_FIXED_S, None
        if not good(r):
            return cost, None
        ms = r["timing"]["ms"]
        return cost + BENCH_FIXED_S + BENCH_RUNS * ms / 1000, ms

    def near(self, ms: float | None) -> bool:
        return ms is not None and self.best is not None and ms <= self.best * 1.02


def cold_compiles(loaded: dict) -> dict[str, dict[str, float]]:
    """Per family, the longest compile seen for each config across its shapes."""
    out: dict[str, dict[str, float]] = {}
    for name, data in loaded["problems"].items():
        family = out.setdefault(name.split("__")[0], {})
        for r in data["configs"]:
            k = key(r["config"])
            family[k] = max(family.get(k, 0.0), r["compile"].get("seconds", 0.0))
    return out


def autotune(costs: Costs, order: list[str], seed: int) -> float | None:
    total = sum(costs.run(k)[0] for k in order)
    return total if any(costs.near(costs.run(k)[1]) for k in order) else None


def random_order(costs: Costs, order: list[str], seed: int) -> float | None:
    shuffled = list(order)
    random.Random(seed).shuffle(shuffled)
    clock = 0.0
    for k in shuffled:
        cost, ms = costs.run(k)
        clock += cost
        if costs.near(ms):
            return clock
    return None


def _optuna_loop(costs: Costs, space, sampler, gate: bool, seeds: list[str]) -> float | None:
    """Ask-and-tell over the space with measured costs; the clock when a config within 2% is timed."""
    import optuna
    from optuna.trial import TrialState

    from kernelrules.tune.study import ParamCodec

    codec = ParamCodec(space)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    for k in seeds:
        study.enqueue_trial(codec.encode(json.loads(k)))
    seen: dict[str, float | None] = {}
    clock = 0.0
    for _ in range(3 * len(costs.records)):
        trial = study.ask(codec.distributions)
        k = key(codec.decode(trial.params))
        if k not in costs.records:  # outside the space's constraints
            trial.set_user_attr("kr_feasible", False)
            study.tell(trial, state=TrialState.FAIL)
            continue
        if k in seen:
            ms = seen[k]
        else:
            if gate and costs.config_reject[k]:
                ms = None
            elif gate and costs.compiled_reject[k]:
                clock += costs.compile_s(k)
                ms = None
            else:
                cost, ms = costs.run(k)
                clock += cost
            seen[k] = ms
            if costs.near(ms):
                return clock
            if len(seen) == len(costs.records):
                return None
        trial.set_user_attr("kr_feasible", ms is not None)
        if ms is None:
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, ms)
    return None


def tpe(costs: Costs, space, seed: int) -> float | None:
    from kernelrules.tune.samplers import make_sampler
    from kernelrules.tune.study import ParamCodec

    sampler = make_sampler("tpe", ParamCodec(space), seed=seed, n_startup=STARTUP_TRIALS, dedup=False)  # Optuna's own
    return _optuna_loop(costs, space, sampler, gate=False, seeds=[])


def set_model_seeds(count: int) -> None:
    """Replay kernelrules with ``count`` perf-model seeds (tune's ``model_seeds``)."""
    global MODEL_SEEDS
    MODEL_SEEDS = count


def kernelrules_tune(costs: Costs, space, seed: int) -> float | None:
    from kernelrules.config import KernelConfig
    from kernelrules.predict.ranking import distinct_first
    from kernelrules.tune.samplers import make_sampler
    from kernelrules.tune.study import ParamCodec

    ranked = sorted((e, k) for k, e in costs.estimate.items() if e is not None and not costs.config_reject[k])
    configs = {k: KernelConfig.from_dict(costs.records[k]["config"]) for _e, k in ranked}
    record_key = {config.key(): k for k, config in configs.items()}
    ordered = distinct_first([(e, configs[k]) for e, k in ranked])  # as tune.driver.perf_model_seeds orders them
    seeds = [record_key[c.key()] for c in ordered[:MODEL_SEEDS]]
    sampler = make_sampler("auto", ParamCodec(space), seed=seed, n_startup=STARTUP_TRIALS)
    return _optuna_loop(costs, space, sampler, gate=True, seeds=seeds)


def held_out(costs: Costs, data: dict, space, constants) -> None:
    """Re-rank a problem the general model ranks with ``constants`` fitted without its family (a fold of
    ``perf_model_fit.py``), from the judge's predicted facts; the matmul model's problems keep the judge's estimates
    (it has no fitted constants)."""
    import numpy as np

    from kernelrules.arch import load_arch
    from kernelrules.predict.perf_general import features, matmul_judges, seconds

    problem, fixed = dict(space.problem), dict(space.fixed)
    if matmul_judges({**fixed, **data["configs"][0]["config"]}, problem):
        return
    arch = load_arch("h200")
    verdicts = {key(r["config"]): r for r in (data["judge"] or {}).get("records", [])}
    for k in costs.records:
        if costs.estimate.get(k) is None:
            continue  # the judge could not estimate it: neither can the fold
        f = features({**fixed, **json.loads(k)}, arch, problem, dict(verdicts[k].get("predicted") or {}))
        costs.estimate[k] = float(seconds({n: np.array([v], dtype=float) for n, v in f.items()}, constants)[0])


def replay_problem(name: str, data: dict, cold: dict[str, float], seeds: int, folds: dict | None = None) -> dict:
    from kernelrules.space import load_space

    family, shape = name.split("__")
    space = load_space(REPO / "benchmarks" / "suite" / family / f"{shape}.tune.yaml")
    costs = Costs(data, cold)
    if folds is not None:
        held_out(costs, data, space, folds[family])
    order = [key(c.to_dict()) for c in space.configs()]
    out: dict = {}
    runs = {
        "autotune": lambda s: autotune(costs, order, s),
        "random": lambda s: random_order(costs, order, s),
        "tpe": lambda s: tpe(costs, space, s),
        "kernelrules": lambda s: kernelrules_tune(costs, space, s),
    }
    for strategy, fn in runs.items():
        values = [fn(s) for s in range(1 if strategy == "autotune" else seeds)]
        reached = [v for v in values if v is not None]
        out[strategy] = round(statistics.median(reached), 2) if len(reached) * 2 > len(values) else None
        out[f"{strategy}_runs"] = [None if v is None else round(v, 2) for v in values]
    return out


def summarize(problems: dict) -> list[str]:
    """Suite-level lines: geometric-mean ratios against Triton's autotuner and TPE."""
    lines = []
    for other in ("autotune", "random", "tpe"):
        ratios = [p[other] / p["kernelrules"] for p in problems.values()
                  if p.get(other) and p.get("kernelrules")]
        if ratios:
            geo = statistics.geometric_mean(ratios)
            faster = sum(r > 1 for r in ratios)
            lines.append(f"`kernelrules` reached the 2% band {geo:.1f}× sooner than `{other}` (geometric mean over "
                         f"{len(ratios)} problems; sooner in {faster} of them).")
    missing = [n for n, p in problems.items() if p.get("kernelrules") is None]
    if missing:
        lines.append(f"`kernelrules` did not reach the band in the median seed for: {', '.join(missing)}.")
    return lines


def untimed_configs(loaded: dict) -> int:
    """Configs the sweep timed that the re-timing did not (never compared on the other timer)."""
    return sum(bool(r.get("untimed")) for data in loaded["problems"].values() for r in data["configs"])


def earlier_problems(path: Path, truth: str) -> dict:
    """The problems of an earlier replay on the same truth (kept when ``--families`` replays a few)."""
    old = json.loads(path.read_text()) if path.exists() else {}
    return dict(old.get("problems", {})) if old.get("truth", "sweep") == truth else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--families", default="")
    parser.add_argument("--sweep-truth", action="store_true", help="score on the sweep's do_bench times alone")
    parser.add_argument("--out", default=str(RESULTS / "replay.json"))
    parser.add_argument("--model-seeds", type=int, default=MODEL_SEEDS, help="kernelrules' perf-model seeds "
                        f"(default: tune's, {MODEL_SEEDS})")
    parser.add_argument("--held-out", metavar="FIT_JSON", help="rank with the general model's constants fitted "
                        "without each problem's family (the folds of a perf_model_fit.py --write file)")
    args = parser.parse_args()
    set_model_seeds(args.model_seeds)
    folds = None
    if args.held_out:
        from kernelrules.predict.perf_general import Constants

        folds = {fam: Constants(**v) for fam, v in json.loads(Path(args.held_out).read_text())["folds"].items()}
    warnings.simplefilter("ignore")
    suite_truth.SWEEP_ONLY = args.sweep_truth
    truth = "sweep" if args.sweep_truth else "held where re-timed"
    loaded = load()
    cold = cold_compiles(loaded)
    chosen = set(filter(None, args.families.split(",")))
    path = Path(args.out)
    problems = earlier_problems(path, truth)
    for name, data in loaded["problems"].items():
        if chosen and name.split("__")[0] not in chosen and name not in chosen:
            continue
        problems[name] = replay_problem(name, data, cold[name.split("__")[0]], args.seeds, folds)
        print(name, {s: problems[name][s] for s in STRATEGIES}, flush=True)
    method = (f"Replayed on the measured costs (`benchmarks/suite_replay.py`, {args.seeds} seeds, median; one "
              f"clock: cold compile time of each config plus {BENCH_FIXED_S} s and {BENCH_RUNS} launches for each "
              "timing; config-stage rejections free, compiled-stage ones cost the compile). `autotune` is Triton's "
              "autotuner over the whole space (it knows its choice only at the end); `random` and `tpe` search the "
              f"raw space; `kernelrules` is `kernelrules tune`'s policy ({MODEL_SEEDS} perf-model seeds, Sobol then "
              "TPE, the rules gate)" + (", its seeds ranked leave-one-family-out." if folds else "."))
    out = {"strategies": list(STRATEGIES), "method": method, "seeds": args.seeds, "model_seeds": MODEL_SEEDS,
           "held_out": bool(folds), "problems": problems,
           "summary": summarize(problems), "truth": truth, "untimed_configs": untimed_configs(loaded)}
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    for line in out["summary"]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
