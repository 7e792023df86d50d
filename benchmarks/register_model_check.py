"""Predicted registers and spills of the suite's kernels without tl.dot, against the H200's compiled facts.

For every problem of the families below, the resource model is learned as ``kernelrules
prune`` learns it (probe compiles on sm_90 through the compile pool and its cache; the
register fit of ``kernelrules/predict/register_model.py``), then every timed config of
``benchmarks/results/suite/<problem>.jsonl`` is predicted without compiling and set
against its recorded ``registers`` and ``spill_bytes``. Prints, per problem and in all:
exact / within 8 / within 16 registers, predicted vs real spills (true/false
positives/negatives), and for each candidate reject threshold on the predicted spill
bytes how many configs it rejects, how many of them are within 5% of their problem's
best and the fastest rejected one. ``--json PATH`` writes the per-config rows.

    .venv/bin/python benchmarks/register_model_check.py [--families ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FAMILIES = "softmax,layernorm,rmsnorm,row_sum,rope,swiglu,pointwise,cross_entropy"
THRESHOLDS = (64, 128, 256, 320, 384, 512, 1024)


def check(path: Path, arch, jobs: int) -> list[dict]:
    from kernelrules.config import KernelConfig
    from kernelrules.judge.pipeline import ConfigJudge
    from kernelrules.compile.target import KernelTarget
    from kernelrules.space import load_space

    family, shape = path.stem.split("__")
    space = load_space(ROOT / "benchmarks" / "suite" / family / f"{shape}.tune.yaml")
    target = KernelTarget(space.kernel_path, space.kernel_name, space.signature, space.kernel_info(),
                          frozenset(space.fixed))
    pruner = ConfigJudge(target, jobs=jobs)
    try:
        model = pruner.model_for(list(space.configs()), arch)
    finally:
        pruner.close()
    if model is None or model.registers is None:
        print(f"{path.stem}: no register model", flush=True)
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    timed = [r for r in rows if r.get("kind") == "config" and (r.get("timing") or {}).get("ms")
             and (r["compile"].get("facts") or {}).get("registers") is not None]
    best = min(r["timing"]["ms"] for r in timed)
    out = []
    for r in timed:
        config = KernelConfig.from_dict({**space.fixed, **r["config"]})
        p = model.predict(config)
        facts = r["compile"]["facts"]
        out.append({"problem": path.stem, "config": r["config"], "registers": facts["registers"],
                    "spill_bytes": facts["spill_bytes"], "predicted_registers": p.get("registers_predicted"),
                    "register_demand": p.get("register_demand"), "spill_bytes_predicted": p.get("spill_bytes_predicted"),
                    "residual": p.get("register_model_residual"), "slowdown": r["timing"]["ms"] / best})
    print(f"{path.stem}: {model.registers.describe()['registers']} (residual {model.registers.residual:.0f}); "
          + summary(out), flush=True)
    return out


def summary(rows: list[dict]) -> str:
    errors = [abs(r["predicted_registers"] - r["registers"]) for r in rows]
    c = collections.Counter(("tp" if r["spill_bytes"] else "fp") if r["spill_bytes_predicted"] else
                            ("fn" if r["spill_bytes"] else "tn") for r in rows)
    return (f"{len(rows)} configs, registers exact {sum(e == 0 for e in errors)}, within 8 {sum(e <= 8 for e in errors)}, "
            f"within 16 {sum(e <= 16 for e in errors)}; spill predicted/real: tp {c['tp']} fp {c['fp']} "
            f"fn {c['fn']} tn {c['tn']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=FAMILIES)
    parser.add_argument("--arch", default="hopper")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from kernelrules.arch import load_arch

    arch = load_arch(args.arch)
    rows: list[dict] = []
    for family in args.families.split(","):
        for path in sorted((ROOT / "benchmarks" / "results" / "suite").glob(f"{family}__*.jsonl")):
            rows += check(path, arch, args.jobs)
    print("all:", summary(rows))
    for t in THRESHOLDS:
        hit = [r for r in rows if r["spill_bytes_predicted"] >= t and r["residual"] <= 32]
        near = sum(r["slowdown"] <= 1.05 for r in hit)
        fastest = min((r["slowdown"] for r in hit), default=float("nan"))
        print(f"reject at predicted spill >= {t} B: {len(hit)} configs ({sum(r['spill_bytes'] > 0 for r in hit)} spill, "
              f"{sum(r['spill_bytes'] >= 256 for r in hit)} spill >= 256 B), {near} within 5% of the best, "
              f"fastest {fastest:.2f}x")
    # REG005's own condition: the threshold after twice the fit's residual (8 bytes per register)
    hit = [r for r in rows if r["spill_bytes_predicted"] - 8 * r["residual"] >= 320 and r["residual"] <= 32]
    print(f"REG005 (predicted spill - 8 x residual >= 320 B): {len(hit)} configs "
          f"({sum(r['spill_bytes'] >= 256 for r in hit)} spill >= 256 B), "
          f"{sum(r['slowdown'] <= 1.05 for r in hit)} within 5% of the best, "
          f"fastest {min((r['slowdown'] for r in hit), default=float('nan')):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
