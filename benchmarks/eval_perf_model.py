"""How well kernelrules.predict.perf_model orders the configs of the H200 sweep.

Reads ``benchmarks/results/h200_sweep_launch.jsonl`` (measured times of
``examples/matmul.py``, fp16, M = N = K = 4096, on an H200) and whatever configs it
holds, learns the kernel's resource model for sm_90 from probe compiles on this CPU,
judges the space with kernelrules' rules (``hopper``, config stage) to get the kept
configs, estimates every measured config on the ``h200`` SKU and prints:

- Spearman's rank correlation between estimated and measured time;
- for k in 1, 5, 10, 20, 50, among the kept configs that were measured: whether the
  fastest measured config, and any config within 2% of it, is in the model's top k, and
  the best measured TFLOP/s inside the top k as a fraction of the overall best;
- held-out checks: the tuned constants refitted (a small grid, by rank correlation) on
  one part of the configs and scored on the other (a seeded random half; and fit on
  BLOCK_M <= 64, test on the larger tiles, where the fastest configs are);
- estimated over measured time, by group, and the two top lists: where the model is wrong.

    python benchmarks/eval_perf_model.py
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from kernelrules.arch import load_arch
from kernelrules.predict.perf_model import DEFAULTS, Constants, estimate
from kernelrules.judge.pipeline import ConfigJudge
from kernelrules.compile.target import KernelTarget
from kernelrules.space import load_space

ROOT = Path(__file__).resolve().parent.parent
LAUNCHES = ROOT / "benchmarks" / "results" / "h200_sweep_launch.jsonl"
COMPILES = ROOT / "benchmarks" / "results" / "h200_sweep_compile.jsonl"
SPACE = ROOT / "examples" / "matmul.space.yaml"
KS = (1, 5, 10, 20, 50)
NEAR_BEST = 0.98  # "within 2% of the best"
#: The grid the held-out checks refit the tuned constants on (sustained_peak stays: it is
#: set from the cuBLAS reference, not fitted).
GRID = {"mma_sync_rate_on_hopper": (0.4, 0.6, 0.8), "l2_bytes_per_clock_per_sm": (32.0, 48.0, 64.0),
        "load_latency_clocks": (1000.0, 1500.0, 2000.0, 3000.0), "overlap_norm": (2.0, 4.0, 8.0)}


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def measurements(path: Path = LAUNCHES) -> tuple[dict[str, dict], list[float]]:
    """(launched configs with a time, by config key; the reference TFLOP/s of torch.matmul)."""
    out, references = {}, []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "reference" in record:
            references.append(record["tflops"])
        elif record.get("launched") and record.get("ms"):
            out[key(record["config"])] = record
    return out, references


def judged_space(space_path: Path = SPACE, arch_name: str = "hopper") -> tuple[Any, set[str], dict[str, Any]]:
    """(the resource model, keys of the configs the rules keep, every config by key)."""
    space = load_space(space_path)
    target = KernelTarget(space.kernel_path, space.kernel_name, space.signature, space.kernel_info(),
                          frozenset(space.fixed))
    configs = list(space.configs())
    pruner = ConfigJudge(target, jobs=2)
    try:
        records, model = pruner.judge_arch(configs, load_arch(arch_name), False, space.problem)
    finally:
        pruner.close()
    kept = {key(r.verdict.config.to_dict()) for r in records if not r.verdict.rejected}
    return model, kept, {key(c.to_dict()): c for c in configs}


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rho (ties get their mean rank): ``suite_report.spearman``, 0.0 where it has none."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from suite_report import spearman as rho

    value = rho(list(xs), list(ys))
    return 0.0 if value is None else value


def estimates(keys: Iterable[str], configs: dict[str, Any], model: Any, constants: Constants = DEFAULTS,
              problem: dict | None = None) -> dict[str, Any]:
    """The model's Estimate of each config on an H200."""
    arch = load_arch("h200")
    problem = problem or {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp16"}
    return {k: estimate(configs[k], arch, problem, model=model, constants=constants) for k in keys}


def top_k(keys: Sequence[str], est: dict[str, Any], measured: dict[str, dict]) -> list[dict[str, Any]]:
    """For each k: best measured config in the estimate's top k? any within 2%? best found / best."""
    ranked = sorted(keys, key=lambda k: est[k].seconds)
    best = max(measured[k]["tflops"] for k in keys)
    best_key = max(keys, key=lambda k: measured[k]["tflops"])
    near = {k for k in keys if measured[k]["tflops"] >= NEAR_BEST * best}
    rows = []
    for k in KS:
        chosen = ranked[:k]
        rows.append({"k": k, "best_in": best_key in chosen, "near_in": bool(near & set(chosen)),
                     "fraction": max(measured[c]["tflops"] for c in chosen) / best})
    return rows


def score(keys: Sequence[str], est: dict[str, Any], measured: dict[str, dict]) -> float:
    return spearman([est[k].seconds for k in keys], [measured[k]["ms"] for k in keys])


def fit(keys: Sequence[str], configs: dict[str, Any], model: Any, measured: dict[str, dict]) -> Constants:
    """The grid point of the refitted constants (GRID) with the best rank correlation on ``keys``."""
    best, best_rho = DEFAULTS, -2.0
    for values in itertools.product(*GRID.values()):
        constants = dataclasses.replace(DEFAULTS, **dict(zip(GRID, values)))
        rho = score(keys, estimates(keys, configs, model, constants), measured)
        if rho > best_rho:
            best, best_rho = constants, rho
    return best


def report_top_k(label: str, keys: Sequence[str], est: dict[str, Any], measured: dict[str, dict],
                 out: Callable[[str], None]) -> None:
    out(f"{label}: {len(keys)} configs, Spearman {score(keys, est, measured):.3f}")
    for row in top_k(keys, est, measured):
        out(f"  top-{row['k']:<3} best measured in it: {'yes' if row['best_in'] else 'no ':3}  "
            f"a config within 2%: {'yes' if row['near_in'] else 'no ':3}  best inside / best: {row['fraction']:.3f}")


def held_out(name: str, fit_keys: list[str], test_keys: list[str], configs: dict[str, Any], model: Any,
             measured: dict[str, dict], out: Callable[[str], None]) -> None:
    constants = fit(fit_keys, configs, model, measured)
    fitted = {f: getattr(constants, f) for f in GRID}
    out(f"held-out ({name}): fitted on {len(fit_keys)} configs: {fitted}")
    report_top_k("  test, fitted constants", test_keys, estimates(test_keys, configs, model, constants), measured, out)
    report_top_k("  test, chosen constants", test_keys, estimates(test_keys, configs, model), measured, out)


def calibration(keys: Sequence[str], configs: dict[str, Any], est: dict[str, Any], measured: dict[str, dict],
                references: list[float], out: Callable[[str], None]) -> None:
    """The measured figures the constants are checked against."""
    gpu = load_arch("h200").sku_data
    peak = gpu["fp16_tensor_tflops_dense"]
    out(f"torch.matmul (cuBLAS): {', '.join(f'{r:.0f}' for r in references)} TFLOP/s = "
        f"{', '.join(f'{r / peak:.2f}' for r in references)} of the H200's {peak} dense fp16 (sustained_peak)")
    best: dict[tuple, tuple[float, str]] = {}
    for k in keys:
        c = configs[k].constexprs
        shape = (c["BLOCK_M"], c["BLOCK_N"], est[k].mma_path)
        best[shape] = max(best.get(shape, (0.0, k)), (measured[k]["tflops"], k))
    ratios = [f"{bm}x{bn} {best[(bm, bn, 'mma_sync')][0] / best[(bm, bn, 'wgmma')][0]:.2f}"
              for bm, bn, path in sorted(best) if path == "wgmma" and (bm, bn, "mma_sync") in best]
    out("best mma.sync / best wgmma TFLOP/s, same tile (mma_sync_rate_on_hopper): " + ", ".join(ratios))
    moved = []
    for bm, bn in ((32, 32), (64, 64), (64, 256), (128, 64), (128, 128)):
        if (bm, bn, "wgmma") in best or (bm, bn, "mma_sync") in best:
            tflops, k = max(best.get((bm, bn, p), (0.0, "")) for p in ("wgmma", "mma_sync"))
            tile_bytes = (bm + bn) * 4096 * 2 * (4096 // bm) * (4096 // bn)  # the sweep: M = N = K = 4096, fp16
            moved.append(f"{bm}x{bn} {tile_bytes / (measured[k]['ms'] * 1e-3) / 1e12:.1f}")
    out("L2 -> SM operand traffic of the fastest config of a tile, TB/s (l2_bytes_per_clock_per_sm): "
        + ", ".join(moved))
    ladder = [(configs[k].num_stages, measured[k]["tflops"]) for k in keys
              if configs[k].constexprs["BLOCK_M"] == configs[k].constexprs["BLOCK_N"] == 128
              and configs[k].constexprs["BLOCK_K"] == 64 and configs[k].num_warps == 4]
    out("128x128x64, 4 warps, TFLOP/s by num_stages (load_latency_clocks): "
        + ", ".join(f"{stages}: {tflops:.0f}" for stages, tflops in sorted(ladder)))
    register_fit(out)


def register_fit(out: Callable[[str], None], path: Path = COMPILES) -> None:
    """Registers per thread minus the accumulator against the operand tiles' registers, over the
    spill-free compiles of the sweep: least squares, and the error of the model's constants."""
    from kernelrules.predict.perf_model import OPERAND_REGISTER_SHARE, REGISTER_BASE

    xs, ys = [], []
    for record in map(json.loads, path.read_text().splitlines()):
        facts, c = record.get("facts") or {}, record["config"]
        if not record.get("ok") or facts.get("spill_bytes") or facts.get("registers", 255) >= 250:
            continue
        threads = 32 * c["num_warps"]
        xs.append((c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] // 2 // threads)
        ys.append(facts["registers"] - c["BLOCK_M"] * c["BLOCK_N"] // threads)
    if not xs:
        return
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    error = sum(abs(REGISTER_BASE + OPERAND_REGISTER_SHARE * x - y) for x, y in zip(xs, ys)) / len(xs)
    out(f"registers - accumulator over {len(xs)} spill-free compiles: least squares {my - slope * mx:.1f} + "
        f"{slope:.2f} x operand registers; the model's {REGISTER_BASE} + {OPERAND_REGISTER_SHARE} x: mean error "
        f"{error:.1f} registers")


def main(out: Callable[[str], None] = print) -> None:
    warnings.simplefilter("ignore")
    measured, references = measurements()
    model, kept, configs = judged_space()
    keys = [k for k in configs if k in measured]  # the space's order: Triton keeps list order on ties
    kept_keys = [k for k in keys if k in kept]
    est = estimates(keys, configs, model)
    out(f"measured configs: {len(keys)} launched of {len(configs)} in the space; kept by the rules (hopper): "
        f"{len(kept)}, of them measured: {len(kept_keys)}")
    out(f"constants: {dataclasses.asdict(DEFAULTS)}")
    calibration(keys, configs, est, measured, references, out)
    out(f"all measured: Spearman {score(keys, est, measured):.3f}")
    report_top_k("kept and measured", kept_keys, est, measured, out)

    rng = random.Random(0)
    shuffled = kept_keys[:]
    rng.shuffle(shuffled)
    half = len(shuffled) // 2
    held_out("seeded random half, seed 0", shuffled[:half], shuffled[half:], configs, model, measured, out)
    small = [k for k in kept_keys if configs[k].constexprs["BLOCK_M"] <= 64]
    large = [k for k in kept_keys if configs[k].constexprs["BLOCK_M"] > 64]
    held_out("fit BLOCK_M <= 64, test BLOCK_M > 64", small, large, configs, model, measured, out)

    errors(kept_keys, configs, est, measured, out)
    extremes(kept_keys, configs, est, measured, out)
    unmeasured = [k for k in configs if k in kept and k not in measured]
    if unmeasured:
        other = estimates(unmeasured, configs, model)
        fastest = min(est[k].seconds for k in kept_keys)
        above = sorted((k for k in unmeasured if other[k].seconds < fastest), key=lambda k: other[k].seconds)
        out(f"kept but not measured: {len(unmeasured)}; estimated faster than every measured config: {len(above)}"
            + (": " + ", ".join(f"{describe(configs[k])} ({other[k].tflops:.0f})" for k in above) if above else ""))


def errors(keys: Sequence[str], configs: dict[str, Any], est: dict[str, Any], measured: dict[str, dict],
           out: Callable[[str], None]) -> None:
    """Estimated over measured time: overall, and by the groups where the model errs."""
    def ratios(subset: Iterable[str]) -> str:
        values = sorted(est[k].seconds / (measured[k]["ms"] * 1e-3) for k in subset)
        if not values:
            return "-"
        pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
        return f"median {pick(0.5):.2f} (10%-90%: {pick(0.1):.2f}-{pick(0.9):.2f}, n={len(values)})"

    out(f"estimated / measured time, kept configs: {ratios(keys)}")
    for stages in sorted({configs[k].num_stages for k in keys}):
        out(f"  num_stages={stages}: {ratios(k for k in keys if configs[k].num_stages == stages)}")
    for path in ("wgmma", "mma_sync"):
        out(f"  {path}: {ratios(k for k in keys if est[k].mma_path == path)}")
    out(f"  predicted to spill (> 255 registers): {ratios(k for k in keys if est[k].registers > 255)}")
    worst = sorted(keys, key=lambda k: est[k].seconds / measured[k]["ms"])[:5]
    out("  most optimistic: " + "; ".join(
        f"{describe(configs[k])} {est[k].mma_path}: {measured[k]['tflops']:.0f} measured, {est[k].tflops:.0f} estimated"
        for k in worst))


def extremes(keys: Sequence[str], configs: dict[str, Any], est: dict[str, Any], measured: dict[str, dict],
             out: Callable[[str], None]) -> None:
    """The fastest measured configs with the model's rank, and the model's top with the measured rank."""
    ranked = sorted(keys, key=lambda k: est[k].seconds)
    by_speed = sorted(keys, key=lambda k: -measured[k]["tflops"])
    position = {k: i + 1 for i, k in enumerate(ranked)}
    speed_rank = {k: i + 1 for i, k in enumerate(by_speed)}
    out("fastest measured (kept): measured TFLOP/s, estimated TFLOP/s, rank by the model, bound")
    for k in by_speed[:8]:
        out(f"  {describe(configs[k])}: {measured[k]['tflops']:.0f}, {est[k].tflops:.0f}, #{position[k]}, "
            f"{est[k].bound}")
    tied = sum(1 for k in keys if est[k].seconds == est[ranked[0]].seconds)
    out(f"the model's top 8 ({tied} exactly tied for first): measured TFLOP/s, estimated TFLOP/s, measured rank, "
        "bound")
    for k in ranked[:8]:
        out(f"  {describe(configs[k])}: {measured[k]['tflops']:.0f}, {est[k].tflops:.0f}, #{speed_rank[k]}, "
            f"{est[k].bound}")


def describe(config: Any) -> str:
    c = config.constexprs
    return f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{config.num_warps} s{config.num_stages}"


if __name__ == "__main__":
    main()
