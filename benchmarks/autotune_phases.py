"""Where ``kernelrules.autotune``'s fixed cost goes on a short list: its phases timed one by one.

Runs what a ``kernelrules.autotune`` tuner does for a new tuning key *before* Triton times
anything (early prune with the resource model's probes, the perf model with ``top_k``,
the precompile into Triton's cache), on the example fp16 matmul with the 16-config list
of ``benchmarks/results/autotune16/configs.json``, and prints the wall time of each
phase. On a machine with no GPU it cross-compiles for ``--arch`` (tensors on the CPU:
only their dtypes and sizes matter to these phases); on the GPU machine it runs the same
way and shows the share of the tuning time that is kernelrules' own. Each run uses fresh
Triton and kernelrules caches unless ``--warm DIR`` names a kernelrules cache to reuse
(the second process on a machine).

    python benchmarks/autotune_phases.py [--arch sm_90] [--top-k 3] [--profile FILE] [--warm DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "benchmarks" / "results" / "autotune16" / "configs.json"
SIZE = 4096


def timed(label: str, record: dict, fn, *args, **kwargs):
    """Call ``fn`` and add its wall time to ``record[label]``."""
    start = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    finally:
        record[label] = round(record.get(label, 0.0) + time.perf_counter() - start, 3)


def run(arch: str, top_k: int | None) -> dict:
    record: dict = {"arch": arch, "top_k": top_k}
    start = time.perf_counter()
    import torch
    import triton

    import kernelrules
    from kernelrules.adapters import precompile as precompile_module
    from kernelrules.adapters import triton_prune

    record["imports"] = round(time.perf_counter() - start, 3)
    sys.path.insert(0, str(REPO / "examples"))
    from matmul import matmul_kernel

    configs = json.loads(CONFIGS.read_text())
    listed = [triton.Config({k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
                            num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in configs]
    extra = {"perf_model": True, "top_k": top_k} if top_k else {}
    tuner = kernelrules.autotune(listed, ["M", "N", "K"], arch=arch, **extra)(matmul_kernel.fn)

    prune_call = triton_prune.EarlyPrune.__call__
    triton_prune.EarlyPrune.__call__ = lambda self, *a, **k: timed("early_prune", record, prune_call, self, *a, **k)
    original_precompile = precompile_module.precompile
    precompile_module.precompile = lambda *a, **k: timed("precompile", record, original_precompile, *a, **k)
    if tuner.perf_model is not None:
        model = tuner.perf_model
        tuner.perf_model = lambda **k: timed("perf_model", record, model, **k)

    from kernelrules.judge import pipeline

    for stage in ("predict_stage", "config_stage", "compile_stage", "compiled_stage", "repairs_stage"):
        original_stage = getattr(pipeline, stage)
        setattr(pipeline, stage, lambda judge, judging, _f=original_stage, _n=stage: timed(_n, record, _f, judge, judging))

    a = torch.empty((SIZE, SIZE), dtype=torch.float16)
    b = torch.empty((SIZE, SIZE), dtype=torch.float16)
    c = torch.empty((SIZE, SIZE), dtype=torch.float16)
    args = (a, b, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    tuner.nargs = dict(zip(tuner.arg_names, args))
    os.environ.setdefault("KERNELRULES_ARCH", arch)
    begin = time.perf_counter()
    kept = tuner.prune_configs({})
    record["prune_configs_total"] = round(time.perf_counter() - begin, 3)
    record["configs_listed"], record["configs_to_time"] = len(listed), len(kept)
    tuner.kernelrules_context.close()
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--profile", help="write a cProfile of the main process here")
    parser.add_argument("--warm", help="reuse this kernelrules cache directory (default: a fresh one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as triton_cache, tempfile.TemporaryDirectory() as kr_cache:
        os.environ["TRITON_CACHE_DIR"] = triton_cache
        os.environ["KERNELRULES_CACHE_DIR"] = args.warm or kr_cache
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            record = profiler.runcall(run, args.arch, args.top_k)
            profiler.dump_stats(args.profile)
        else:
            record = run(args.arch, args.top_k)
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
