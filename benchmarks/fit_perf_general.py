"""Fit the general perf model's constants over the H200 suite; validate leave-one-family-out.

    python benchmarks/fit_perf_general.py [--write] [--rescore] [--problems gemm__large,...] [--registers]

Reads the suite's truth (``benchmarks/results/suite/<problem>.jsonl``: launched, correct,
timed configs), the config-stage predictions of ``<problem>.judge.json`` (predicted
registers, shared memory) and the space files (sizes, grid, bytes, FLOPs). Computes every
config's features once (:func:`kernelrules.predict.perf_general.features`), then searches the
constants (a coordinate search over a log grid, a few hundred vectorised evaluations) to
minimise, over problems, ``(1 - Spearman) / 2 + [top 5 misses the 2% band] + [top 1
misses it] / 2``. One fit on all 14 families gives the committed constants; 14 more,
each without one family, rank the held-out family. Prints the per-problem table; with
``--write`` writes ``benchmarks/results/perf_general_fit.json``.

The top-k figures follow ``suite_report.py``: ranked (:func:`ranked`, the tools' order) among the configs the config stage
keeps; Spearman over every timed config. A second table scores ``estimate_any`` (the
matmul model where it judges the kernel, the general model elsewhere) on the same terms.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernelrules.config import KernelConfig  # noqa: E402
from kernelrules.predict.perf_general import FITTED, Constants, features, seconds  # noqa: E402
from kernelrules.predict.ranking import distinct_first, twin_key  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
import suite_truth  # noqa: E402  (the sweep's records, held times where re-timed)

RESULTS = REPO / "benchmarks" / "results" / "suite"
SUITE = REPO / "benchmarks" / "suite"
OUT = REPO / "benchmarks" / "results" / "perf_general_fit.json"
#: The search grid per constant: multiplicative steps around the current value, within bounds.
BOUNDS = {"bandwidth_fraction": (0.5, 1.0), "latency_clocks": (300.0, 6000.0), "inflight_elements": (4.0, 256.0),
          "program_latencies": (0.0, 8.0), "l2_bytes_per_clock_per_sm": (16.0, 128.0),
          "sustained_peak": (0.4, 1.0), "ops_per_element": (0.5, 32.0), "ops_per_step": (0.0, 512.0), "l2_revisit": (0.0, 2.0), "l2_usable_fraction": (0.1, 1.0), "spill_factor": (0.0, 32.0),
          "overlap_norm": (1.0, 8.0), "thread_clocks": (0.0, 64.0)}
STEPS = (0.5, 0.7, 0.85, 1.0, 1.2, 1.4, 2.0)


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def load_problem(name: str, arch) -> dict | None:
    """One problem's feature arrays, measured times and config-stage rejections."""
    family, shape = name.split("__")
    space = yaml.safe_load((SUITE / family / f"{shape}.tune.yaml").read_text())
    problem = space["problem"]
    fixed = space.get("fixed") or {}
    lines = suite_truth.config_records(name, RESULTS)
    judge_path = RESULTS / f"{name}.judge.json"
    judge = json.loads(judge_path.read_text()) if judge_path.exists() else {"records": []}
    verdicts = {key(r["config"]): r for r in judge["records"]}
    rows, seen = [], set()
    for r in lines:
        if r["launch"].get("status") != "ok" or r.get("correct") is not True \
                or "timing" not in r or key(r["config"]) in seen:
            continue
        seen.add(key(r["config"]))
        v = verdicts.get(key(r["config"]), {})
        facts = dict(v.get("predicted") or {})
        rows.append((r["config"], facts, float(r["timing"]["ms"]), v.get("verdict") == "reject", v.get("perf_model_s")))
    if len(rows) < 3:
        return None
    feats = [features({**fixed, **c}, arch, problem, facts) for c, facts, *_ in rows]
    arrays = {k: np.array([f[k] for f in feats], dtype=float) for k in feats[0]}
    return {"name": name, "family": family, "f": arrays, "ms": np.array([r[2] for r in rows]),
            "rejected": np.array([r[3] for r in rows]), "configs": [r[0] for r in rows],
            "facts": [r[1] for r in rows], "problem": problem, "fixed": fixed,
            "old": [r[4] for r in rows]}


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of two arrays: ``suite_report.spearman``, 0.0 where it has none."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from suite_report import spearman as rho

    value = rho([float(x) for x in a], [float(y) for y in b])
    return 0.0 if value is None else value


