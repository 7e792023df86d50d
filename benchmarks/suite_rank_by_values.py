"""Ranking a suite problem's configs before compiling them: from their values alone, against compiled facts.

``kernelrules.autotune(perf_model=True, top_k=k)`` ranks a matmul-like list (integer sizes M, N, K)
from the configs' values and compiles only the ``k`` it keeps (docs/tuners.md); with compiled facts it
would rank on those. For every suite problem the matmul model takes, this ranks the configs the H200
sweep timed both ways (``estimate_any(..., facts={})`` and ``facts=`` the sweep's compiled facts) and
prints, per problem and in all, whether the top ``k`` holds a config within 2% of the sweep's best.
CPU only, no compile.

    python benchmarks/suite_rank_by_values.py [--top-k 3,5] [--arch h200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_truth  # noqa: E402  (the sweep's records, held times where re-timed)
from suite_sweep import RESULTS, problem_name, problems  # noqa: E402

NEAR = 1.02


def timed_configs(name: str) -> list[tuple[dict, float, dict]]:
    """(config, measured ms, compiled facts) of every config the sweep timed for one problem."""
    rows = []
    for record in suite_truth.config_records(name, RESULTS):
        timing = record.get("timing") or {}
        if timing.get("ms") and record.get("correct", True):
            rows.append((record["config"], timing["ms"], (record.get("compile") or {}).get("facts") or {}))
    return rows


def near_best_in_top(estimates: list[float], times: list[float], k: int) -> float:
    """The best measured time among the ``k`` lowest estimates, over the best measured time."""
    order = sorted(range(len(times)), key=lambda i: estimates[i])[:k]
    return min(times[i] for i in order) / min(times)


def main() -> int:
    from kernelrules.arch import load_arch
    from kernelrules.config import KernelConfig
    from kernelrules.predict.perf_general import estimate_any, matmul_judges
    from kernelrules.space import load_space

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top-k", default="3,5")
    parser.add_argument("--arch", default="h200")
    args = parser.parse_args()
    ks = [int(k) for k in args.top_k.split(",")]
    arch = load_arch(args.arch)
    totals = {(how, k): 0 for how in ("values", "facts") for k in ks}
    count = 0
    for path in problems(set()):
        name = problem_name(path)
        problem = dict(load_space(path).problem)
        if not matmul_judges(None, problem) or not (RESULTS / f"{name}.jsonl").exists():
            continue
        rows = timed_configs(name)
        if not rows:
            continue
        count += 1
        times = [ms for _, ms, _ in rows]
        line = [f"{name:28s} {len(rows):4d} timed"]
        for how in ("values", "facts"):
            estimates = []
            for config, _, facts in rows:
                kernel_config = KernelConfig.from_dict(config)
                try:
                    estimates.append(estimate_any(kernel_config, arch, problem, facts={} if how == "values" else facts))
                except ValueError:
                    estimates.append(float("inf"))
            for k in ks:
                ratio = near_best_in_top(estimates, times, k)
                totals[(how, k)] += ratio <= NEAR
                line.append(f"{how} top {k} {ratio:.3f}")
        print("  ".join(line))
    print(f"\n{count} matmul-like problems; top k holds a config within 2% of the sweep's best:")
    for k in ks:
        print(f"  top {k}: from the configs' values {totals[('values', k)]}/{count}, "
              f"from compiled facts {totals[('facts', k)]}/{count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
