"""How long kernelrules' compile pool takes to start workers and to compile a round of jobs.

Prints, for ``--workers N``: seconds until every worker is ready (imported Triton), then
the wall time of N different compile jobs (the example matmul, one config each) on those
ready workers, and of the same N jobs on a fresh pool that starts its workers on demand
(the cold path of a compile-first early prune). Each compile goes to a fresh Triton cache.

    python benchmarks/pool_startup.py [--workers 16] [--arch 90]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from kernelrules.compile.compilejob import CompileJob
from kernelrules.compile.pool import CompilePool

MATMUL = str(Path(__file__).resolve().parent.parent / "examples" / "matmul.py")
SPEC = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096, "stride_am": 4096,
        "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}


def jobs(count: int, arch: int, salt: int) -> list[CompileJob]:
    """``count`` distinct matmul configs (block sizes, warps, stages vary)."""
    shapes = [(bm, bn, bk, w, s) for bm in (64, 128) for bn in (64, 128, 256) for bk in (32, 64)
              for w in (4, 8) for s in (3, 4)]
    return [CompileJob(MATMUL, "matmul_kernel", SPEC, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8 + salt},
                       {"num_warps": w, "num_stages": s}, ("cuda", arch, 32), analyze=True)
            for bm, bn, bk, w, s in shapes[:count]]


def run_round(pool: CompilePool, batch: list[CompileJob]) -> tuple[float, list[float]]:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        results = [r for _, r in pool.run(batch, cache=None, triton_cache_dir=cache)]
    return time.perf_counter() - start, [round(r.compile_seconds or 0.0, 2) for r in results]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--arch", type=int, default=90)
    args = parser.parse_args()
    n = args.workers
    record = {"workers": n}
    with CompilePool(max_workers=n, cache=None) as pool:
        start = time.perf_counter()
        pool.start(n)
        run_round(pool, jobs(n, args.arch, 100)[:n])  # the first round waits for the workers to be ready
        record["start_and_first_round_s"] = round(time.perf_counter() - start, 2)
        seconds, each = run_round(pool, jobs(n, args.arch, 0))
        record["warm_round_s"], record["warm_compile_s"] = round(seconds, 2), each
    with CompilePool(max_workers=n, cache=None) as pool:
        seconds, each = run_round(pool, jobs(n, args.arch, 200))
        record["cold_round_s"], record["cold_compile_s"] = round(seconds, 2), each
    with CompilePool(max_workers=1, cache=None) as pool:
        run_round(pool, jobs(1, args.arch, 300))
        seconds, each = run_round(pool, jobs(1, args.arch, 400))
        record["one_warm_compile_s"] = round(seconds, 2)
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