def ranked(p: dict, est: np.ndarray) -> np.ndarray:
    """The kept configs' indices in the order the tools rank them: by estimate (stable), each
    ``num_stages`` twin with the same estimate after every distinct config
    (:func:`kernelrules.predict.ranking.distinct_first`)."""
    keep = np.flatnonzero(~p["rejected"])
    order = keep[np.argsort(est[keep], kind="stable")]
    if "twin_keys" not in p:
        p["twin_keys"] = [twin_key(KernelConfig.from_dict(c)) for c in p["configs"]]
    keys = p["twin_keys"]
    return np.array(distinct_first([(est[i], i) for i in order], identity=keys.__getitem__), dtype=int)


def score(p: dict, est: np.ndarray) -> dict:
    """Top 1 / top 5 within 2% of the best (among kept configs, in the tools' order), Spearman."""
    best = p["ms"].min()
    order = ranked(p, est)
    return {"top1": bool(p["ms"][order[0]] <= best * 1.02), "top5": bool((p["ms"][order[:5]] <= best * 1.02).any()),
            "first_pick": float(p["ms"][order[0]] / best - 1), "top5_regret": float(p["ms"][order[:5]].min() / best - 1),
            "spearman": spearman(est, p["ms"])}


def loss(problems: list[dict], k: Constants) -> float:
    total = 0.0
    for p in problems:
        s = score(p, seconds(p["f"], k))
        total += (1 - s["spearman"]) / 2 + miss(s["top5_regret"]) + 0.5 * miss(s["first_pick"])
    return total / len(problems)


def miss(regret: float) -> float:
    """0 within the 2% band, else 0.5 rising to 1 at 20% slower: a near miss costs less."""
    return 0.0 if regret <= 0.02 else min(1.0, 0.5 + regret / 0.4)


def fit(problems: list[dict], start: Constants, rounds: int = 3) -> Constants:
    """Coordinate search: each constant over STEPS x its value (within BOUNDS), a few rounds."""
    best, best_loss = start, loss(problems, start)
    for _ in range(rounds):
        improved = False
        for name, (lo, hi) in BOUNDS.items():
            base = getattr(best, name)
            for step in STEPS:
                value = min(hi, max(lo, base * step if base else step - 0.5))
                trial = replace(best, **{name: value})
                val = loss(problems, trial)
                if val < best_loss - 1e-9:
                    best, best_loss, improved = trial, val, True
        if not improved:
            break
    return best


def main() -> int:
    from kernelrules.arch import load_arch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(REPO)}")
    parser.add_argument("--problems", default="", help="comma-separated problem names (default: all)")
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--sweep-truth", action="store_true", help="score on the sweep's do_bench times alone")
    parser.add_argument("--rescore", action="store_true",
                        help="score the committed constants and folds (no search), e.g. after a change of the scoring")
    parser.add_argument("--registers", action="store_true",
                        help="print the least-squares register fallback (perf_general.REGISTER_*) and stop")
    args = parser.parse_args()
    suite_truth.SWEEP_ONLY = args.sweep_truth
    arch = load_arch(args.arch)
    names = [n for n in args.problems.split(",") if n] or sorted(
        p.name[:-6] for p in RESULTS.glob("*__*.jsonl"))
    t0 = time.time()
    problems = [p for p in (load_problem(n, arch) for n in names) if p is not None]
    t1 = time.time()
    if args.registers:
        for label, (base, per, n) in register_fallback(problems).items():
            print(f"{label}: registers = {base:.1f} + {per:.2f} x per thread ({n} spill-free compiles)")
        return 0
    families = sorted({p["family"] for p in problems})
    if args.rescore:  # the committed constants and folds, scored as the tools rank now
        saved = json.loads(OUT.read_text())
        whole = Constants(**saved["constants"])
        fold_constants = {fam: Constants(**saved["folds"][fam]) for fam in families}
    else:
        whole = fit(problems, FITTED.get(f"sm_{arch.sm}", Constants()))
        fold_constants = {fam: fit([p for p in problems if p["family"] != fam], whole, rounds=2) for fam in families}
    folds = {fam: asdict(k) for fam, k in fold_constants.items()}
    held = {p["name"]: score(p, seconds(p["f"], fold_constants[p["family"]])) for p in problems}
    t2 = time.time()
    insample = {p["name"]: score(p, seconds(p["f"], whole)) for p in problems}
    print(f"{len(problems)} problems, {sum(len(p['ms']) for p in problems)} timed configs; features "
          f"{t1 - t0:.1f} s, fits {t2 - t1:.1f} s")
    print("fitted on all families: " + ", ".join(f"{k}={v:.4g}" for k, v in asdict(whole).items()))
    print()
    print("| problem | top 1 (held out) | top 5 (held out) | first pick | Spearman (held out) | Spearman (all) |")
    print("|---|---|---|---|---|---|")
    for p in problems:
        h, a = held[p["name"]], insample[p["name"]]
        print(f"| {p['name']} | {'yes' if h['top1'] else 'no'} | {'yes' if h['top5'] else 'no'} | "
              f"{h['first_pick'] * 100:+.1f}% | {h['spearman']:.2f} | {a['spearman']:.2f} |")
    summary = summarise(held)
    print()
    print(f"leave-one-family-out: top 5 within 2% in {summary['top5']}, top 1 in {summary['top1']}, "
          f"median Spearman {summary['median_spearman']:.3f}")
    s_in = summarise(insample)
    print(f"fitted on all: top 5 {s_in['top5']}, top 1 {s_in['top1']}, median Spearman {s_in['median_spearman']:.3f}")
    combined, matmul = combined_scores(problems, held)
    s_c = summarise(combined)
    print(f"estimate_any (matmul model on {', '.join(matmul) or 'none'}; general, held out, elsewhere): top 5 "
          f"{s_c['top5']}, top 1 {s_c['top1']}, median Spearman {s_c['median_spearman']:.3f}")
    for name in matmul:
        g, m = held[name], combined[name]
        print(f"  {name}: matmul model top1/top5/Spearman {m['top1']}/{m['top5']}/{m['spearman']:.2f}; "
              f"general (held out) {g['top1']}/{g['top5']}/{g['spearman']:.2f}")
    if args.write:
        OUT.write_text(json.dumps({"arch": f"sm_{arch.sm}", "sku": args.arch, "truth": "sweep" if args.sweep_truth else "held where re-timed", "constants": asdict(whole),
                                   "folds": folds, "held_out": held, "all": insample,
                                   "estimate_any": combined,
                                   "summary": {"held_out": summary, "all": s_in, "estimate_any": s_c}}, indent=1) + "\n")
        print(f"wrote {OUT.relative_to(REPO)}")
    return 0


