"""Triton's autotuner on the example fp16 matmul, with and without kernelrules, on a real GPU.

Run on the GPU machine from the repository root (kernelrules installed):

    python benchmarks/h200_autotune.py --out DIR [--configs 150] [--seed 0] [--top-k 5]

The config list is a seeded random sample of ``examples/matmul.space.yaml`` (M = N = K =
4096, fp16) that leaves out the configs whose compile ran past 30 s in the H200 sweep
(``benchmarks/results/h200_sweep_compile.jsonl``): Triton's autotuner compiles serially
with no time limit, so each of those would cost minutes in the exhaustive run, and
kernelrules rejects all of them before compiling. Leaving them out keeps the run inside
the device time and makes the comparison conservative (it favours exhaustive tuning).

Each mode runs in its own process with an empty Triton cache and an empty kernelrules
cache, so every compile is paid for:

- ``exhaustive``: ``triton.autotune`` over the whole list;
- ``pruned``: ``kernelrules.autotune`` (rules and the resource model for the GPU's arch;
  the configs left are precompiled in parallel into Triton's cache, the default);
- ``top_k``: ``kernelrules.autotune(perf_model=True, top_k=K)``;
- ``pruned_serial``: ``kernelrules.autotune(precompile=False)``, Triton compiling serially;
- ``reference``: torch.matmul (cuBLAS), timed with ``triton.testing.do_bench``.

For each: the tuning wall time (first call until synchronised: pruning, compiles and
benchmarks), how many configs Triton timed and how many it had to compile itself (cache
misses in the tuning process), the config it chose, and that
config's TFLOP/s measured afterwards with ``do_bench``; the result is checked against
a float32 reference. One JSON line per mode goes to ``DIR/autotune.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPACE = REPO / "examples" / "matmul.space.yaml"
SWEEP = REPO / "benchmarks" / "results" / "h200_sweep_compile.jsonl"
LAUNCHES = REPO / "benchmarks" / "results" / "h200_sweep_launch.jsonl"
SIZE = 4096

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h200_sweep import _count_triton_cache_misses  # noqa: E402


def config_list(count: int, seed: int) -> list[dict]:
    """A seeded sample of the space without the configs that compiled for over 30 s in the sweep."""
    from kernelrules.space import load_space

    slow = {json.dumps(r["config"], sort_keys=True) for r in map(json.loads, open(SWEEP))
            if r["error_kind"] == "timeout"}
    configs = [c.to_dict() for c in load_space(SPACE).configs()]
    configs = [c for c in configs if json.dumps(c, sort_keys=True) not in slow]
    return random.Random(seed).sample(configs, count)


def sweep_best(configs: list[dict]) -> dict:
    """The fastest config of the list in the H200 sweep (measured with do_bench, 5 ms)."""
    wanted = {json.dumps(c, sort_keys=True) for c in configs}
    launched = [r for r in map(json.loads, open(LAUNCHES))
                if "config" in r and r.get("launched") and json.dumps(r["config"], sort_keys=True) in wanted]
    best = max(launched, key=lambda r: r["tflops"])
    return {"config": best["config"], "tflops": best["tflops"]}


def to_triton(config: dict):
    import triton

    meta = {k: v for k, v in config.items() if k not in ("num_warps", "num_stages")}
    return triton.Config(meta, num_warps=config["num_warps"], num_stages=config["num_stages"])


def run_mode(mode: str, configs: list[dict], top_k: int) -> dict:
    """Tune in this process and return the mode's record."""
    import torch
    import triton

    sys.path.insert(0, str(REPO / "examples"))
    from matmul import matmul_kernel

    torch.manual_seed(0)
    a = torch.randn((SIZE, SIZE), device="cuda", dtype=torch.float16)
    b = torch.randn((SIZE, SIZE), device="cuda", dtype=torch.float16)
    c = torch.empty((SIZE, SIZE), device="cuda", dtype=torch.float16)
    flops = 2 * SIZE ** 3
    if mode == "reference":
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b))
        return {"mode": mode, "ms": ms, "tflops": flops / ms / 1e9}

    fn = matmul_kernel.fn  # the plain JITFunction under the example's own autotune list
    listed = [to_triton(cfg) for cfg in configs]
    if mode == "exhaustive":
        tuner = triton.autotune(configs=listed, key=["M", "N", "K"])(fn)
    else:
        import kernelrules

        extra = {"perf_model": True, "top_k": top_k} if mode == "top_k" else {}
        if mode == "pruned_serial":
            extra = {"precompile": False}
        tuner = kernelrules.autotune(listed, ["M", "N", "K"], **extra)(fn)

    def grid(meta):
        return (triton.cdiv(SIZE, meta["BLOCK_M"]) * triton.cdiv(SIZE, meta["BLOCK_N"]),)

    def launch():
        tuner[grid](a, b, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1))

    misses = _count_triton_cache_misses()  # compiles in this process = Triton cache misses
    start = time.perf_counter()
    launch()
    torch.cuda.synchronize()
    tuning_seconds = time.perf_counter() - start
    compiled_here = misses[0]
    timings = {str(cfg): t for cfg, t in tuner.configs_timings.items()}
    finite = [t for t in timings.values() if all(x != float("inf") for x in t)]
    best = tuner.best_config
    c.fill_(float("nan"))
    launch()
    reference = a.float() @ b.float()
    error = ((c.float() - reference).norm() / reference.norm()).item()
    ms = triton.testing.do_bench(launch)
    chosen = {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}
    return {"mode": mode, "configs_listed": len(configs), "configs_compiled_and_timed": len(timings),
            "configs_timed_ok": len(finite), "compiled_in_tuning_process": compiled_here,
            "tuning_seconds": tuning_seconds, "best_config": chosen,
            "ms": ms, "tflops": flops / ms / 1e9, "rel_error": error, "top_k": top_k if mode == "top_k" else None}


