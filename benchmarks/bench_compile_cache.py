"""Cost of compiling through kernelrules versus Triton alone, and of a cache hit.

Targets: a pool compile (cold) costs at most 1.5x Triton's own cold compile of the same
config, and a cache hit at most 5 ms.

* **Triton cold**: ``triton.compile`` of the launch-specialized ``ASTSource`` in this
  process, Triton's cache bypassed (``always_compile``), after one warm-up compile.
* **pool cold**: the same configs as :class:`CompileJob` s through a one-worker
  :class:`CompilePool` (private, emptied Triton cache), timed end to end in the
  parent: dispatch, load and specialize in the worker, compile, pickle and return.
  One warm-up job first, as a persistent worker pays its first-compile costs once.
* **cache hit**: ``ResultCache.get`` alone, and the whole lookup the pool does before
  compiling (load the kernel, specialize, key, get).

    python benchmarks/bench_compile_cache.py [--repeat N]

CPU cross-compile; numbers depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MATMUL = str(REPO / "examples" / "matmul.py")
SPEC = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
    "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1,
}
#: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): a handful from the example's autotune list.
CONFIGS = [(64, 64, 32, 4, 3), (128, 64, 32, 4, 4), (128, 128, 32, 4, 4), (128, 128, 64, 8, 3), (64, 256, 32, 4, 4),
           (128, 256, 64, 8, 4)]
ARCHS = (89, 90)


def jobs() -> list:
    """One CompileJob per (arch, config)."""
    from kernelrules.compile.compilejob import CompileJob

    return [
        CompileJob(MATMUL, "matmul_kernel", SPEC, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8},
                   {"num_warps": w, "num_stages": s}, ("cuda", arch, 32))
        for arch in ARCHS for bm, bn, bk, w, s in CONFIGS
    ]


def triton_cold(job_list: list, repeat: int) -> dict[int, float]:
    """Best-of-``repeat`` seconds of Triton's own cold compile per job (by index)."""
    import triton
    from triton import knobs

    from kernelrules.compile.compilejob import prepare

    sources = [(prepare(job)[1].ast_source(prepare(job)[0].fn), job) for job in job_list]
    times: dict[int, float] = {}
    with knobs.compilation.scope(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        knobs.compilation.always_compile = True
        src, job = sources[0]
        triton.compile(src, target=job.gpu_target(), options=dict(job.options))  # warm-up
        for _ in range(repeat):
            for i, (src, job) in enumerate(sources):
                start = time.perf_counter()
                triton.compile(src, target=job.gpu_target(), options=dict(job.options))
                times[i] = min(times.get(i, float("inf")), time.perf_counter() - start)
    return times


def pool_cold(job_list: list, repeat: int) -> tuple[dict[int, float], dict[int, float], float]:
    """Best-of-``repeat`` end-to-end and in-worker seconds per job, and the worker start-up time."""
    from kernelrules.compile.pool import CompilePool

    wall: dict[int, float] = {}
    inside: dict[int, float] = {}
    with CompilePool(max_workers=1, timeout=300) as pool:
        start = time.perf_counter()
        list(pool.run(job_list[:1]))  # start the worker and warm it up
        startup = time.perf_counter() - start
        for _ in range(repeat):
            for i, job in enumerate(job_list):
                start = time.perf_counter()
                [(_, result)] = list(pool.run([job]))
                elapsed = time.perf_counter() - start
                assert result.ok, result.message
                wall[i] = min(wall.get(i, float("inf")), elapsed)
                inside[i] = min(inside.get(i, float("inf")), result.compile_seconds)
    return wall, inside, startup


def cache_hits(job_list: list, reps: int = 200) -> tuple[float, float, float, float]:
    """Median and p95 milliseconds of ``ResultCache.get`` and of the whole pre-compile lookup."""
    from kernelrules.compile.cache import ResultCache
    from kernelrules.compile.compilejob import compile_job, prepare

    with tempfile.TemporaryDirectory() as directory:
        cache = ResultCache(directory)
        job = job_list[-1]
        handle, spec = prepare(job)
        key = cache.key(job, handle.source_hash, spec)
        cache.put(key, compile_job(job))
        gets, lookups = [], []
        for _ in range(reps):
            start = time.perf_counter()
            assert cache.get(key) is not None
            gets.append(time.perf_counter() - start)
            start = time.perf_counter()
            handle, spec = prepare(job)
            assert cache.get(cache.key(job, handle.source_hash, spec)) is not None
            lookups.append(time.perf_counter() - start)

    def stats(values: list[float]) -> tuple[float, float]:
        ordered = sorted(values)
        return 1e3 * statistics.median(ordered), 1e3 * ordered[int(0.95 * (len(ordered) - 1))]

    return (*stats(gets), *stats(lookups))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="best of N per config (default 2)")
    args = parser.parse_args()
    import triton

    job_list = jobs()
    print(f"{datetime.date.today()}  Triton {triton.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs; CPU cross-compile, best of {args.repeat}")
    base = triton_cold(job_list, args.repeat)
    wall, inside, startup = pool_cold(job_list, args.repeat)
    print(f"\n{'config':<44} {'triton s':>9} {'pool s':>8} {'worker s':>9} {'ratio':>6}")
    for i, job in enumerate(job_list):
        label = job.describe().replace("matmul_kernel", "").replace(", GROUP_SIZE_M=8", "")
        label = label.replace("BLOCK_", "").replace("num_", "")
        print(f"{label:<44} {base[i]:9.3f} {wall[i]:8.3f} {inside[i]:9.3f} {wall[i] / base[i]:6.2f}")
    for arch in ARCHS:
        idx = [i for i, j in enumerate(job_list) if j.target[1] == arch]
        t, p = sum(base[i] for i in idx), sum(wall[i] for i in idx)
        print(f"sm_{arch}: triton {t:.2f} s, pool {p:.2f} s, ratio {p / t:.2f} (target <= 1.5)")
    total_ratio = sum(wall.values()) / sum(base.values())
    print(f"all: ratio {total_ratio:.2f}; worker start-up + first (warm-up) job {startup:.2f} s")
    get_med, get_p95, look_med, look_p95 = cache_hits(job_list)
    print(f"cache hit: get median {get_med:.3f} ms (p95 {get_p95:.3f}); "
          f"load+specialize+key+get median {look_med:.3f} ms (p95 {look_p95:.3f}) (target <= 5 ms)")


if __name__ == "__main__":
    main()