def combined_scores(problems: list[dict], held: dict) -> tuple[dict, list[str]]:
    """What estimate_any ranks by: the matmul model's estimates (the judge's recorded
    ``perf_model_s``) where it judges the kernel, the held-out general model elsewhere."""
    from kernelrules.predict.perf_general import matmul_judges

    out, matmul = {}, []
    for p in problems:
        sizes = {k: v for k, v in p["problem"].items() if isinstance(v, int)}
        old = p["old"]
        if matmul_judges({**p["fixed"], **p["configs"][0]}, {**sizes, "grid": p["problem"].get("grid")}) \
                and all(v is not None for v in old):
            out[p["name"]] = score(p, np.array(old, dtype=float))
            matmul.append(p["name"])
        else:
            out[p["name"]] = held[p["name"]]
    return out, matmul


def register_fallback(problems: list[dict]) -> dict[str, tuple[float, float, int]]:
    """Least squares of the compiled registers (spill-free compiles) on what the fallback of
    ``perf_general.features`` reads: elements per thread of the tile (kernels without a dot),
    the resource model's ``register_demand_per_thread`` (dot kernels)."""
    pairs: dict[str, list[tuple[float, float]]] = {"elements per thread (no dot)": [], "demand per thread (dot)": []}
    for p in problems:
        compiled = {}
        for line in (RESULTS / f"{p['name']}.jsonl").read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            facts = (r.get("compile") or {}).get("facts") or {}
            if r.get("kind") == "config" and facts.get("registers") and not facts.get("spill_bytes"):
                compiled[key(r["config"])] = float(facts["registers"])
        f = p["f"]
        for i, config in enumerate(p["configs"]):
            regs = compiled.get(key(config))
            demand = p["facts"][i].get("register_demand_per_thread")
            if regs is None or p["facts"][i].get("registers"):
                continue
            if f["dot"][i] and demand is not None:
                pairs["demand per thread (dot)"].append((float(demand), regs))
            elif not f["dot"][i]:
                pairs["elements per thread (no dot)"].append((f["tile_load"][i] / f["threads_per_program"][i], regs))
    out = {}
    for label, xy in pairs.items():
        x, y = np.array(xy).T
        base, per = np.linalg.lstsq(np.vstack([np.ones_like(x), x]).T, y, rcond=None)[0]
        out[label] = (float(base), float(per), len(x))
    return out


def summarise(scores: dict) -> dict:
    vals = list(scores.values())
    n = len(vals)
    return {"problems": n, "top5": f"{sum(v['top5'] for v in vals)}/{n}", "top1": f"{sum(v['top1'] for v in vals)}/{n}",
            "median_spearman": float(np.median([v["spearman"] for v in vals]))}


if __name__ == "__main__":
    sys.exit(main())
