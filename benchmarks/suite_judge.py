"""kernelrules' side of the suite, computed without a GPU: config-stage verdicts and perf-model ranks.

    python benchmarks/suite_judge.py [--arch h200] [--families softmax,gemm] [-j 2]

For every suite problem, the config stage of ``kernelrules prune`` (rules plus the
resource model learned from the kernel's own IR, a few probe compiles) judges every
config for the architecture, and the perf model (``kernelrules.predict.perf_general.estimate_any``:
the matmul model of ``kernelrules.predict.perf_model`` for kernels with sizes M, N, K, the general
model of ``kernelrules.predict.perf_general`` for every other kernel with a ``problem.grid``; what
``tune`` seeds from) estimates each config's time. Writes ``benchmarks/results/suite/<family>__<shape>.judge.json`` with the
kernelrules commit it was computed at; ``benchmarks/suite_report.py`` compares it with
the GPU's truth. The compiled-stage verdicts are recorded by the sweep itself (it holds
the compile results).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from suite_sweep import RESULTS, problem_name, problems  # noqa: E402


def commit() -> str:
    """The short commit, with ``+changes`` when kernelrules' own code differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "kernelrules", "rules", "arch_profiles", "analyzers"],
                               cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def judge(path: Path, arch_name: str, jobs: int) -> dict:
    """Config-stage verdicts and perf-model estimates of one problem."""
    from kernelrules.arch import load_arch
    from kernelrules.judge.pipeline import prune_space
    from kernelrules.space import load_space

    space = load_space(path)
    arch = load_arch(arch_name)
    start = time.time()
    result = prune_space(space, [arch], compile=False, jobs=jobs)
    seconds = time.time() - start
    problem = dict(space.problem)  # the raw section: the general model reads its grid, bytes and flops
    model = _model(space, arch, jobs)
    records = []
    for record in result.records:
        v = record.verdict
        entry = {"config": v.config.to_dict(), "verdict": v.verdict,
                 "codes": sorted({d.code for d in v.diagnostics}),
                 "errors": sorted({d.code for d in v.diagnostics if d.severity == "error"}),
                 "predicted": {k: record.facts[k] for k in ("shared_bytes", "registers", "spill_bytes",
                                                            "register_demand_per_thread", "registers_predicted", "spill_bytes_predicted",
                                                            "register_demand") if k in record.facts}}
        entry["perf_model_s"] = _estimate(v.config, arch, problem, model)
        records.append(entry)
    return {"problem": problem_name(path), "arch": arch.name, "kernelrules_commit": commit(),
            "config_stage_seconds": round(seconds, 2), "notes": result.notes, "records": records}


def _model(space, arch, jobs):
    """The resource model the perf model reads (None when no config passes the plain rules)."""
    from kernelrules.judge.pipeline import ConfigJudge
    from kernelrules.compile.target import KernelTarget

    target = KernelTarget(space.kernel_path, space.kernel_name, space.signature, space.kernel_info(),
                          frozenset(space.fixed))
    pruner = ConfigJudge(target, jobs=jobs)
    try:
        return pruner.model_for(list(space.configs()), arch)
    except Exception:  # noqa: BLE001 - no model: the perf model is asked without one
        return None
    finally:
        pruner.close()


def _estimate(config, arch, problem, model) -> float | None:
    from kernelrules.predict.perf_general import estimate_any

    try:
        return float(estimate_any(config, arch, problem, model=model))
    except Exception:  # noqa: BLE001 - not a kernel the perf model can read
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--families", default="")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    for path in problems(set(filter(None, args.families.split(",")))):
        try:
            data = judge(path, args.arch, args.jobs)
        except Exception as exc:  # noqa: BLE001 - one problem's failure is reported, the rest go on
            print(f"{problem_name(path)}: FAILED {type(exc).__name__}: {exc}", flush=True)
            continue
        out = RESULTS / f"{data['problem']}.judge.json"
        out.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
        rejected = sum(r["verdict"] == "reject" for r in data["records"])
        ranked = sum(r["perf_model_s"] is not None for r in data["records"])
        print(f"{data['problem']}: {len(data['records'])} configs, {rejected} rejected at the config stage, "
              f"{ranked} ranked by the perf model ({data['config_stage_seconds']} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
