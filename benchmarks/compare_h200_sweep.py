"""Compare kernelrules' CPU-side predictions and compiled facts with an H200 sweep.

Reads ``benchmarks/results/h200_sweep_compile.jsonl`` and ``h200_sweep_launch.jsonl``
(written by ``benchmarks/h200_sweep.py`` on the GPU), runs ``kernelrules prune`` on
``examples/matmul.space.yaml`` for sm_90 on this machine (config stage: rules plus the
resource model, no compile of the configs), and prints the checks of docs/validation.md.

    python benchmarks/compare_h200_sweep.py
"""

from __future__ import annotations

import collections
import json
import statistics
import warnings
from pathlib import Path

from kernelrules.adapters.prune_api import prune

RESULTS = Path(__file__).resolve().parent / "results"
SPACE = Path(__file__).resolve().parent.parent / "examples" / "matmul.space.yaml"


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def main() -> None:
    warnings.simplefilter("ignore")
    compiled = {key(r["config"]): r for r in map(json.loads, open(RESULTS / "h200_sweep_compile.jsonl"))}
    lines = [json.loads(line) for line in open(RESULTS / "h200_sweep_launch.jsonl")]
    references = [line for line in lines if "reference" in line]
    launches = {key(r["config"]): r for r in lines if "reference" not in r}
    verdicts = {key(r.verdict.config.to_dict()): r for r in prune(SPACE, "hopper").records}
    launched = [r for r in launches.values() if r.get("launched")]
    rejected = {k for k, r in verdicts.items() if r.verdict.verdict == "reject"}

    print(f"configs measured: {len(compiled)} of {len(verdicts)} (compiled on the GPU machine's CPUs)")
    print("torch.matmul: " + ", ".join(f"{r['tflops']:.0f}" for r in references) + " TFLOP/s")
    same = [r for r in launched
            if (compiled[key(r["config"])]["facts"].get("shared_bytes"), compiled[key(r["config"])]["facts"].get("registers"),
                compiled[key(r["config"])]["facts"].get("spill_bytes")) == (r["shared"], r["n_regs"], 4 * r["n_spills"])]
    print(f"compiled facts == launched metadata (shared, registers, spill = 4 x n_spills): {len(same)}/{len(launched)}")

    oor = [k for k, r in launches.items() if (r.get("error") or "").startswith("OutOfResources")]
    print(f"launch failures for shared memory: {len(oor)}; rejected at the config stage: {len(set(oor) & rejected)}")
    timeouts = [k for k, r in compiled.items() if r["error_kind"] == "timeout"]
    print(f"compiles past 30 s: {len(timeouts)}; rejected before compiling: {len(set(timeouts) & rejected)}")
    best = max(r["tflops"] for r in launched)
    near = [key(r["config"]) for r in launched if r["tflops"] >= 0.9 * best]
    print(f"best: {best:.0f} TFLOP/s; configs within 10%: {len(near)}; rejected: {len(set(near) & rejected)}")
    wrongly = [k for k in rejected if k in launches and launches[k].get("launched")]
    codes = collections.Counter(d.code for k in wrongly for d in verdicts[k].verdict.diagnostics if d.severity == "error")
    top = max((launches[k]["tflops"] for k in wrongly), default=0)
    print(f"rejected although they launched: {len(wrongly)} {dict(codes)}; the fastest of them {top:.0f} TFLOP/s")

    exact = within = total = paths = 0
    for k, r in compiled.items():
        if not r["ok"]:
            continue
        facts, shared = verdicts[k].facts, r["facts"]["shared_bytes"]
        total += 1
        exact += facts["shared_bytes"] == shared
        within += facts["shared_bytes"] <= shared <= facts["shared_bytes_max"]
        paths += facts["mma_path"] == r["facts"]["mma_path"]
    print(f"predicted shared memory: exact {exact}/{total}, within [lower, upper] {within}/{total}; "
          f"predicted MMA path right {paths}/{total}")
    by_acc = collections.defaultdict(list)
    for r in compiled.values():
        if r["ok"]:
            c = r["config"]
            by_acc[c["BLOCK_M"] * c["BLOCK_N"] // (32 * c["num_warps"])].append(r["compile_seconds"])
    print("compile seconds by fp32 accumulators per thread (count, median, max): "
          + "; ".join(f"{a}: {len(v)}, {statistics.median(v):.2f}, {max(v):.1f}" for a, v in sorted(by_acc.items())))
    slow_jit = sum(1 for r in launched if r["jit_seconds"] > 1)
    print(f"first launches taking over 1 s (module load, or a Triton cache miss): {slow_jit}/{len(launched)}")
    recorded = [r for r in launched if "triton_cache_hit" in r]
    hits = [r for r in recorded if r["triton_cache_hit"]]
    misses = [r["jit_seconds"] for r in recorded if not r["triton_cache_hit"]]
    if recorded:
        print(f"first launches with the cache hit recorded: {len(recorded)}; Triton cache hits: {len(hits)}; "
              f"misses: {len(misses)} (median {statistics.median(misses) if misses else 0:.2f} s, "
              f"over 1 s: {sum(s > 1 for s in misses)})")


if __name__ == "__main__":
    main()
