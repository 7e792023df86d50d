"""What a change of the resource model's probes does: the probes, the learning's seconds, the predictions.

    python benchmarks/probe_choice_check.py [--before REV] [--arch h200] SPACE [SPACE ...]

For each space, a fresh process with an empty kernelrules cache learns the resource model as the judging does
(``ConfigJudge.model_for``, two compile workers) and predicts every config of the space; ``--before REV`` does the same
with the kernelrules of commit REV. Prints, per space and commit: the first probes, the seconds the learning took (the
probes' compiles and the register probes'), and, against the suite's H200 compiles of the same problem
(``benchmarks/results/suite/<family>__<shape>.jsonl``) where there are some, the predicted registers' mean and median
error and how often a spill was predicted exactly when one happened; then how many configs the two commits predict
differently. CPU only (cross-compiles); one JSON line per space and commit, then the comparison lines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_autotune_overhead import extract  # noqa: E402

CHILD = r"""
import json, sys, time
from kernelrules.arch import load_arch
from kernelrules.compile.target import KernelTarget
from kernelrules.judge.pipeline import ConfigJudge
from kernelrules.space import load_space

space, arch = load_space(sys.argv[1]), load_arch(sys.argv[2])
judge = ConfigJudge(KernelTarget.from_space(space), jobs=2, timeout=60)
configs = list(space.configs())
started = time.perf_counter()
model = judge.model_for(configs, arch)
seconds = time.perf_counter() - started
predictions = {}
for config in configs:
    try:
        found = model.predict(config) if model is not None else {}
    except Exception as exc:  # noqa: BLE001
        found = {"error": type(exc).__name__}
    predictions[json.dumps(config.to_dict(), sort_keys=True)] = {
        k: v for k, v in found.items() if v is None or isinstance(v, (int, float, str, bool))}
judge.close()
print(json.dumps({"seconds": round(seconds, 2), "probes": [c.to_dict() for c, _ in getattr(judge, "_probed", [])][:2],
                  "predictions": predictions}))
"""


def learn(root: str | None, space: Path, arch: str, tree: Path) -> dict:
    """One fresh process (outside the repository, so ``PYTHONPATH`` picks the kernelrules measured)."""
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(dir=tree) as cache:
        env["KERNELRULES_CACHE_DIR"] = cache
        proc = subprocess.run([sys.executable, "-c", CHILD, str(space), arch], env=env, capture_output=True, text=True,
                              timeout=1800, cwd=tree)
    if proc.returncode:
        raise SystemExit(f"the child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def against_compiles(predictions: dict, truth: Path) -> dict | None:
    """Predicted registers and spills against the suite's H200 compiles of the problem (None without them)."""
    if not truth.exists():
        return None
    errors, spills_agree = [], 0
    for line in truth.read_text().splitlines()[1:]:
        row = json.loads(line)
        launch = row.get("launch") or {}
        if launch.get("n_regs") is None:
            continue
        config = row["config"]
        found = predictions.get(json.dumps(config, sort_keys=True)) or predictions.get(
            json.dumps({k: v for k, v in config.items() if k != "num_stages"}, sort_keys=True))
        if not found or found.get("registers_predicted") is None:
            continue
        errors.append(abs(found["registers_predicted"] - launch["n_regs"]))
        spills_agree += (found.get("spill_bytes_predicted", 0) > 0) == ((launch.get("n_spills") or 0) > 0)
    if not errors:
        return None
    return {"configs": len(errors), "mean_error": round(statistics.mean(errors), 2),
            "median_error": statistics.median(errors), "spills_agree": spills_agree}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spaces", nargs="+", type=Path)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--arch", default="h200")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        tree = Path(temporary)
        modes: dict[str, str | None] = {"head": None}
        if args.before:
            modes["before"] = extract(args.before, tree)
        for space in args.spaces:
            name = f"{space.resolve().parent.name}__{space.name.removesuffix('.tune.yaml')}"
            found = {}
            for mode, root in modes.items():
                run = learn(root, space.resolve(), args.arch, tree)
                found[mode] = run
                truth = against_compiles(run["predictions"], REPO / "benchmarks" / "results" / "suite" / f"{name}.jsonl")
                print(json.dumps({"space": name, "mode": mode, "seconds": run["seconds"], "probes": run["probes"],
                                  "against_h200_compiles": truth}), flush=True)
            if len(found) == 2:
                head, before = found["head"]["predictions"], found["before"]["predictions"]
                differ = sum(head.get(k) != v for k, v in before.items())
                print(f"{name}: learned in {found['before']['seconds']} s before, {found['head']['seconds']} s now; "
                      f"{differ} of {len(before)} configs predicted differently", flush=True)


if __name__ == "__main__":
    main()