def orchestrate(args) -> None:
    """Run every mode in a fresh process with empty caches and collect the records."""
    configs = config_list(args.configs, args.seed)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    listing = out_dir / "configs.json"
    listing.write_text(json.dumps(configs))
    best = sweep_best(configs)
    print(f"{len(configs)} configs (seed {args.seed}); sweep best among them: {best['tflops']:.0f} TFLOP/s "
          f"{best['config']}", flush=True)
    with open(out_dir / "autotune.jsonl", "w") as out:
        out.write(json.dumps({"list": len(configs), "seed": args.seed, "sweep_best": best}) + "\n")
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory() as triton_cache, tempfile.TemporaryDirectory() as kr_cache:
                env = dict(os.environ, TRITON_CACHE_DIR=triton_cache, KERNELRULES_CACHE_DIR=kr_cache,
                           PYTHONUNBUFFERED="1")
                command = [sys.executable, __file__, "--mode", mode, "--list", str(listing), "--top-k",
                           str(args.top_k), "--out", str(out_dir)]
                start = time.perf_counter()
                try:
                    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.mode_timeout)
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                    record = json.loads(lines[-1]) if lines else {"mode": mode, "error": proc.stderr[-2000:]}
                except subprocess.TimeoutExpired:
                    record = {"mode": mode, "error": f"did not finish within {args.mode_timeout} s"}
                record["process_seconds"] = time.perf_counter() - start
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(json.dumps(record), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--configs", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--modes", default="reference,top_k,pruned,exhaustive")
    parser.add_argument("--mode-timeout", type=float, default=300.0)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--list", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        import warnings

        warnings.simplefilter("ignore")
        print(json.dumps(run_mode(args.mode, json.loads(Path(args.list).read_text()), args.top_k)), flush=True)
    else:
        orchestrate(args)


if __name__ == "__main__":
    main()
